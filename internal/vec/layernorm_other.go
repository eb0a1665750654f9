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
