// Package onnx holds the Go types of the ONNX model format, generated from
// onnx.proto, for model's exporter to build and marshal a ModelProto.
//
// onnx.proto is onnx/onnx.proto of ONNX 1.12.0 (the ONNX project,
// https://github.com/onnx/onnx, Apache-2.0, as Debian's python3-onnx ships
// it), with one line added: its go_package option. onnx.pb.go is generated
// from it and committed; regenerate it with go generate, which needs protoc
// (Debian's protobuf-compiler 3.21) and protoc-gen-go v1.28.1 (Debian's
// protoc-gen-go) on the PATH.
package onnx

//go:generate protoc --go_out=. --go_opt=paths=source_relative onnx.proto
