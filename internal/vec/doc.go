// Package vec holds the float32 element-wise kernels of the trainer's hot
// path (ReLU, its backward pass, finiteness checks, accumulation and SGD
// updates), so they run as AVX2 assembly where the CPU has it.
//
// The assembly (vec_amd64.s, picked at start-up when the CPU has AVX2) gives
// the same bits as the Go references in ref.go: no FMA, one rounding per
// operation, as in Go's float32 arithmetic. Builds with the purego tag, and
// other architectures, run the references (vec_other.go).
//
// dst may be the very same slice as an input; partially overlapping slices
// are not supported.
package vec
