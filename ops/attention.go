package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/internal/gemm"
	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/tensor"
)

// attnPlan is the shape of one causal self-attention call.
type attnPlan struct {
	b, t, d   int // batch, positions, model width (qkv is [b, t, 3d])
	heads, hd int // heads and head width d/heads
	scale     float64
}

// planAttention checks qkv and heads and derives the shapes.
func planAttention(op string, qkv *tensor.Tensor, heads int) attnPlan {
	if qkv.Dims() != 3 {
		fail(op, "qkv %v needs 3 axes [B T 3·D]", qkv.Shape())
	}
	if heads < 1 {
		fail(op, "heads %d is not positive (qkv %v)", heads, qkv.Shape())
	}
	c := qkv.Dim(2)
	if c == 0 || c%(3*heads) != 0 {
		fail(op, "qkv %v does not split into q, k and v of %d heads: its last axis %d is not a positive multiple of 3·heads = %d",
			qkv.Shape(), heads, c, 3*heads)
	}
	pl := attnPlan{b: qkv.Dim(0), t: qkv.Dim(1), d: c / 3, heads: heads, hd: c / 3 / heads}
	pl.scale = 1 / math.Sqrt(float64(pl.hd))
	return pl
}

// checkAttn panics unless t has like's dtype and the given shape.
func checkAttn(op, name string, t, like *tensor.Tensor, shape ...int) {
	if t.DType() != like.DType() {
		dtypeOf(op, like, t)
	}
	if !t.HasShape(shape...) {
		fail(op, "%s %v is not %v for qkv %v", name, t.Shape(), append([]int(nil), shape...), like.Shape())
	}
}

// AttentionWork is the scratch memory of the attention's Into forms, kept
// from call to call so that calls after the first of their size allocate
// nothing. It holds per part of a call (a few per goroutine) one or two
// panels of 32 rows by T, never a [T, T] matrix. The zero value is ready;
// an AttentionWork serves one call at a time.
type AttentionWork struct {
	// Threads is how many goroutines a call may use; 0 means GOMAXPROCS.
	// The results do not depend on it.
	Threads int
	// BF16 runs the float32 products on gemm's bf16 entry points (mixed
	// precision: operands rounded to bf16, sums in float32), their sums in
	// Arithmetic's steps; float64 ignores both.
	BF16       bool
	Arithmetic Arithmetic

	f32 attnWork[float32]
	f64 attnWork[float64]
}

// Bytes returns the bytes of scratch memory w holds.
func (w *AttentionWork) Bytes() int64 {
	return 4*int64(cap(w.f32.ps)+cap(w.f32.ds)) + 8*int64(cap(w.f64.ps)+cap(w.f64.ds))
}

// attnWork is an AttentionWork's memory for one float type.
type attnWork[T float] struct {
	ps  []T // per part, a panel of probabilities not kept in probs
	ds  []T // per part of the backward, a panel of score gradients
	fwd attnForward[T]
	bwd attnBackward[T]
}

// panels returns *buf grown to parts panels of attnBlock rows of tt.
func panels[T float](buf *[]T, parts, tt int) []T {
	n := parts * attnBlock * tt
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	return (*buf)[:n]
}

// CausalSelfAttention is the attention of nanoGPT's CausalSelfAttention
// between c_attn and c_proj. qkv [B, T, 3D] holds q, k and v side by side on
// its last axis; head h reads columns [h·hd, (h+1)·hd) of each, hd = D/heads.
// probs [B, heads, T, T] is softmax(q·kᵀ/√hd) over the last axis with the
// causal mask (position t attends to s <= t; masked entries are 0), and out
// [B, T, D] is probs·v with the heads side by side on the last axis, as
// y.transpose(1, 2).view(B, T, C).
func CausalSelfAttention(qkv *tensor.Tensor, heads int) (out, probs *tensor.Tensor) {
	const op = "CausalSelfAttention"
	pl := planAttention(op, qkv, heads)
	if pl.t > 0 && pl.b*pl.heads > math.MaxInt/2/pl.t/pl.t {
		fail(op, "qkv %v with %d heads gives probabilities [%d %d %d %d] too large to hold", qkv.Shape(), heads, pl.b, heads, pl.t, pl.t)
	}
	out = tensor.Zeros(qkv.DType(), pl.b, pl.t, pl.d)
	probs = tensor.Zeros(qkv.DType(), pl.b, pl.heads, pl.t, pl.t)
	attentionInto(&pl, out, probs, nil, qkv, new(AttentionWork))
	return out, probs
}

