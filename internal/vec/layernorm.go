package vec

import "fmt"

// The layer-norm kernels do float64 arithmetic on float32 rows, each
// element through the same operations in the same order as their Go
// references, with one rounding per operation and none fused: so they give
// the references' bits, which the trainer's bit-for-bit promises rest on.

// LayerNormOut sets out[j] = float32((float64(x[j])−m)·rs·w[j] + b[j]), in
// that order in float64 and rounded once: a layer norm's output row, given
// its mean m and reciprocal deviation rs.
func LayerNormOut(out, x []float32, w, b []float64, m, rs float64) {
	if len(x) != len(out) || len(w) < len(out) || len(b) < len(out) {
		panic(fmt.Sprintf("vec: LayerNormOut: len(out)=%d, len(x)=%d, len(w)=%d, len(b)=%d", len(out), len(x), len(w), len(b)))
	}
	layerNormOut(out, x, w, b, m, rs)
}

// LayerNormRowGrad takes one row of a layer norm's backward: with
// h = (float64(x[j])−m)·rs, d = float64(g[j]) and e = d·w[j], it sets
// xh[j] = h and dh[j] = e and adds d·h into gw[j] and d into gb[j].
func LayerNormRowGrad(xh, dh, gw, gb []float64, x, g []float32, w []float64, m, rs float64) {
	n := len(x)
	if len(g) != n || len(xh) < n || len(dh) < n || len(gw) < n || len(gb) < n || len(w) < n {
		panic(fmt.Sprintf("vec: LayerNormRowGrad: len(x)=%d, len(g)=%d, len(xh)=%d, len(dh)=%d, len(gw)=%d, len(gb)=%d, len(w)=%d", n, len(g), len(xh), len(dh), len(gw), len(gb), len(w)))
	}
	layerNormRowGrad(xh, dh, gw, gb, x, g, w, m, rs)
}

// LayerNormInputGrad sets gx[j] = float32(k·((ff·dh[j] − sd) − xh[j]·sx)),
// in that order in float64 and rounded once: a layer norm's input gradient
// row from LayerNormRowGrad's xh and dh and their sums.
func LayerNormInputGrad(gx []float32, xh, dh []float64, k, ff, sd, sx float64) {
	if len(xh) < len(gx) || len(dh) < len(gx) {
		panic(fmt.Sprintf("vec: LayerNormInputGrad: len(gx)=%d, len(xh)=%d, len(dh)=%d", len(gx), len(xh), len(dh)))
	}
	layerNormInputGrad(gx, xh, dh, k, ff, sd, sx)
}

func layerNormOutRef(out, x []float32, w, b []float64, m, rs float64) {
	w, b = w[:len(out)], b[:len(out)]
	for j, v := range x[:len(out)] {
		out[j] = float32((float64(v)-m)*rs*w[j] + b[j])
	}
}

func layerNormRowGradRef(xh, dh, gw, gb []float64, x, g []float32, w []float64, m, rs float64) {
	n := len(x)
	xh, dh, gw, gb, g, w = xh[:n], dh[:n], gw[:n], gb[:n], g[:n], w[:n]
	for j, v := range x {
		d := float64(g[j])
		h := (float64(v) - m) * rs
		e := d * w[j]
		gw[j] += d * h
		gb[j] += d
		xh[j], dh[j] = h, e
	}
}

func layerNormInputGradRef(gx []float32, xh, dh []float64, k, ff, sd, sx float64) {
	xh, dh = xh[:len(gx)], dh[:len(gx)]
	for j, e := range dh {
		gx[j] = float32(k * (ff*e - sd - xh[j]*sx))
	}
}
