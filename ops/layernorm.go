package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/tensor"
)

// LayerNormChunkRows is the number of rows whose weight and bias gradients
// LayerNormBackward sums apart before adding them in, chunk after chunk.
const LayerNormChunkRows = 32

// LayerNormWork is the scratch memory and thread budget of LayerNormInto and
// LayerNormBackwardInto, kept from call to call so that calls after the first
// of their size allocate nothing. The zero value is ready; a LayerNormWork
// serves one call at a time.
type LayerNormWork struct {
	// Threads bounds the goroutines a call may use, the caller's included;
	// 0 means runtime.GOMAXPROCS(0). Results do not depend on it.
	Threads int

	f32 lnWork[float32]
	f64 lnWork[float64]
}

// lnWork is a LayerNormWork's memory for one float type.
type lnWork[T float] struct {
	wb     []float64 // weight and bias widened, read by every part
	parts  []float64 // per part: a forward's rows widened, a backward's sums and rows
	chunks []T       // per chunk, its weight then bias gradient, when parts > 1
	fwd    lnForward[T]
	bwd    lnBackward[T]
}

// Rows of float64 scratch per part: a forward's rows widened, four or
// vec.LayerNormRows at a time, or a backward's chunk sums of the weight and
// bias gradients and the x̂ and weight·grad of the lnGroup rows in hand.
const lnPartRows = max(vec.LayerNormRows, 2+2*lnGroup)

// lnGroup is the number of rows whose backward sums run side by side.
const lnGroup = vec.LayerNormGradRows

// Parallel parts get at least this many elements, so that starting a helper
// pays off.
const lnGrain = 1 << 14

// lnParts cuts n units (rows or chunks) into one part per thread, each of
// at least grain units.
func lnParts(threads, n, grain int) int {
	return max(1, min(par.Budget(threads), n/grain))
}

// lnFeatures checks x, weight and bias (nil in a backward) and mean and
// rstd (nil in a forward) and returns the number of features F. Messages
// are formatted only on failure: steady calls allocate nothing.
func lnFeatures(op string, x, weight, bias, mean, rstd *tensor.Tensor) int {
	var buf [5]*tensor.Tensor
	all := buf[:0]
	for _, t := range [...]*tensor.Tensor{x, weight, bias, mean, rstd} {
		if t != nil {
			all = append(all, t)
		}
	}
	dtypeOf(op, all...)
	if x.Dims() == 0 {
		fail(op, "input shape [] has no last axis to normalise (shapes %s)", shapesOf(all...))
	}
	f := x.Dim(x.Dims() - 1)
	if !weight.HasShape(f) || bias != nil && !bias.HasShape(f) {
		fail(op, "weight and bias must be [%d], the last axis of input shape %v (shapes %s)", f, x.Shape(), shapesOf(all...))
	}
	if mean != nil && (!lnRowShaped(mean, x) || !lnRowShaped(rstd, x)) {
		fail(op, "mean and rstd must be %v, input shape %v without its last axis (shapes %s)", x.Shape()[:x.Dims()-1], x.Shape(), shapesOf(all...))
	}
	return f
}

// lnRowShaped reports whether t has x's shape without its last axis.
func lnRowShaped(t, x *tensor.Tensor) bool {
	if t.Dims() != x.Dims()-1 {
		return false
	}
	for i := range t.Dims() {
		if t.Dim(i) != x.Dim(i) {
			return false
		}
	}
	return true
}

// LayerNorm normalises x over its last axis of F features, as
// torch.nn.functional.layer_norm(x, [F], weight, bias, eps): per row,
// mean and biased variance; rstd = 1/sqrt(var+eps);
// out = (x−mean)·rstd·weight + bias. weight and bias are [F]; x has any rank
// ≥ 1; mean and rstd are returned per row, shaped as x without its last axis,
// for LayerNormBackward.
//
// The statistics are summed in float64, in order, and out is computed in
// float64 from them and rounded once. With eps = 0 a constant row has rstd
// +Inf and a NaN output, as in PyTorch; F = 0 gives NaN statistics.
func LayerNorm(x, weight, bias *tensor.Tensor, eps float64) (out, mean, rstd *tensor.Tensor) {
	lnFeatures("LayerNorm", x, weight, bias, nil, nil)
	s := x.Shape()
	dt := x.DType()
	out, mean, rstd = tensor.Zeros(dt, s...), tensor.Zeros(dt, s[:len(s)-1]...), tensor.Zeros(dt, s[:len(s)-1]...)
	layerNormInto(out, mean, rstd, x, weight, bias, eps, new(LayerNormWork))
	return out, mean, rstd
}

// LayerNormInto is LayerNorm into out, of x's dtype and shape, and mean and
// rstd, x's shape without its last axis; it returns out. work keeps the
// scratch memory and says how many threads to use; nil uses a new one.
func LayerNormInto(out, mean, rstd, x, weight, bias *tensor.Tensor, eps float64, work *LayerNormWork) *tensor.Tensor {
	const op = "LayerNormInto"
	lnFeatures(op, x, weight, bias, mean, rstd)
	into(op, out, x)
	if work == nil {
		work = new(LayerNormWork)
	}
	layerNormInto(out, mean, rstd, x, weight, bias, eps, work)
	return out
}

func layerNormInto(out, mean, rstd, x, weight, bias *tensor.Tensor, eps float64, work *LayerNormWork) {
	if x.DType() == tensor.Float32 {
		layerNorm(&work.f32, work.Threads, out.Data32(), mean.Data32(), rstd.Data32(), x.Data32(), weight.Data32(), bias.Data32(), x.Dim(x.Dims()-1), eps)
	} else {
		layerNorm(&work.f64, work.Threads, out.Data64(), mean.Data64(), rstd.Data64(), x.Data64(), weight.Data64(), bias.Data64(), x.Dim(x.Dims()-1), eps)
	}
}

func layerNorm[T float](work *lnWork[T], threads int, out, mean, rstd, x, weight, bias []T, f int, eps float64) {
	if f == 0 {
		for i := range mean {
			mean[i], rstd[i] = T(math.NaN()), T(math.NaN())
		}
		return
	}
	n := len(mean)
	parts := lnParts(threads, n, max(1, lnGrain/f))
	work.wb = grow(work.wb, 2*f)
	lnWiden(work.wb[:f], weight)
	lnWiden(work.wb[f:], bias)
	work.parts = grow(work.parts, parts*lnPartRows*f)
	t := &work.fwd
	*t = lnForward[T]{out: out, mean: mean, rstd: rstd, x: x, w: work.wb[:f], b: work.wb[f:], scratch: work.parts, f: f, n: n, parts: parts, eps: eps}
	par.Do(threads, parts, t)
	*t = lnForward[T]{} // holds no memory of the caller's
}

// lnWiden sets dst[j] = float64(src[j]).
func lnWiden[T float](dst []float64, src []T) {
	for j, v := range src[:len(dst)] {
		dst[j] = float64(v)
	}
}

// lnForward is one forward call cut into parts of whole rows.
type lnForward[T float] struct {
	out, mean, rstd, x []T
	w, b               []float64
	scratch            []float64 // per part, lnPartRows·f
	f, n, parts        int
	eps                float64
}

// Part normalises float32 rows vec.LayerNormRows at a time where vec has
// their statistics in assembly, and else four rows at a time: it widens
// them into the part's scratch while summing them, each row in order in
// its own chain of additions so that their latencies overlap, and then
// works on the wide copies. A row's bits do not depend on its neighbours.
func (t *lnForward[T]) Part(q int) {
	f, ff := t.f, float64(t.f)
	s := t.scratch[q*lnPartRows*f : (q+1)*lnPartRows*f]
	lo, hi := par.Bound(q, t.parts, t.n, 1), par.Bound(q+1, t.parts, t.n, 1)
	i := lo
	if x, ok := any(t.x).([]float32); ok && vec.HasLayerNormStats {
		out := any(t.out).([]float32)
		var m, sq, rs [vec.LayerNormRows]float64
		for ; i+vec.LayerNormRows <= hi; i += vec.LayerNormRows {
			vec.LayerNormStats(x[i*f:], f, s, &m, &sq)
			// The rows' square roots and divisions overlap when apart
			// from the outputs.
			for k := range m {
				rs[k] = t.stats(i+k, m[k], sq[k])
			}
			vec.LayerNormOuts(out[i*f:(i+len(m))*f], x[i*f:(i+len(m))*f], t.w, t.b, f, m[:], rs[:])
		}
	}
	for ; i+4 <= hi; i += 4 {
		r0 := t.x[i*f : (i+1)*f]
		r1, r2, r3 := t.x[(i+1)*f:][:len(r0)], t.x[(i+2)*f:][:len(r0)], t.x[(i+3)*f:][:len(r0)]
		w0, w1, w2, w3 := s[:len(r0)], s[f:][:len(r0)], s[2*f:][:len(r0)], s[3*f:][:len(r0)]
		var s0, s1, s2, s3 float64
		for j, v := range r0 {
			a0, a1, a2, a3 := float64(v), float64(r1[j]), float64(r2[j]), float64(r3[j])
			s0 += a0
			s1 += a1
			s2 += a2
			s3 += a3
			w0[j], w1[j], w2[j], w3[j] = a0, a1, a2, a3
		}
		m0, m1, m2, m3 := s0/ff, s1/ff, s2/ff, s3/ff
		var q0, q1, q2, q3 float64
		for j, v := range w0 {
			d0, d1, d2, d3 := v-m0, w1[j]-m1, w2[j]-m2, w3[j]-m3
			q0 += d0 * d0
			q1 += d1 * d1
			q2 += d2 * d2
			q3 += d3 * d3
		}
		t.finish(i, m0, q0)
		t.finish(i+1, m1, q1)
		t.finish(i+2, m2, q2)
		t.finish(i+3, m3, q3)
	}
	for ; i < hi; i++ {
		row := s[:f]
		lnWiden(row, t.x[i*f:(i+1)*f])
		var s0 float64
		for _, v := range row {
			s0 += v
		}
		m := s0 / ff
		var q0 float64
		for _, v := range row {
			q0 += (v - m) * (v - m)
		}
		t.finish(i, m, q0)
	}
}

// finish writes row i's statistics, given its mean and sum of squared
// deviations, and its output.
func (t *lnForward[T]) finish(i int, m, q float64) {
	rs := t.stats(i, m, q)
	lnOut(t.out[i*t.f:(i+1)*t.f], t.x[i*t.f:(i+1)*t.f], t.w, t.b, m, rs)
}

// stats writes row i's mean and rstd and returns rstd in float64.
func (t *lnForward[T]) stats(i int, m, q float64) float64 {
	rs := 1 / math.Sqrt(q/float64(t.f)+t.eps)
	t.mean[i], t.rstd[i] = T(m), T(rs)
	return rs
}

// lnOut writes a row's output, out[j] = T((x[j]−mean)·rstd·weight[j] +
// bias[j]) in float64: float32 rows in vec's assembly, which gives these
// bits.
func lnOut[T float](out, x []T, w, b []float64, m, rs float64) {
	if o, ok := any(out).([]float32); ok {
		vec.LayerNormOut(o, any(x).([]float32), w, b, m, rs)
		return
	}
	w, b = w[:len(x)], b[:len(x)]
	for j, v := range x[:len(out)] {
		out[j] = T((float64(v)-m)*rs*w[j] + b[j])
	}
}

// LayerNormBackward returns the gradients of LayerNorm with respect to x,
// weight and bias, given the mean and rstd it returned; per row of F
// features, with x̂ = (x−mean)·rstd and ĝ = grad·weight,
// gx = rstd/F·(F·ĝ − Σĝ − x̂·Σĝx̂), and over rows gweight = Σ grad·x̂ and
// gbias = Σ grad.
//
// x̂ is recomputed from the mean and rstd given, in their dtype, as PyTorch
// does. gweight and gbias are summed in float64 over each chunk of
// LayerNormChunkRows rows, counted from the first, and each chunk's sum is
// rounded and added in, in order: so rows [0, 64) at once give the bits of
// rows [0, 32) and then [32, 64) added into the same gradients.
func LayerNormBackward(grad, x, weight, mean, rstd *tensor.Tensor) (gx, gweight, gbias *tensor.Tensor) {
	const op = "LayerNormBackward"
	f := checkLayerNormBackward(op, grad, x, weight, mean, rstd)
	dt := x.DType()
	gx, gweight, gbias = tensor.Zeros(dt, x.Shape()...), tensor.Zeros(dt, f), tensor.Zeros(dt, f)
	layerNormBackwardInto(gx, gweight, gbias, grad, x, weight, mean, rstd, new(LayerNormWork))
	return gx, gweight, gbias
}

// LayerNormBackwardInto is LayerNormBackward into given tensors: it writes
// the input gradient into gx (nil: not computed) and adds the weight and
// bias gradients into gweight and gbias, as a layer accumulates its
// gradients. work keeps the scratch memory and says how many threads to
// use; nil uses a new one.
func LayerNormBackwardInto(gx, gweight, gbias, grad, x, weight, mean, rstd *tensor.Tensor, work *LayerNormWork) {
	const op = "LayerNormBackwardInto"
	f := checkLayerNormBackward(op, grad, x, weight, mean, rstd)
	if gx != nil {
		into(op, gx, x)
	}
	if gweight.DType() != x.DType() || gbias.DType() != x.DType() || !gweight.HasShape(f) || !gbias.HasShape(f) {
		fail(op, "gweight %v %v and gbias %v %v are not %v [%d] (input shape %v)", gweight.DType(), gweight.Shape(), gbias.DType(), gbias.Shape(), x.DType(), f, x.Shape())
	}
	if work == nil {
		work = new(LayerNormWork)
	}
	layerNormBackwardInto(gx, gweight, gbias, grad, x, weight, mean, rstd, work)
}

// checkLayerNormBackward panics unless a backward's arguments fit, and
// returns the number of features.
func checkLayerNormBackward(op string, grad, x, weight, mean, rstd *tensor.Tensor) int {
	dtypeOf(op, grad, x, weight, mean, rstd)
	if !grad.SameShape(x) {
		fail(op, "grad shape %v does not match input shape %v (weight, mean, rstd %s)", grad.Shape(), x.Shape(), shapesOf(weight, mean, rstd))
	}
	return lnFeatures(op, x, weight, nil, mean, rstd)
}

func layerNormBackwardInto(gx, gweight, gbias, grad, x, weight, mean, rstd *tensor.Tensor, work *LayerNormWork) {
	f := x.Dim(x.Dims() - 1)
	if x.DType() == tensor.Float32 {
		layerNormBackward(&work.f32, work.Threads, data32(gx), gweight.Data32(), gbias.Data32(), grad.Data32(), x.Data32(), weight.Data32(), mean.Data32(), rstd.Data32(), f)
	} else {
		layerNormBackward(&work.f64, work.Threads, data64(gx), gweight.Data64(), gbias.Data64(), grad.Data64(), x.Data64(), weight.Data64(), mean.Data64(), rstd.Data64(), f)
	}
}

// layerNormBackward runs whole chunks in parallel parts. With one part the
// chunk sums go straight into gweight and gbias; with more, each part keeps
// its chunks' sums and they are added afterwards in chunk order: the same
// additions in the same order, so the bits do not depend on the threads.
func layerNormBackward[T float](work *lnWork[T], threads int, gx, gweight, gbias, grad, x, weight, mean, rstd []T, f int) {
	n := len(mean)
	if f == 0 || n == 0 {
		return
	}
	chunks := (n + LayerNormChunkRows - 1) / LayerNormChunkRows
	parts := lnParts(threads, chunks, max(1, lnGrain/(f*LayerNormChunkRows)))
	work.wb = grow(work.wb, f)
	lnWiden(work.wb[:f], weight)
	work.parts = grow(work.parts, parts*lnPartRows*f)
	t := &work.bwd
	*t = lnBackward[T]{gx: gx, gw: gweight, gb: gbias, g: grad, x: x, mean: mean, rstd: rstd, w: work.wb[:f], scratch: work.parts, f: f, n: n, chunks: chunks, parts: parts}
	if parts > 1 {
		work.chunks = grow(work.chunks, chunks*2*f)
		t.sums = work.chunks
	}
	par.Do(threads, parts, t)
	if parts > 1 {
		for c := range chunks {
			s := work.chunks[c*2*f : (c+1)*2*f]
			addInto(gweight, s[:f])
			addInto(gbias, s[f:])
		}
	}
	*t = lnBackward[T]{}
}

// lnBackward is one backward call cut into parts of whole chunks.
type lnBackward[T float] struct {
	gx, gw, gb, g, x, mean, rstd []T
	w                            []float64
	scratch                      []float64 // per part, lnPartRows·f
	sums                         []T       // per chunk, when parts > 1
	f, n, chunks, parts          int
}

func (t *lnBackward[T]) Part(q int) {
	f := t.f
	s := t.scratch[q*lnPartRows*f : (q+1)*lnPartRows*f]
	gw, gb := s[:f], s[f:2*f]
	for c := par.Bound(q, t.parts, t.chunks, 1); c < par.Bound(q+1, t.parts, t.chunks, 1); c++ {
		clear(gw)
		clear(gb)
		hi := min(t.n, (c+1)*LayerNormChunkRows)
		for i := c * LayerNormChunkRows; i < hi; i += lnGroup {
			t.rows(i, min(hi, i+lnGroup), s)
		}
		if t.sums == nil {
			lnAddRounded(t.gw, gw)
			lnAddRounded(t.gb, gb)
		} else {
			lnRound(t.sums[c*2*f:][:f], gw)
			lnRound(t.sums[c*2*f+f:][:f], gb)
		}
	}
}

// rows adds rows [lo, hi), at most lnGroup, into the chunk sums gw and gb
// at the start of s, in row order, and writes their input gradients. Each
// row's x̂ and ĝ wait in the rest of s, so that the rows' sums Σĝ and Σĝx̂,
// each in element order, can then run side by side: lnGroup rows in vec's
// assembly where it has them, else four in Go.
func (t *lnBackward[T]) rows(lo, hi int, s []float64) {
	f := t.f
	gw, gb, tmp := s[:f], s[f:2*f], s[2*f:]
	// A full group of float32 rows goes to vec at once: each column's
	// gw and gb stay in registers from row to row, and calls are few.
	x, ok := any(t.x).([]float32)
	full := ok && hi-lo == lnGroup && vec.HasLayerNormStats
	var m, rs [lnGroup]float64
	if full {
		for r := range m {
			m[r], rs[r] = float64(t.mean[lo+r]), float64(t.rstd[lo+r])
		}
		vec.LayerNormRowGrads(tmp, s[:2*f], x[lo*f:hi*f], any(t.g).([]float32)[lo*f:hi*f], t.w, f, &m, &rs)
	} else {
		for i := lo; i < hi; i++ {
			r := 2 * (i - lo) * f
			lnRowGrad(tmp[r:r+f], tmp[r+f:r+2*f], gw, gb, t.x[i*f:(i+1)*f], t.g[i*f:(i+1)*f], t.w, float64(t.mean[i]), float64(t.rstd[i]))
		}
	}
	if t.gx == nil {
		return
	}
	var sd, sx [lnGroup]float64
	r := 0
	if hi-lo == lnGroup && vec.HasLayerNormStats {
		vec.LayerNormGradSums(tmp, tmp[f:], 2*f, f, &sd, &sx)
		r = lnGroup
	}
	for ; r+4 <= hi-lo; r += 4 {
		d4, x4 := lnSums4(tmp[2*r*f:], f)
		copy(sd[r:], d4[:])
		copy(sx[r:], x4[:])
	}
	for ; r < hi-lo; r++ {
		sd[r], sx[r] = lnSums(tmp[2*r*f:][:f], tmp[(2*r+1)*f:][:f])
	}
	if full {
		var k [lnGroup]float64
		for r, v := range rs {
			k[r] = v / float64(f)
		}
		vec.LayerNormInputGrads(any(t.gx).([]float32)[lo*f:hi*f], tmp, f, k[:], sd[:], sx[:])
		return
	}
	for i := lo; i < hi; i++ {
		r := i - lo
		lnInputGrad(t.gx[i*f:(i+1)*f], tmp[2*r*f:][:f], tmp[(2*r+1)*f:][:f], float64(t.rstd[i]), sd[r], sx[r])
	}
}

