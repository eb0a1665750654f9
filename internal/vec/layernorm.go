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

// LayerNormRows is the number of rows LayerNormStats takes at once.
const LayerNormRows = 16

// HasLayerNormStats reports whether LayerNormStats runs in assembly; where
// it does not, a caller does better with rows side by side of its own.
var HasLayerNormStats = hasLayerNormStats

// LayerNormStats sets, for each of the LayerNormRows rows of f floats
// starting every f in x, s[k] = Σ float64(x) and then, with m[k] =
// s[k]/float64(f), q[k] = Σ (float64(x) − m[k])², each sum in element
// order in float64 from zero: a layer norm's row statistics. t is scratch
// of LayerNormRows·f.
func LayerNormStats(x []float32, f int, t []float64, m, q *[LayerNormRows]float64) {
	if f <= 0 || len(x) < LayerNormRows*f || len(t) < LayerNormRows*f {
		panic(fmt.Sprintf("vec: LayerNormStats: f=%d, len(x)=%d, len(t)=%d", f, len(x), len(t)))
	}
	layerNormStats(x, f, t, m, q)
}

func layerNormStats(x []float32, f int, t []float64, m, q *[LayerNormRows]float64) {
	var s [LayerNormRows]float64
	n := layerNormSums(x, f, t, &s)
	for k := range s {
		for _, v := range x[k*f+n : (k+1)*f] {
			s[k] += float64(v)
		}
		m[k] = s[k] / float64(f)
	}
	*q = [LayerNormRows]float64{}
	layerNormSqDevs(t, n, m, q)
	for k, mk := range m {
		for _, v := range x[k*f+n : (k+1)*f] {
			q[k] += (float64(v) - mk) * (float64(v) - mk)
		}
	}
}

// LayerNormGradRows is the number of rows LayerNormGradSums takes at once.
const LayerNormGradRows = 8

// LayerNormGradSums sets sd[k] = Σ dh and sx[k] = Σ dh·xh over the f
// elements of row k, which start at k·stride in xh and in dh, each sum in
// element order in float64 from zero: the sums Σĝ and Σĝx̂ of a layer
// norm's input gradient, for LayerNormGradRows rows.
func LayerNormGradSums(xh, dh []float64, stride, f int, sd, sx *[LayerNormGradRows]float64) {
	if end := (LayerNormGradRows-1)*stride + f; f <= 0 || stride < f || len(xh) < end || len(dh) < end {
		panic(fmt.Sprintf("vec: LayerNormGradSums: f=%d, stride=%d, len(xh)=%d, len(dh)=%d", f, stride, len(xh), len(dh)))
	}
	n := layerNormGradSums(xh, dh, stride, f, sd, sx)
	for k := range LayerNormGradRows {
		h, e := xh[k*stride:][n:f], dh[k*stride:][n:f]
		d, x := sd[k], sx[k]
		for j, v := range e {
			d += v
			x += v * h[j]
		}
		sd[k], sx[k] = d, x
	}
}

// LayerNormRowGrads is LayerNormRowGrad on LayerNormGradRows rows of f
// elements at once, in row order: row k of x and g starts at k·f, its xh
// and dh at 2k·f and (2k+1)·f of t, its mean and rstd are m[k] and rs[k];
// gwb holds gw and then gb, f each.
func LayerNormRowGrads(t, gwb []float64, x, g []float32, w []float64, f int, m, rs *[LayerNormGradRows]float64) {
	const r = LayerNormGradRows
	if f <= 0 || len(t) < 2*r*f || len(gwb) < 2*f || len(x) < r*f || len(g) < r*f || len(w) < f {
		panic(fmt.Sprintf("vec: LayerNormRowGrads: f=%d, len(t)=%d, len(gwb)=%d, len(x)=%d, len(g)=%d, len(w)=%d", f, len(t), len(gwb), len(x), len(g), len(w)))
	}
	n := layerNormRowGrads(t, gwb, x, g, w, f, m, rs)
	if n == f {
		return
	}
	for k := range r {
		layerNormRowGrad(t[2*k*f+n:(2*k+1)*f], t[(2*k+1)*f+n:(2*k+2)*f], gwb[n:f], gwb[f+n:2*f], x[k*f+n:(k+1)*f], g[k*f+n:(k+1)*f], w[n:f], m[k], rs[k])
	}
}

// LayerNormOuts is LayerNormOut on len(m) rows of f at once: row k of out
// and x starts at k·f, and its mean and rstd are m[k] and rs[k].
func LayerNormOuts(out, x []float32, w, b []float64, f int, m, rs []float64) {
	rows := len(m)
	if f <= 0 || len(rs) != rows || len(out) < rows*f || len(x) < rows*f || len(w) < f || len(b) < f {
		panic(fmt.Sprintf("vec: LayerNormOuts: f=%d, len(m)=%d, len(rs)=%d, len(out)=%d, len(x)=%d, len(w)=%d, len(b)=%d", f, rows, len(rs), len(out), len(x), len(w), len(b)))
	}
	n := layerNormOuts(out, x, w, b, f, m, rs)
	if n == f {
		return
	}
	for k := range rows {
		layerNormOut(out[k*f+n:(k+1)*f], x[k*f+n:(k+1)*f], w[n:f], b[n:f], m[k], rs[k])
	}
}

// LayerNormInputGrads is LayerNormInputGrad on len(k) rows of f at once,
// with ff = f: row r of gx starts at r·f, its xh and dh at 2r·f and
// (2r+1)·f of t, as LayerNormRowGrads leaves them, and its constants are
// k[r], sd[r] and sx[r].
func LayerNormInputGrads(gx []float32, t []float64, f int, k, sd, sx []float64) {
	rows := len(k)
	if f <= 0 || len(sd) != rows || len(sx) != rows || len(gx) < rows*f || len(t) < 2*rows*f {
		panic(fmt.Sprintf("vec: LayerNormInputGrads: f=%d, len(k)=%d, len(sd)=%d, len(sx)=%d, len(gx)=%d, len(t)=%d", f, rows, len(sd), len(sx), len(gx), len(t)))
	}
	n := layerNormInputGrads(gx, t, f, k, sd, sx)
	if n == f {
		return
	}
	for r := range rows {
		layerNormInputGrad(gx[r*f+n:(r+1)*f], t[2*r*f+n:(2*r+1)*f], t[(2*r+1)*f+n:(2*r+2)*f], k[r], float64(f), sd[r], sx[r])
	}
}

// LayerNormAddRounded sets dst[j] += float32(src[j]): a chunk's float64
// sums of a layer norm's weight or bias gradient added in.
func LayerNormAddRounded(dst []float32, src []float64) {
	if len(src) < len(dst) {
		panic(fmt.Sprintf("vec: LayerNormAddRounded: len(dst)=%d, len(src)=%d", len(dst), len(src)))
	}
	layerNormAddRounded(dst, src)
}

func layerNormAddRoundedRef(dst []float32, src []float64) {
	for j, v := range src[:len(dst)] {
		dst[j] += float32(v)
	}
}
