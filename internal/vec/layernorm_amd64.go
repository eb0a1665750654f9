//go:build !purego

package vec

// The assembly in layernorm_amd64.s takes n > 0, a multiple of 8.

//go:noescape
func layerNormOutAVX2(out, x *float32, w, b *float64, n int, m, rs float64)

//go:noescape
func layerNormRowGradAVX2(xh, dh, gw, gb *float64, x, dy *float32, w *float64, n int, m, rs float64)

//go:noescape
func layerNormInputGradAVX2(gx *float32, xh, dh *float64, n int, k, ff, sd, sx float64)

func layerNormOut(out, x []float32, w, b []float64, m, rs float64) {
	n := asmPrefix(len(out), func(n int) { layerNormOutAVX2(&out[0], &x[0], &w[0], &b[0], n, m, rs) })
	layerNormOutRef(out[n:], x[n:], w[n:], b[n:], m, rs)
}

func layerNormRowGrad(xh, dh, gw, gb []float64, x, g []float32, w []float64, m, rs float64) {
	n := asmPrefix(len(x), func(n int) { layerNormRowGradAVX2(&xh[0], &dh[0], &gw[0], &gb[0], &x[0], &g[0], &w[0], n, m, rs) })
	layerNormRowGradRef(xh[n:], dh[n:], gw[n:], gb[n:], x[n:], g[n:], w[n:], m, rs)
}

func layerNormInputGrad(gx []float32, xh, dh []float64, k, ff, sd, sx float64) {
	n := asmPrefix(len(gx), func(n int) { layerNormInputGradAVX2(&gx[0], &xh[0], &dh[0], n, k, ff, sd, sx) })
	layerNormInputGradRef(gx[n:], xh[n:], dh[n:], k, ff, sd, sx)
}
