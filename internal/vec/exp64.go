package vec

import (
	"fmt"
	"math"
)

// ExpShifted64 sets dst[i] = math.Exp(float64(x[i]) - m), bit for bit: a
// softmax's exponentials in float64 over float32 inputs. On amd64 with
// AVX-512 the arguments in [-708, 700] run 8 at a time in assembly through
// the very steps of the Go library's Exp (its FMA path, which it takes on
// every CPU that has AVX-512); the rest, and other CPUs, call math.Exp.
func ExpShifted64(dst []float64, x []float32, m float64) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("vec: ExpShifted64: len(dst)=%d, len(x)=%d", len(dst), len(x)))
	}
	for i := 0; i < len(x); {
		i += expShifted64Fast(dst[i:], x[i:], m)
		// the 8 the assembly left, or the tail
		for end := min(len(x), i+8); i < end; i++ {
			dst[i] = math.Exp(float64(x[i]) - m)
		}
	}
}
