//go:build !purego

package vec

import "golang.org/x/sys/cpu"

//go:noescape
func expShifted64AVX512(dst *float64, x *float32, n int, m float64) int

// expShifted64Fast does what it can of ExpShifted64 in assembly: the
// whole 8s from the start up to the first that needs math.Exp's other
// paths. It returns how many it did.
func expShifted64Fast(dst []float64, x []float32, m float64) int {
	n := len(x) &^ 7
	if !exp64AVX512 || n == 0 {
		return 0
	}
	_ = dst[n-1]
	return expShifted64AVX512(&dst[0], &x[0], n, m)
}

var exp64AVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasFMA
