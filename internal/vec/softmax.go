package vec

import (
	"fmt"
	"math"
)

// Max returns the largest element of x (not empty). Where x holds a NaN it
// may return a NaN or not; where its largest elements are zeros of both
// signs, either zero: a softmax shifted by either gives the same bits.
func Max(x []float32) float32 {
	if len(x) == 0 {
		panic("vec: Max of nothing")
	}
	return maxVec(x)
}

// ScaleF64 sets x[i] = float32(float64(x[i])·c), rounded once.
func ScaleF64(x []float32, c float64) {
	scaleF64(x, c)
}

// SoftmaxGrad sets x[i] = float32(c·float64(y[i])·(float64(x[i]) − dot)),
// in that order in float64 and rounded once: a softmax's input gradient,
// x the output's gradient and y the softmax, dot their dot product and c
// a scale.
func SoftmaxGrad(x, y []float32, c, dot float64) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("vec: SoftmaxGrad: len(x)=%d, len(y)=%d", len(x), len(y)))
	}
	softmaxGrad(x, y, c, dot)
}

func maxRef(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		if v > m || math.IsNaN(float64(v)) {
			m = v
		}
	}
	return m
}

func scaleF64Ref(x []float32, c float64) {
	for i, v := range x {
		x[i] = float32(float64(v) * c)
	}
}

func softmaxGradRef(x, y []float32, c, dot float64) {
	for i, v := range x {
		x[i] = float32(c * float64(y[i]) * (float64(v) - dot))
	}
}
