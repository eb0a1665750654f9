// Package wire holds the messages that cross processes between a pipetrain
// coordinator and its workers, as protocol buffers, and their conversions
// from and to the in-process types. Messages inside one process never pass
// through it: they stay plain Go values with no serialization cost.
//
// A Tensor is a shape, an element type and the elements as little-endian
// IEEE 754 bytes, row-major, so NaN payloads and negative zeros cross
// unchanged. An Error is a failure as data (a code, the layer, its type, the
// step, the pass and the text), never a Go error value, so that a non-finite
// value on a worker is still an *nn.NonFiniteError naming its layer on the
// coordinator. Reading a message checks it whole: a corrupt or hostile one
// gives an error, never a panic.
//
// A Frame is the header of a message that holds tensors on the data plane
// (Forward, Backward, the gradients' turn, a replica's weights, a tied
// gradient): its fields, then each tensor's type, shape and length, in a
// fixed little-endian layout; the tensors' raw bytes follow it on the
// stream, written from the sender's memory and read into a Slot the
// receiver keeps, with no protobuf in between.
//
// wire.pb.go is generated from wire.proto and committed; regenerate it with
// go generate, which needs protoc (Debian's protobuf-compiler 3.21) and
// protoc-gen-go v1.28.1 (Debian's protoc-gen-go) on the PATH.
package wire

//go:generate protoc --go_out=. --go_opt=paths=source_relative wire.proto