// CausalSelfAttentionInto writes CausalSelfAttention(qkv, heads) into out
// [B, T, D] and probs [B, heads, T, T], which must have qkv's dtype and may
// not overlap it. probs may be nil: the probabilities then live in work,
// 32 rows at a time, and are not kept (a backward given nil probs
// recomputes them, with the same bits). work keeps the scratch memory and
// the thread budget; nil uses a new one.
func CausalSelfAttentionInto(out, probs, qkv *tensor.Tensor, heads int, work *AttentionWork) {
	const op = "CausalSelfAttentionInto"
	pl := planAttention(op, qkv, heads)
	checkAttn(op, "out", out, qkv, pl.b, pl.t, pl.d)
	if probs != nil {
		checkAttn(op, "probs", probs, qkv, pl.b, pl.heads, pl.t, pl.t)
	}
	attentionInto(&pl, out, probs, nil, qkv, orNew(work))
}

// CausalSelfAttentionStatsInto writes CausalSelfAttention's out into out
// [B, T, D], with its bits, and instead of the probabilities their rows'
// statistics into stats [B, heads, T, 2], float64 whatever qkv's dtype: per
// row its maximum score and the inverse of its sum of exponentials, from
// which CausalSelfAttentionBackwardStatsInto recomputes the probabilities
// with the forward's bits in one pass. Memory linear in T: the probabilities
// live in work, 32 rows at a time.
func CausalSelfAttentionStatsInto(out, stats, qkv *tensor.Tensor, heads int, work *AttentionWork) {
	const op = "CausalSelfAttentionStatsInto"
	pl := planAttention(op, qkv, heads)
	checkAttn(op, "out", out, qkv, pl.b, pl.t, pl.d)
	checkStats(op, stats, qkv, &pl)
	attentionInto(&pl, out, nil, stats, qkv, orNew(work))
}

// checkStats panics unless stats is float64 [B, heads, T, 2] for qkv.
func checkStats(op string, stats, qkv *tensor.Tensor, pl *attnPlan) {
	if stats.DType() != tensor.Float64 || !stats.HasShape(pl.b, pl.heads, pl.t, 2) {
		fail(op, "stats %v %v is not float64 %v for qkv %v", stats.DType(), stats.Shape(), []int{pl.b, pl.heads, pl.t, 2}, qkv.Shape())
	}
}

// orNew returns work, or a new AttentionWork for nil.
func orNew(work *AttentionWork) *AttentionWork {
	if work == nil {
		return new(AttentionWork)
	}
	return work
}

func attentionInto(pl *attnPlan, out, probs, stats, qkv *tensor.Tensor, work *AttentionWork) {
	if qkv.DType() == tensor.Float32 {
		attention(pl, work.Threads, products{work.BF16, work.Arithmetic}, &work.f32, out.Data32(), data32(probs), data64(stats), qkv.Data32())
	} else {
		attention(pl, work.Threads, products{}, &work.f64, out.Data64(), data64(probs), data64(stats), qkv.Data64())
	}
}

// attnSplit returns the goroutine budget, how many parts the (batch, head)
// pairs are cut into and the GEMM budget of each part. Parts are claimed
// as goroutines come free, so a few per goroutine keep one that runs late
// (a busy CPU) from holding up the call by half of it.
func attnSplit(pl *attnPlan, threads int) (budget, parts, inner int) {
	budget = par.Budget(threads)
	n := pl.b * pl.heads
	parts = max(1, min(n, budget*attnPartsPerThread))
	if budget == 1 {
		parts = 1
	}
	return budget, parts, max(1, budget/parts)
}

// attnPartsPerThread is how many parts a call is cut into per goroutine.
const attnPartsPerThread = 4

// attention runs the (batch, head) pairs in parallel parts; a pair's
// result does not depend on which part computes it, nor on the others.
func attention[T float](pl *attnPlan, threads int, pr products, work *attnWork[T], out, probs []T, stats []float64, qkv []T) {
	if pl.b*pl.t == 0 {
		return
	}
	budget, parts, inner := attnSplit(pl, threads)
	var ps []T
	if probs == nil {
		ps = panels(&work.ps, parts, pl.t)
	}
	t := &work.fwd
	*t = attnForward[T]{pl: *pl, out: out, probs: probs, ps: ps, stats: stats, qkv: qkv, parts: parts, threads: inner, pr: pr}
	par.Do(budget, parts, t)
	*t = attnForward[T]{} // holds no memory of the caller's
}

// attnBlock is the height of the row panels a pair's [T, T] matrices are
// computed in, so that only blocks on or below the diagonal are: rows
// [i0, i0+attnBlock) of the scores need keys [0, i0+attnBlock) only. It
// is fixed, so a pair's bits depend on T alone.
const attnBlock = 32

type attnForward[T float] struct {
	pl              attnPlan
	out, probs, qkv []T
	ps              []T       // per part, a panel when probs is nil
	stats           []float64 // the rows' statistics, or nil
	parts, threads  int       // parts of the pairs; GEMM budget per part
	pr              products
}

func (f *attnForward[T]) Part(q int) {
	pl := &f.pl
	n, ld, tt := pl.b*pl.heads, 3*pl.d, pl.t
	for p, end := par.Bound(q, f.parts, n, 1), par.Bound(q+1, f.parts, n, 1); p < end; p++ {
		qm, km, vm := pairQKV(pl, f.qkv, p)
		o := f.out[(p/pl.heads)*tt*pl.d+(p%pl.heads)*pl.hd:]
		for i0 := 0; i0 < tt; i0 += attnBlock {
			i1 := min(tt, i0+attnBlock)
			pm := panel(f.probs, f.ps, p, q, i0, tt)
			probsPanel(f.threads, f.pr, pl, i0, i1, qm, km, pm, rowStats(f.stats, p, i0, tt))
			if f.probs != nil {
				for r := range i1 - i0 {
					clear(pm[r*tt+i1 : (r+1)*tt])
				}
			}
			attnGemm(f.threads, f.pr, false, false, i1-i0, pl.hd, i1, 1, pm, tt, vm, ld, 0, o[i0*pl.d:], pl.d)
		}
	}
}

// pairQKV returns pair p's columns of q, k and v in x, [B, T, 3D] (qkv
// or its gradient), each from the pair's first row on.
func pairQKV[T float](pl *attnPlan, x []T, p int) (qm, km, vm []T) {
	base := (p/pl.heads)*pl.t*3*pl.d + (p%pl.heads)*pl.hd
	return x[base:], x[base+pl.d:], x[base+2*pl.d:]
}

// panel returns the panel of pair p's probabilities from row i0 on, rows
// tt apart: its place in probs, or part q's buffer in ps when probs is nil.
func panel[T float](probs, ps []T, p, q, i0, tt int) []T {
	if probs == nil {
		return ps[q*attnBlock*tt : (q+1)*attnBlock*tt]
	}
	return probs[(p*tt+i0)*tt : (p+1)*tt*tt]
}

// rowStats returns pair p's statistics from row i0 on, or nil.
func rowStats(stats []float64, p, i0, tt int) []float64 {
	if stats == nil {
		return nil
	}
	return stats[2*(p*tt+i0) : 2*(p+1)*tt]
}

// probsPanel writes rows [i0, i1) of a pair's probabilities into the panel
// pm (rows tt apart, columns [0, i1)): the scaled scores q·kᵀ of keys
// [0, i1), their causal softmax, zeros after; and with st, each row's
// maximum and inverse sum. The forward and a backward recomputing the
// probabilities both call it, so both get the same bits.
func probsPanel[T float](threads int, pr products, pl *attnPlan, i0, i1 int, qm, km, pm []T, st []float64) {
	scores(threads, pr, pl, i0, i1, qm, km, pm)
	for i := i0; i < i1; i++ {
		r := i - i0
		m, inv := softmaxCausal(pm[r*pl.t:r*pl.t+i1], i+1)
		if st != nil {
			st[2*r], st[2*r+1] = float64(m), inv
		}
	}
}

// probsFromStats is probsPanel given the rows' statistics st: the same
// bits without the maximum and the sum.
func probsFromStats[T float](threads int, pr products, pl *attnPlan, i0, i1 int, qm, km, pm []T, st []float64) {
	scores(threads, pr, pl, i0, i1, qm, km, pm)
	for i := i0; i < i1; i++ {
		r := i - i0
		softmaxKnown(pm[r*pl.t:r*pl.t+i1], i+1, T(st[2*r]), st[2*r+1])
	}
}

// scores writes rows [i0, i1) of q·kᵀ·scale, keys [0, i1), into pm.
func scores[T float](threads int, pr products, pl *attnPlan, i0, i1 int, qm, km, pm []T) {
	ld := 3 * pl.d
	attnGemm(threads, pr, false, true, i1-i0, i1, pl.hd, pl.scale, qm[i0*ld:], ld, km, ld, 0, pm, pl.t)
}

// softmaxCausal turns row, scores (scaled by the GEMM) in its first n
// elements, into their softmax there and zeros after, and returns the
// maximum it shifted by and the inverse sum it scaled by. The shift is
// exact or rounded once; the sum is taken in float64 and each probability
// rounded once from it; float32 runs the same steps 8 floats at a time.
func softmaxCausal[T float](row []T, n int) (m T, inv float64) {
	x := row[:n]
	if x32, ok := any(x).([]float32); ok {
		m = T(vec.Max(x32))
	} else {
		m = rowMax(x)
	}
	shift(x, m)
	expInPlace(x)
	inv = 1 / rowSum(x)
	scaleRow(x, inv)
	clear(row[n:])
	return m, inv
}

// softmaxKnown is softmaxCausal given the row's maximum m and inverse sum
// inv, with its bits.
func softmaxKnown[T float](row []T, n int, m T, inv float64) {
	x := row[:n]
	shift(x, m)
	expInPlace(x)
	scaleRow(x, inv)
	clear(row[n:])
}

// scaleRow sets x[j] = x[j]·c in float64, rounded once.
func scaleRow[T float](x []T, c float64) {
	if x, ok := any(x).([]float32); ok {
		vec.ScaleF64(x, c)
		return
	}
	for j, v := range x {
		x[j] = T(float64(v) * c)
	}
}

// shift subtracts m from every element of x, on the vector kernel in
// float32 (x + (−m) has the bits of x − m).
func shift[T float](x []T, m T) {
	if x, ok := any(x).([]float32); ok {
		vec.AddConst(x, -float32(m))
		return
	}
	for j, v := range x {
		x[j] = v - m
	}
}

// rowMax returns the maximum of x (not empty), or a NaN of x (which spoils
// the row through its exp anyway). It compares the floats' bits as
// integers ordered like the floats (key), four running maxima at a
// time: the integer max has no branch to mispredict, unlike a float
// comparison (the forward at T = 64 takes 15% less time).
func rowMax[T float](x []T) T {
	m0 := key(x[0])
	m1, m2, m3 := m0, m0, m0
	j := 0
	for ; j+4 <= len(x); j += 4 {
		m0 = max(m0, key(x[j]))
		m1 = max(m1, key(x[j+1]))
		m2 = max(m2, key(x[j+2]))
		m3 = max(m3, key(x[j+3]))
	}
	for ; j < len(x); j++ {
		m0 = max(m0, key(x[j]))
	}
	k := max(m0, m1, m2, m3)
	return T(math.Float64frombits(uint64(k ^ (k >> 63 & math.MaxInt64)))) // key is its own inverse
}

