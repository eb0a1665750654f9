//go:build !purego

package vec

// The assembly in softmax_amd64.s takes n > 0, a multiple of 8.

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func scaleF64AVX2(x *float32, n int, c float64)

//go:noescape
func softmaxGradAVX2(x, y *float32, n int, c, dot float64)

func maxVec(x []float32) float32 {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return maxRef(x)
	}
	m := maxAVX2(&x[0], n)
	for _, v := range x[n:] {
		if v > m || v != v {
			m = v
		}
	}
	return m
}

func scaleF64(x []float32, c float64) {
	n := asmPrefix(len(x), func(n int) { scaleF64AVX2(&x[0], n, c) })
	scaleF64Ref(x[n:], c)
}

func softmaxGrad(x, y []float32, c, dot float64) {
	n := asmPrefix(len(x), func(n int) { softmaxGradAVX2(&x[0], &y[0], n, c, dot) })
	softmaxGradRef(x[n:], y[n:], c, dot)
}
