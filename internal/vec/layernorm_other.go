//go:build purego || !amd64

package vec

func layerNormOut(out, x []float32, w, b []float64, m, rs float64) {
	layerNormOutRef(out, x, w, b, m, rs)
}

func layerNormRowGrad(xh, dh, gw, gb []float64, x, g []float32, w []float64, m, rs float64) {
	layerNormRowGradRef(xh, dh, gw, gb, x, g, w, m, rs)
}

func layerNormInputGrad(gx []float32, xh, dh []float64, k, ff, sd, sx float64) {
	layerNormInputGradRef(gx, xh, dh, k, ff, sd, sx)
}

const hasLayerNormStats = false

// layerNormSums and layerNormSqDevs leave all the elements to the Go loops.
func layerNormSums(x []float32, f int, t []float64, s *[LayerNormRows]float64) int { return 0 }
func layerNormSqDevs(t []float64, n int, m, q *[LayerNormRows]float64)             {}

// useAVX512LN is there for the tests, which set it; nothing reads it here.
var useAVX512LN = false

// layerNormGradSums leaves all the elements to the Go loop.
func layerNormGradSums(xh, dh []float64, stride, f int, sd, sx *[LayerNormGradRows]float64) int {
	*sd, *sx = [LayerNormGradRows]float64{}, [LayerNormGradRows]float64{}
	return 0
}

// layerNormRowGrads leaves all the elements to layerNormRowGrad.
func layerNormRowGrads(t, gwb []float64, x, g []float32, w []float64, f int, m, rs *[LayerNormGradRows]float64) int {
	return 0
}

// layerNormOuts and layerNormInputGrads leave all the elements to the
// kernels of one row.
func layerNormOuts(out, x []float32, w, b []float64, f int, m, rs []float64) int { return 0 }
func layerNormInputGrads(gx []float32, t []float64, f int, k, sd, sx []float64) int {
	return 0
}

func layerNormAddRounded(dst []float32, src []float64) { layerNormAddRoundedRef(dst, src) }