// key maps v, widened to float64 (exact, order kept), to an int64 ordered
// as the floats (−0 < +0).
func key[T float](v T) int64 {
	b := int64(math.Float64bits(float64(v)))
	return b ^ (b >> 63 & math.MaxInt64)
}

// rowSum returns the sum of x in float64, in four interleaved partial sums
// added in a fixed order.
func rowSum[T float](x []T) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(x); j += 4 {
		s0 += float64(x[j])
		s1 += float64(x[j+1])
		s2 += float64(x[j+2])
		s3 += float64(x[j+3])
	}
	for ; j < len(x); j++ {
		s0 += float64(x[j])
	}
	return (s0 + s1) + (s2 + s3)
}

// rowDot returns the dot product of x and y in float64, as rowSum.
func rowDot[T float](x, y []T) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(x); j += 4 {
		s0 += float64(x[j]) * float64(y[j])
		s1 += float64(x[j+1]) * float64(y[j+1])
		s2 += float64(x[j+2]) * float64(y[j+2])
		s3 += float64(x[j+3]) * float64(y[j+3])
	}
	for ; j < len(x); j++ {
		s0 += float64(x[j]) * float64(y[j])
	}
	return (s0 + s1) + (s2 + s3)
}

// expInPlace sets x[i] = exp(x[i]) for the softmax, x[i] <= 0: about half
// the forward's time, in math.Exp. A vectorised float32 exp over slices
// replaces the float32 loop here.
func expInPlace[T float](x []T) {
	if x, ok := any(x).([]float32); ok {
		vec.Exp(x, x) // within one float32 step of the exact value
		return
	}
	for i, v := range x {
		x[i] = T(math.Exp(float64(v)))
	}
}

// CausalSelfAttentionBackward returns the gradient gqkv [B, T, 3D] of
// CausalSelfAttention with respect to qkv, given grad [B, T, D] and the
// forward's probs: dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P⊙(dP − rowsum(dP⊙P))/√hd,
// dQ = dS·K and dK = dSᵀ·Q. probs may be nil, as for
// CausalSelfAttentionBackwardInto.
func CausalSelfAttentionBackward(grad, qkv, probs *tensor.Tensor, heads int) *tensor.Tensor {
	const op = "CausalSelfAttentionBackward"
	pl := planAttentionBackward(op, grad, qkv, probs, heads)
	gqkv := tensor.Zeros(qkv.DType(), qkv.Shape()...)
	attentionBackwardInto(&pl, gqkv, grad, qkv, probs, nil, nil, new(AttentionWork))
	return gqkv
}

// CausalSelfAttentionBackwardInto writes CausalSelfAttentionBackward(grad,
// qkv, probs, heads) into gqkv, of qkv's dtype and shape, which may not
// overlap the inputs: it is an input gradient, written, not added. probs
// may be nil: each pair's probabilities are then recomputed from qkv into
// work, 32 rows at a time, as the forward computes them (the scores' GEMM
// and the softmax, not the product with v), with the same bits as a kept
// probs. work keeps the scratch memory and the thread budget; nil uses a
// new one.
func CausalSelfAttentionBackwardInto(gqkv, grad, qkv, probs *tensor.Tensor, heads int, work *AttentionWork) {
	const op = "CausalSelfAttentionBackwardInto"
	pl := planAttentionBackward(op, grad, qkv, probs, heads)
	checkAttn(op, "gqkv", gqkv, qkv, pl.b, pl.t, 3*pl.d)
	attentionBackwardInto(&pl, gqkv, grad, qkv, probs, nil, nil, orNew(work))
}

// CausalSelfAttentionBackwardStatsInto is CausalSelfAttentionBackwardInto
// given the statistics CausalSelfAttentionStatsInto kept instead of the
// probabilities: they are recomputed 32 rows at a time from q, k and stats
// with the forward's bits, so gqkv has the bits of the backward given kept
// probs.
func CausalSelfAttentionBackwardStatsInto(gqkv, grad, qkv, stats *tensor.Tensor, heads int, work *AttentionWork) {
	const op = "CausalSelfAttentionBackwardStatsInto"
	pl := planAttentionBackward(op, grad, qkv, nil, heads)
	checkAttn(op, "gqkv", gqkv, qkv, pl.b, pl.t, 3*pl.d)
	checkStats(op, stats, qkv, &pl)
	attentionBackwardInto(&pl, gqkv, grad, qkv, nil, stats, nil, orNew(work))
}

