//go:build !purego

package vec

import "golang.org/x/sys/cpu"

// The assembly in layernorm_amd64.s takes n > 0, a multiple of 8 (of 4 in
// the AVX-512 statistics).

//go:noescape
func layerNormOutAVX2(out, x *float32, w, b *float64, n int, m, rs float64)

//go:noescape
func layerNormRowGradAVX2(xh, dh, gw, gb *float64, x, dy *float32, w *float64, n int, m, rs float64)

//go:noescape
func layerNormInputGradAVX2(gx *float32, xh, dh *float64, n int, k, ff, sd, sx float64)

//go:noescape
func layerNormRowGradAVX512(xh, dh, gw, gb *float64, x, dy *float32, w *float64, n int, m, rs float64)

// useAVX512LN: the layer-norm kernels on AVX-512, a row a lane in the
// statistics and twice AVX2's width in the rest.
var useAVX512LN = cpu.X86.HasAVX512F

func layerNormOut(out, x []float32, w, b []float64, m, rs float64) {
	n := asmPrefix(len(out), func(n int) {
		if useAVX512LN {
			layerNormOutsAVX512(&out[0], &x[0], &w[0], &b[0], n, n, 1, &m, &rs) // one row
		} else {
			layerNormOutAVX2(&out[0], &x[0], &w[0], &b[0], n, m, rs)
		}
	})
	layerNormOutRef(out[n:], x[n:], w[n:], b[n:], m, rs)
}

func layerNormRowGrad(xh, dh, gw, gb []float64, x, g []float32, w []float64, m, rs float64) {
	n := asmPrefix(len(x), func(n int) {
		if useAVX512LN {
			layerNormRowGradAVX512(&xh[0], &dh[0], &gw[0], &gb[0], &x[0], &g[0], &w[0], n, m, rs)
		} else {
			layerNormRowGradAVX2(&xh[0], &dh[0], &gw[0], &gb[0], &x[0], &g[0], &w[0], n, m, rs)
		}
	})
	layerNormRowGradRef(xh[n:], dh[n:], gw[n:], gb[n:], x[n:], g[n:], w[n:], m, rs)
}

func layerNormInputGrad(gx []float32, xh, dh []float64, k, ff, sd, sx float64) {
	// A row alone is rare enough (the rest of a backward's group) to
	// stay on AVX2.
	n := asmPrefix(len(gx), func(n int) { layerNormInputGradAVX2(&gx[0], &xh[0], &dh[0], n, k, ff, sd, sx) })
	layerNormInputGradRef(gx[n:], xh[n:], dh[n:], k, ff, sd, sx)
}

//go:noescape
func layerNormSumsAVX512(x *float32, f, n int, t *float64, s *[LayerNormRows]float64)

//go:noescape
func layerNormSqDevsAVX512(t *float64, n int, m, q *[LayerNormRows]float64)

var hasLayerNormStats = useAVX512LN

// layerNormSums sums the first n = f&^3 elements of each row into s, in
// order, and keeps them widened in t; it returns n, or 0 without AVX-512.
func layerNormSums(x []float32, f int, t []float64, s *[LayerNormRows]float64) int {
	n := f &^ 3
	if !useAVX512LN || n == 0 {
		return 0
	}
	layerNormSumsAVX512(&x[0], f, n, &t[0], s)
	return n
}

// layerNormSqDevs adds (x − m[k])² of the first n elements of each row,
// widened in t by layerNormSums, into q[k], in order.
func layerNormSqDevs(t []float64, n int, m, q *[LayerNormRows]float64) {
	if n > 0 {
		layerNormSqDevsAVX512(&t[0], n, m, q)
	}
}

//go:noescape
func layerNormGradSumsAVX512(xh, dh *float64, stride, n int, sd, sx *[LayerNormGradRows]float64)

// gradSumsLane is the row whose sums layerNormGradSumsAVX512 leaves in each
// lane, as its transposition sorts them.
var gradSumsLane = [LayerNormGradRows]int{0, 1, 4, 5, 2, 3, 6, 7}

// layerNormGradSums sets sd and sx to the sums of the first n = f&^3
// elements of each row, in order, and returns n: 0, with sums of zero,
// without AVX-512.
func layerNormGradSums(xh, dh []float64, stride, f int, sd, sx *[LayerNormGradRows]float64) int {
	n := f &^ 3
	if !useAVX512LN || n == 0 {
		*sd, *sx = [LayerNormGradRows]float64{}, [LayerNormGradRows]float64{}
		return 0
	}
	var d, x [LayerNormGradRows]float64
	layerNormGradSumsAVX512(&xh[0], &dh[0], stride, n, &d, &x)
	for l, k := range gradSumsLane {
		sd[k], sx[k] = d[l], x[l]
	}
	return n
}

//go:noescape
func layerNormRowGradsAVX512(t, gwb *float64, x, dy *float32, w *float64, f, n int, m, rs *[LayerNormGradRows]float64)

// layerNormRowGrads takes the first n = f&^7 elements of each row and
// returns n: 0 without AVX-512.
func layerNormRowGrads(t, gwb []float64, x, g []float32, w []float64, f int, m, rs *[LayerNormGradRows]float64) int {
	n := f &^ 7
	if !useAVX512LN || n == 0 {
		return 0
	}
	layerNormRowGradsAVX512(&t[0], &gwb[0], &x[0], &g[0], &w[0], f, n, m, rs)
	return n
}

//go:noescape
func layerNormOutsAVX512(out, x *float32, w, b *float64, f, n, rows int, m, rs *float64)

//go:noescape
func layerNormInputGradsAVX512(gx *float32, t *float64, f, n, rows int, k, sd, sx *float64, ff float64)

// layerNormOuts and layerNormInputGrads take the first n = f&^7 elements
// of every row, one call for all of them, and return n: 0 without AVX-512.
func layerNormOuts(out, x []float32, w, b []float64, f int, m, rs []float64) int {
	n := f &^ 7
	if !useAVX512LN || n == 0 || len(m) == 0 {
		return 0
	}
	layerNormOutsAVX512(&out[0], &x[0], &w[0], &b[0], f, n, len(m), &m[0], &rs[0])
	return n
}

func layerNormInputGrads(gx []float32, t []float64, f int, k, sd, sx []float64) int {
	n := f &^ 7
	if !useAVX512LN || n == 0 || len(k) == 0 {
		return 0
	}
	layerNormInputGradsAVX512(&gx[0], &t[0], f, n, len(k), &k[0], &sd[0], &sx[0], float64(f))
	return n
}

//go:noescape
func layerNormAddRoundedAVX2(dst *float32, src *float64, n int)

func layerNormAddRounded(dst []float32, src []float64) {
	n := asmPrefix(len(dst), func(n int) { layerNormAddRoundedAVX2(&dst[0], &src[0], n) })
	layerNormAddRoundedRef(dst[n:], src[n:])
}
