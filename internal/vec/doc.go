// Package vec holds the float32 element-wise kernels of the trainer's hot
// path (ReLU, its backward pass, finiteness checks, accumulation and SGD
// updates, max pooling, layer norm's rows, and the transcendental Exp, GELU
// and GELUBackward), so they run as AVX2 or AVX-512 assembly where the CPU
// has it.
//
// The arithmetic kernels (vec_amd64.s, picked at start-up when the CPU has
// AVX2) give the same bits as the Go references in ref.go: no FMA, one
// rounding per operation, as in Go's float32 arithmetic. The transcendental
// ones (math_amd64.s) use FMA and polynomial or rational approximations:
// AVX2 and AVX-512 give the same bits, within 1 (Exp), 3 (GELU) and 4
// (GELUBackward) float32 steps of the exact values; their Go forms (math.go)
// compute in float64 and round once, so they may differ in the last bit.
// The layer-norm kernels (layernorm_amd64.s, AVX2, or AVX-512 where the
// CPU has it) do float64 arithmetic on float32 rows with the same bits as
// their Go forms, the statistics' sums of 8 or 16 rows side by side in a
// register's lanes, each row in element order.
// Builds with the purego tag, and other architectures, run the Go forms
// (vec_other.go, math_other.go, layernorm_other.go).
//
// dst may be the very same slice as an input; partially overlapping slices
// are not supported.
package vec