// CausalSelfAttentionRecomputeInto is CausalSelfAttentionBackwardInto
// without kept probabilities that also writes the forward's output into
// out [B, T, D]: each panel of probabilities recomputed, then its output
// rows and its gradient from it, with the bits of CausalSelfAttentionInto
// and CausalSelfAttentionBackwardInto. It serves a backward that keeps
// only qkv and needs the output too (for the next product's weight
// gradient), at the cost of one forward.
func CausalSelfAttentionRecomputeInto(out, gqkv, grad, qkv *tensor.Tensor, heads int, work *AttentionWork) {
	const op = "CausalSelfAttentionRecomputeInto"
	pl := planAttentionBackward(op, grad, qkv, nil, heads)
	checkAttn(op, "out", out, qkv, pl.b, pl.t, pl.d)
	checkAttn(op, "gqkv", gqkv, qkv, pl.b, pl.t, 3*pl.d)
	attentionBackwardInto(&pl, gqkv, grad, qkv, nil, nil, out, orNew(work))
}

// planAttentionBackward checks a backward's arguments and plans it.
func planAttentionBackward(op string, grad, qkv, probs *tensor.Tensor, heads int) attnPlan {
	pl := planAttention(op, qkv, heads)
	checkAttn(op, "grad", grad, qkv, pl.b, pl.t, pl.d)
	if probs != nil {
		checkAttn(op, "probs", probs, qkv, pl.b, pl.heads, pl.t, pl.t)
	}
	return pl
}

// attentionBackwardInto runs the backward from probs, from stats, or with
// both nil recomputing the probabilities, and with out set writing the
// forward's output too.
func attentionBackwardInto(pl *attnPlan, gqkv, grad, qkv, probs, stats, out *tensor.Tensor, work *AttentionWork) {
	if qkv.DType() == tensor.Float32 {
		attentionBackward(pl, work.Threads, products{work.BF16, work.Arithmetic}, &work.f32, gqkv.Data32(), grad.Data32(), qkv.Data32(), data32(probs), data64(stats), data32(out))
	} else {
		attentionBackward(pl, work.Threads, products{}, &work.f64, gqkv.Data64(), grad.Data64(), qkv.Data64(), data64(probs), data64(stats), data64(out))
	}
}

func attentionBackward[T float](pl *attnPlan, threads int, pr products, work *attnWork[T], gqkv, grad, qkv, probs []T, stats []float64, out []T) {
	if pl.b*pl.t == 0 {
		return
	}
	budget, parts, inner := attnSplit(pl, threads)
	ds := panels(&work.ds, parts, pl.t)
	var ps []T
	if probs == nil {
		ps = panels(&work.ps, parts, pl.t)
	}
	t := &work.bwd
	*t = attnBackward[T]{pl: *pl, ds: ds, ps: ps, stats: stats, out: out, gqkv: gqkv, grad: grad, qkv: qkv, probs: probs, parts: parts, threads: inner, pr: pr}
	par.Do(budget, parts, t)
	*t = attnBackward[T]{}
}

type attnBackward[T float] struct {
	pl                         attnPlan
	ds, gqkv, grad, qkv, probs []T
	ps                         []T       // per part, recomputed probabilities when probs is nil
	stats                      []float64 // the forward's statistics, or nil
	out                        []T       // recomputing: the forward's output, written too
	parts, threads             int
	pr                         products
}