// lnRowGrad takes one row with x̂ = (x−mean)·rstd and ĝ = grad·weight: it
// sets xh = x̂ and dh = ĝ and adds grad·x̂ into gw and grad into gb; float32
// rows in vec's assembly, which gives these bits.
func lnRowGrad[T float](xh, dh, gw, gb []float64, x, g []T, w []float64, m, rs float64) {
	if x32, ok := any(x).([]float32); ok {
		vec.LayerNormRowGrad(xh, dh, gw, gb, x32, any(g).([]float32), w, m, rs)
		return
	}
	g, w, gw, gb, xh, dh = g[:len(x)], w[:len(x)], gw[:len(x)], gb[:len(x)], xh[:len(x)], dh[:len(x)]
	for j, v := range x {
		d := float64(g[j])
		h := (float64(v) - m) * rs
		gw[j] += d * h
		gb[j] += d
		xh[j], dh[j] = h, d*w[j]
	}
}

// lnSums returns Σĝ and Σĝx̂ of one row, in order.
func lnSums(xh, dh []float64) (sd, sx float64) {
	xh = xh[:len(dh)]
	for j, e := range dh {
		sd += e
		sx += e * xh[j]
	}
	return sd, sx
}

// lnSums4 is lnSums of the four rows in tmp, side by side.
func lnSums4(tmp []float64, f int) (sd, sx [4]float64) {
	h0, e0 := tmp[:f], tmp[f:2*f]
	h1, e1, h2, e2 := tmp[2*f:][:f], tmp[3*f:][:f], tmp[4*f:][:f], tmp[5*f:][:f]
	h3, e3 := tmp[6*f:][:f], tmp[7*f:][:f]
	var d0, d1, d2, d3, x0, x1, x2, x3 float64
	for j, e := range e0 {
		d0 += e
		x0 += e * h0[j]
		d1 += e1[j]
		x1 += e1[j] * h1[j]
		d2 += e2[j]
		x2 += e2[j] * h2[j]
		d3 += e3[j]
		x3 += e3[j] * h3[j]
	}
	return [4]float64{d0, d1, d2, d3}, [4]float64{x0, x1, x2, x3}
}

// lnInputGrad writes gx = rstd/F·(F·ĝ − Σĝ − x̂·Σĝx̂) for one row; float32
// rows in vec's assembly, which gives these bits.
func lnInputGrad[T float](gx []T, xh, dh []float64, rs, sd, sx float64) {
	ff := float64(len(gx))
	k := rs / ff
	if g, ok := any(gx).([]float32); ok {
		vec.LayerNormInputGrad(g, xh, dh, k, ff, sd, sx)
		return
	}
	xh, dh = xh[:len(gx)], dh[:len(gx)]
	for j, e := range dh {
		gx[j] = T(k * (ff*e - sd - xh[j]*sx))
	}
}

// lnAddRounded sets dst[j] += T(src[j]); float32 in vec's assembly, which
// gives these bits.
func lnAddRounded[T float](dst []T, src []float64) {
	if d, ok := any(dst).([]float32); ok {
		vec.LayerNormAddRounded(d, src)
		return
	}
	for j, v := range src[:len(dst)] {
		dst[j] += T(v)
	}
}

// lnRound sets dst[j] = T(src[j]).
func lnRound[T float](dst []T, src []float64) {
	for j, v := range src[:len(dst)] {
		dst[j] = T(v)
	}
}