// Part runs its pairs a panel of rows at a time, as FlashAttention-2's
// backward with row panels: the panel's probabilities (kept or
// recomputed), dP = dO·Vᵀ, dS from it, dQ = dS·K for the panel's rows, and
// the panel's share of dK = dSᵀ·Q and dV = Pᵀ·dO added into keys [0, i1).
// The sums over the panels run in a fixed order, bottom to top, so the
// bits depend on T alone.
func (b *attnBackward[T]) Part(q int) {
	pl := &b.pl
	n, ld, tt, hd := pl.b*pl.heads, 3*pl.d, pl.t, pl.hd
	ds := b.ds[q*attnBlock*tt : (q+1)*attnBlock*tt]
	for p, end := par.Bound(q, b.parts, n, 1), par.Bound(q+1, b.parts, n, 1); p < end; p++ {
		qm, km, vm := pairQKV(pl, b.qkv, p)
		gq, gk, gv := pairQKV(pl, b.gqkv, p)
		off := (p/pl.heads)*tt*pl.d + (p%pl.heads)*hd
		do := b.grad[off:]
		// Bottom panel first: its keys [0, T) are all the keys, so its
		// products write dK and dV (beta 0) and the panels above add
		// into them, with no pass zeroing them first.
		last := (tt - 1) / attnBlock * attnBlock
		for i0 := last; i0 >= 0; i0 -= attnBlock {
			i1 := min(tt, i0+attnBlock)
			beta := 1.0
			if i0 == last {
				beta = 0
			}
			rows := i1 - i0
			pm := panel(b.probs, b.ps, p, q, i0, tt)
			switch {
			case b.probs != nil:
			case b.stats != nil:
				probsFromStats(b.threads, b.pr, pl, i0, i1, qm, km, pm, rowStats(b.stats, p, i0, tt))
			default:
				probsPanel(b.threads, b.pr, pl, i0, i1, qm, km, pm, nil)
				if b.out != nil { // as the forward does
					attnGemm(b.threads, b.pr, false, false, rows, hd, i1, 1, pm, tt, vm, ld, 0, b.out[off+i0*pl.d:], pl.d)
				}
			}
			attnGemm(b.threads, b.pr, false, true, rows, i1, hd, 1, do[i0*pl.d:], pl.d, vm, ld, 0, ds, tt)
			for r := range rows {
				softmaxCausalBackward(ds[r*tt:r*tt+i1], pm[r*tt:], i0+r+1, pl.scale)
			}
			attnGemm(b.threads, b.pr, false, false, rows, hd, i1, 1, ds, tt, km, ld, 0, gq[i0*ld:], ld)
			attnGemm(b.threads, b.pr, true, false, i1, hd, rows, 1, ds, tt, qm[i0*ld:], ld, beta, gk, ld)
			attnGemm(b.threads, b.pr, true, false, i1, hd, rows, 1, pm, tt, do[i0*pl.d:], pl.d, beta, gv, ld)
		}
	}
}

// softmaxCausalBackward turns d, dP in a row of the scores, into the
// gradient of the raw scores, scale·p⊙(dP − Σ dP⊙p) in its first n
// elements and zeros after, computed in float64 and rounded once.
func softmaxCausalBackward[T float](d, p []T, n int, scale float64) {
	x, y := d[:n], p[:n]
	dot := rowDot(x, y)
	if x32, ok := any(x).([]float32); ok {
		vec.SoftmaxGrad(x32, any(y).([]float32), scale, dot)
	} else {
		for j, v := range x {
			x[j] = T(scale * float64(y[j]) * (float64(v) - dot))
		}
	}
	clear(d[n:])
}

// attnGemm is C = alpha·op(A)·op(B) + beta·C on the project's GEMM for
// either float type (beta = 0 writes C without reading it); pr (bf16
// products) bounds the float32 GEMM only.
func attnGemm[T float](threads int, pr products, transA, transB bool, m, n, k int, alpha float64, a []T, lda int, b []T, ldb int, beta float64, c []T, ldc int) {
	switch a := any(a).(type) {
	case []float32:
		if pr.bf16 {
			gemm.Threads(threads).SgemmBF16(pr.ar, transA, transB, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
			return
		}
		gemm.Threads(threads).Sgemm(transA, transB, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		gemm.Dgemm(transA, transB, m, n, k, alpha, a, lda, any(b).([]float64), ldb, beta, any(c).([]float64), ldc)
	}
}
