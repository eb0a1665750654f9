package ops

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/internal/gemm"
	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/tensor"
)

// convPlan is the shape bookkeeping of one Conv2d, shared by forward and backward.
type convPlan struct {
	n, c, h, w  int // input
	f, kh, kw   int // filters
	stride, pad int
	oh, ow      int // output plane
	k, p        int // im2col rows (c·kh·kw) and columns (oh·ow)
}

// planConv checks x, w and b (b may be nil) and derives the output geometry.
// Messages are formatted only on failure: a steady layer plans every call.
func planConv(op string, x, w, b *tensor.Tensor, stride, padding int) convPlan {
	desc := func() string {
		if b != nil {
			return fmt.Sprintf("x %v, w %v and b %v", x.Shape(), w.Shape(), b.Shape())
		}
		return fmt.Sprintf("x %v and w %v", x.Shape(), w.Shape())
	}
	if b != nil {
		dtypeOf(op, x, w, b)
	} else {
		dtypeOf(op, x, w)
	}
	if x.Dims() != 4 || w.Dims() != 4 {
		fail(op, "%s do not fit: x needs 4 axes [N C H W] and w 4 axes [F C KH KW]", desc())
	}
	pl := convPlan{n: x.Dim(0), c: x.Dim(1), h: x.Dim(2), w: x.Dim(3), f: w.Dim(0), kh: w.Dim(2), kw: w.Dim(3),
		stride: stride, pad: padding}
	if stride < 1 {
		fail(op, "stride %d is not positive (%s)", stride, desc())
	}
	if padding < 0 {
		fail(op, "padding %d is negative (%s)", padding, desc())
	}
	if w.Dim(1) != pl.c {
		fail(op, "%s do not fit: x has %d channels, w %d", desc(), pl.c, w.Dim(1))
	}
	if b != nil && (b.Dims() != 1 || b.Dim(0) != pl.f) {
		fail(op, "%s do not fit: b needs shape [%d], one element per filter", desc(), pl.f)
	}
	if pl.kh == 0 || pl.kw == 0 {
		fail(op, "%s do not fit: the kernel %d×%d is empty", desc(), pl.kh, pl.kw)
	}
	// Keep H+2·padding from overflowing before comparing it with the kernel.
	if padding > (math.MaxInt/2-max(pl.h, pl.w))/2 {
		fail(op, "padding %d is too large (%s)", padding, desc())
	}
	ph, pw := pl.h+2*padding, pl.w+2*padding
	if ph < pl.kh || pw < pl.kw {
		fail(op, "%s do not fit: the kernel %d×%d is larger than the padded input %d×%d (padding %d)",
			desc(), pl.kh, pl.kw, ph, pw, padding)
	}
	pl.oh, pl.ow = (ph-pl.kh)/stride+1, (pw-pl.kw)/stride+1
	// Huge paddings must not overflow the sizes of the im2col buffer or the output.
	if !fits(pl.c, pl.kh, pl.kw, pl.oh, pl.ow) || !fits(pl.n, pl.f, pl.oh, pl.ow) {
		fail(op, "%s with stride %d and padding %d give an output [%d %d %d %d] too large to hold",
			desc(), stride, padding, pl.n, pl.f, pl.oh, pl.ow)
	}
	pl.k, pl.p = pl.c*pl.kh*pl.kw, pl.oh*pl.ow
	return pl
}

// outShape returns the output shape, for messages and new outputs.
func (pl *convPlan) outShape() []int { return []int{pl.n, pl.f, pl.oh, pl.ow} }

// fits reports whether the product of ds stays below MaxInt/2.
func fits(ds ...int) bool {
	n := 1
	for _, d := range ds {
		if d != 0 && n > math.MaxInt/2/d {
			return false
		}
		n *= d
	}
	return true
}

// ConvWork is the scratch memory of Conv2dInto and Conv2dBackwardInto (the
// samples' im2col matrices and weight gradients), kept from call to call so
// that calls after the first of their size allocate nothing. The zero value
// is ready; a ConvWork serves one call at a time.
type ConvWork struct {
	// BF16 runs the float32 products on gemm's bf16 entry points (mixed
	// precision: operands rounded to bf16, sums in float32), their sums in
	// Arithmetic's steps; float64 ignores both.
	BF16       bool
	Arithmetic Arithmetic

	f32 convWork[float32]
	f64 convWork[float64]
}

// convWork is a ConvWork's memory for one float type.
type convWork[T float] struct {
	cols []T       // one im2col matrix of a group of samples per part of a parallel loop
	tmp  []T       // per part, a group's outputs (forward) or output gradients (backward) side by side
	gwN  []T       // one weight gradient per sample of a group
	gbN  []float64 // one bias gradient per sample of a group, its rows' sums
	gw   []T       // the samples' weight gradients summed, before adding
	gb   []float64 // the bias gradient, summed in float64
	fwd  convForward[T]
	bwd  convBackward[T]
}

// grow returns s resliced to n elements, reallocated when too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Conv2d returns the 2-D cross-correlation of x [N, C, H, W] with filters
// w [F, C, KH, KW] plus the bias b [F] (nil for none), as torch.nn.functional.conv2d
// with one stride and one padding for both axes: the result is [N, F, OH, OW]
// with OH = ⌊(H+2·padding−KH)/stride⌋+1, and likewise OW. Each sample is unfolded
// (im2col) into a [C·KH·KW, OH·OW] matrix and multiplied by w on the GEMM.
func Conv2d(x, w, b *tensor.Tensor, stride, padding int) *tensor.Tensor {
	pl := planConv("Conv2d", x, w, b, stride, padding)
	out := tensor.Zeros(x.DType(), pl.outShape()...)
	conv2dInto(&pl, out, x, w, b, new(ConvWork))
	return out
}

// Conv2dInto writes Conv2d(x, w, b, stride, padding) into dst, which must have
// its dtype and shape and may not overlap x, and returns dst. work keeps the
// scratch memory from call to call; nil uses a new one.
func Conv2dInto(dst, x, w, b *tensor.Tensor, stride, padding int, work *ConvWork) *tensor.Tensor {
	const op = "Conv2dInto"
	pl := planConv(op, x, w, b, stride, padding)
	checkDst(op, "dst", dst, x, pl.n, pl.f, pl.oh, pl.ow)
	if work == nil {
		work = new(ConvWork)
	}
	return conv2dInto(&pl, dst, x, w, b, work)
}

// checkDst panics unless dst has like's dtype and the given shape.
func checkDst(op, name string, dst, like *tensor.Tensor, shape ...int) {
	if dst.DType() != like.DType() || !dst.HasShape(shape...) {
		fail(op, "%s %v %v is not %v %v", name, dst.DType(), dst.Shape(), like.DType(), append([]int(nil), shape...))
	}
}

func conv2dInto(pl *convPlan, out, x, w, b *tensor.Tensor, work *ConvWork) *tensor.Tensor {
	if x.DType() == tensor.Float32 {
		var bias []float32
		if b != nil {
			bias = b.Data32()
		}
		conv2d(pl, &work.f32, products{work.BF16, work.Arithmetic}, out.Data32(), x.Data32(), w.Data32(), bias)
	} else {
		var bias []float64
		if b != nil {
			bias = b.Data64()
		}
		conv2d(pl, &work.f64, products{}, out.Data64(), x.Data64(), w.Data64(), bias)
	}
	return out
}

// groupElems bounds a group's im2col matrix: the samples of a group are
// unfolded side by side, [C·KH·KW, G·OH·OW], and go through one GEMM, so
// that the filters are packed once a group and the GEMM's columns are many
// (a column's sum does not depend on the others: the bits are those of one
// GEMM a sample). The bound keeps the matrix in L2.
const groupElems = 1 << 18

// group returns how many samples of a part go through one GEMM: one where
// a sample's outputs are many already (then its GEMM writes them in place).
func (pl *convPlan) group(samples int) int {
	if pl.p >= groupMinColumns {
		return 1
	}
	return max(1, min(samples, groupElems/max(1, pl.k*pl.p)))
}

// groupMinColumns is the output plane from which samples are not grouped.
const groupMinColumns = 512

// conv2d runs the samples in parallel parts, each on its own im2col buffer
// and a group of samples at a time; a sample's result does not depend on
// which part or group computes it.
func conv2d[T float](pl *convPlan, work *convWork[T], pr products, out, x, w, b []T) {
	threads := par.Budget(0)
	parts := min(threads, pl.n)
	g := pl.group((pl.n + parts - 1) / max(1, parts))
	work.cols = grow(work.cols, parts*pl.k*g*pl.p)
	if g > 1 {
		work.tmp = grow(work.tmp, parts*pl.f*g*pl.p)
	}
	t := &work.fwd
	*t = convForward[T]{pl: *pl, cols: work.cols, tmp: work.tmp, out: out, x: x, w: w, b: b, parts: parts, group: g, pr: pr}
	t.threads = max(1, threads/min(threads, max(1, pl.n)))
	par.Do(threads, parts, t)
	*t = convForward[T]{} // holds no memory of the caller's
}

type convForward[T float] struct {
	pl                   convPlan
	cols, tmp, out, x, w []T
	b                    []T
	parts, threads       int // parts of the samples; GEMM budget per part
	group                int // samples a GEMM
	pr                   products
}

func (t *convForward[T]) Part(q int) {
	pl := &t.pl
	gp := t.group * pl.p
	col := t.cols[q*pl.k*gp : (q+1)*pl.k*gp]
	xn, on := pl.c*pl.h*pl.w, pl.f*pl.p
	for i0, end := par.Bound(q, t.parts, pl.n, 1), par.Bound(q+1, t.parts, pl.n, 1); i0 < end; i0 += t.group {
		g := min(t.group, end-i0)
		for s := range g {
			im2col(pl, col[s*pl.p:], g*pl.p, t.x[(i0+s)*xn:(i0+s+1)*xn])
		}
		if g == 1 { // in place
			o := t.out[i0*on : (i0+1)*on]
			gemmT(t.threads, t.pr, false, false, pl.f, pl.p, pl.k, t.w, pl.k, col, pl.p, 0, o, pl.p)
			for f := range pl.f {
				if t.b != nil {
					addConst(o[f*pl.p:(f+1)*pl.p], t.b[f])
				}
			}
			continue
		}
		tmp := t.tmp[q*pl.f*gp : (q+1)*pl.f*gp]
		gemmT(t.threads, t.pr, false, false, pl.f, g*pl.p, pl.k, t.w, pl.k, col, g*pl.p, 0, tmp, g*pl.p)
		for s := range g {
			o := t.out[(i0+s)*on : (i0+s+1)*on]
			for f := range pl.f {
				row := o[f*pl.p : (f+1)*pl.p]
				copy(row, tmp[f*g*pl.p+s*pl.p:])
				if t.b != nil {
					addConst(row, t.b[f])
				}
			}
		}
	}
}

// Conv2dBackward returns the gradients of Conv2d(x, w, b, stride, padding) with
// respect to x, w and b, given grad [N, F, OH, OW]. gb has shape [F] whether or
// not the forward had a bias. gw sums the samples' contributions in sample order,
// so its bits do not depend on the thread count; gx is col2im of wᵀ·grad.
func Conv2dBackward(grad, x, w *tensor.Tensor, stride, padding int) (gx, gw, gb *tensor.Tensor) {
	const op = "Conv2dBackward"
	pl := planConvBackward(op, grad, x, w, stride, padding)
	gx = tensor.Zeros(x.DType(), x.Shape()...)
	gw = tensor.Zeros(x.DType(), w.Shape()...)
	gb = tensor.Zeros(x.DType(), pl.f)
	conv2dBackwardInto(&pl, gx, gw, gb, grad, x, w, false, new(ConvWork))
	return gx, gw, gb
}

// Conv2dBackwardInto is Conv2dBackward into given tensors: it writes the
// input gradient into gx (nil: not computed) and adds the weight and bias
// gradients, each summed over the samples from zero first, into gw and gb
// (either may be nil), as a layer accumulates its gradients. work keeps the
// scratch memory from call to call; nil uses a new one.
func Conv2dBackwardInto(gx, gw, gb, grad, x, w *tensor.Tensor, stride, padding int, work *ConvWork) {
	const op = "Conv2dBackwardInto"
	pl := planConvBackward(op, grad, x, w, stride, padding)
	if gx != nil {
		checkDst(op, "gx", gx, x, pl.n, pl.c, pl.h, pl.w)
	}
	if gw != nil {
		checkDst(op, "gw", gw, x, pl.f, pl.c, pl.kh, pl.kw)
	}
	if gb != nil {
		checkDst(op, "gb", gb, x, pl.f)
	}
	if work == nil {
		work = new(ConvWork)
	}
	conv2dBackwardInto(&pl, gx, gw, gb, grad, x, w, true, work)
}

// planConvBackward checks a backward's arguments and plans it.
func planConvBackward(op string, grad, x, w *tensor.Tensor, stride, padding int) convPlan {
	dtypeOf(op, grad, x, w)
	pl := planConv(op, x, w, nil, stride, padding)
	if !grad.HasShape(pl.n, pl.f, pl.oh, pl.ow) {
		fail(op, "grad %v does not match the output shape %v of x %v and w %v (stride %d, padding %d)",
			grad.Shape(), pl.outShape(), x.Shape(), w.Shape(), stride, padding)
	}
	return pl
}

// conv2dBackwardInto writes gx, and writes (add false) or adds (add true)
// the summed gw and gb; a nil destination is skipped.
func conv2dBackwardInto(pl *convPlan, gx, gw, gb, grad, x, w *tensor.Tensor, add bool, work *ConvWork) {
	if x.DType() == tensor.Float32 {
		conv2dBackward(pl, &work.f32, products{work.BF16, work.Arithmetic}, data32(gx), data32(gw), data32(gb), grad.Data32(), x.Data32(), w.Data32(), add)
	} else {
		conv2dBackward(pl, &work.f64, products{}, data64(gx), data64(gw), data64(gb), grad.Data64(), x.Data64(), w.Data64(), add)
	}
}

// data32 and data64 return t's storage, or nil for a nil t.
func data32(t *tensor.Tensor) []float32 {
	if t == nil {
		return nil
	}
	return t.Data32()
}

func data64(t *tensor.Tensor) []float64 {
	if t == nil {
		return nil
	}
	return t.Data64()
}

// conv2dBackward computes the samples' gx and weight gradients in parallel,
// a group at a time, and sums the weight gradients in sample order: the
// group size bounds memory and, like the thread count, never the bits. The
// sums of gw and gb are then written into them, or added (add).
func conv2dBackward[T float](pl *convPlan, work *convWork[T], pr products, gx, gw, gb, grad, x, w []T, add bool) {
	fk := pl.f * pl.k
	var sums []float64 // the bias gradient: each sample's row sums, added in sample order
	if gb != nil {
		sums = grow(work.gb, pl.f)
		work.gb = sums
		clear(sums)
		defer writeBias(gb, sums, add)
	}
	if gw == nil && gx == nil || pl.n == 0 || fk == 0 {
		conv2dBackwardBias(pl, sums, gx, gw, grad, add)
		return
	}
	// The sum goes straight into gw when written; when added, it is made
	// apart first, so that gw gets each call's sum in one rounding.
	sum := gw
	if add && gw != nil {
		work.gw = grow(work.gw, fk)
		sum = work.gw
	}
	threads := par.Budget(0)
	group := min(pl.n, max(1, convGroupElems/fk))
	parts := min(threads, group)
	cg := pl.group((group + parts - 1) / parts) // samples of a part through one GEMM
	work.cols = grow(work.cols, parts*pl.k*cg*pl.p)
	if gx != nil && cg > 1 {
		work.tmp = grow(work.tmp, parts*pl.f*cg*pl.p)
	}
	if gw != nil {
		work.gwN = grow(work.gwN, group*fk)
	}
	if gb != nil {
		work.gbN = grow(work.gbN, group*pl.f)
	}
	t := &work.bwd
	*t = convBackward[T]{pl: *pl, cols: work.cols, tmp: work.tmp, gx: gx, gwN: work.gwN, gbN: work.gbN, grad: grad, x: x, w: w, group: cg, pr: pr}
	if gw == nil {
		t.gwN = nil
	}
	if gb == nil {
		t.gbN = nil
	}
	for g0 := 0; g0 < pl.n; g0 += group {
		gn := min(group, pl.n-g0)
		t.first, t.n, t.parts = g0, gn, min(threads, gn)
		t.threads = max(1, threads/min(threads, gn))
		par.Do(threads, t.parts, t)
		for i := range gn {
			if gb != nil {
				for f, v := range t.gbN[i*pl.f : (i+1)*pl.f] {
					sums[f] += v
				}
			}
			if gw == nil {
				continue
			}
			part := t.gwN[i*fk : (i+1)*fk]
			if g0+i == 0 {
				copy(sum, part)
				continue
			}
			addInto(sum, part)
		}
	}
	*t = convBackward[T]{} // holds no memory of the caller's
	if add && gw != nil {
		addInto(gw, sum)
	}
}

// conv2dBackwardBias is conv2dBackward with no product to run: the bias
// gradient's row sums (into sums, when not nil), and, with no filters or
// no samples, nothing reaching x and a weight gradient of zero.
func conv2dBackwardBias[T float](pl *convPlan, sums []float64, gx, gw, grad []T, add bool) {
	on := pl.f * pl.p
	for i := range pl.n {
		if sums != nil {
			rowSums(sums, grad[i*on:(i+1)*on], pl.p)
		}
	}
	if gw == nil && gx == nil {
		return
	}
	clear(gx) // no filters: no gradient reaches x
	for j := range gw {
		if add {
			gw[j] += 0 // a sum of nothing, added: -0 becomes +0 as ever
		} else {
			gw[j] = 0
		}
	}
}

// writeBias writes (add false) or adds (add true) the float64 sums to gb.
func writeBias[T float](gb []T, sums []float64, add bool) {
	for f, s := range sums {
		if add {
			gb[f] += T(s)
		} else {
			gb[f] = T(s)
		}
	}
}

// rowSums adds to sums[f] the sum of row f of g (rows of p elements), each
// row summed in float64 from zero in order. Eight rows go at once, each its
// own chain of additions, so their latencies overlap.
func rowSums[T float](sums []float64, g []T, p int) {
	f := 0
	for ; f+8 <= len(sums); f += 8 {
		r0 := g[f*p : (f+1)*p]
		r1, r2, r3 := g[(f+1)*p:][:len(r0)], g[(f+2)*p:][:len(r0)], g[(f+3)*p:][:len(r0)]
		r4, r5, r6, r7 := g[(f+4)*p:][:len(r0)], g[(f+5)*p:][:len(r0)], g[(f+6)*p:][:len(r0)], g[(f+7)*p:][:len(r0)]
		var s0, s1, s2, s3, s4, s5, s6, s7 float64
		for j, v := range r0 {
			s0 += float64(v)
			s1 += float64(r1[j])
			s2 += float64(r2[j])
			s3 += float64(r3[j])
			s4 += float64(r4[j])
			s5 += float64(r5[j])
			s6 += float64(r6[j])
			s7 += float64(r7[j])
		}
		sums[f] += s0
		sums[f+1] += s1
		sums[f+2] += s2
		sums[f+3] += s3
		sums[f+4] += s4
		sums[f+5] += s5
		sums[f+6] += s6
		sums[f+7] += s7
	}
	for ; f < len(sums); f++ {
		var s float64
		for _, v := range g[f*p : (f+1)*p] {
			s += float64(v)
		}
		sums[f] += s
	}
}

// addInto sets dst[i] += x[i], on the vector kernel in float32.
func addInto[T float](dst, x []T) {
	if d, ok := any(dst).([]float32); ok {
		vec.Add(d, any(x).([]float32))
		return
	}
	for j, v := range x {
		dst[j] += v
	}
}

// addConst sets dst[i] += c, on the vector kernel in float32.
func addConst[T float](dst []T, c T) {
	if d, ok := any(dst).([]float32); ok {
		vec.AddConst(d, float32(any(c).(float32)))
		return
	}
	for j := range dst {
		dst[j] += c
	}
}

// convGroupElems bounds the per-sample weight gradients held at once.
const convGroupElems = 1 << 22

type convBackward[T float] struct {
	pl              convPlan
	cols, tmp       []T
	gx, gwN         []T       // gwN holds one weight gradient per sample of the group; either may be nil
	gbN             []float64 // the row sums of each sample's grad, or nil
	grad, x, w      []T
	first, n, parts int // the group's first sample and size, and its parts
	threads         int // GEMM budget per part
	group           int // samples of a part through one GEMM
	pr              products
}

func (t *convBackward[T]) Part(q int) {
	pl := &t.pl
	gp := t.group * pl.p
	col := t.cols[q*pl.k*gp : (q+1)*pl.k*gp]
	xn, on, fk := pl.c*pl.h*pl.w, pl.f*pl.p, pl.f*pl.k
	for i0, end := par.Bound(q, t.parts, t.n, 1), par.Bound(q+1, t.parts, t.n, 1); i0 < end; i0 += t.group {
		g := min(t.group, end-i0)
		if t.gbN != nil { // while the GEMM below finds grad in cache
			for k := range g {
				s := t.first + i0 + k
				r := t.gbN[(i0+k)*pl.f:][:pl.f]
				clear(r)
				rowSums(r, t.grad[s*on:(s+1)*on], pl.p)
			}
		}
		if t.gwN != nil {
			for k := range g {
				s := t.first + i0 + k
				im2col(pl, col[k*pl.p:], g*pl.p, t.x[s*xn:(s+1)*xn])
				gemmT(t.threads, t.pr, false, true, pl.f, pl.k, pl.p, t.grad[s*on:(s+1)*on], pl.p, col[k*pl.p:], g*pl.p, 0, t.gwN[(i0+k)*fk:(i0+k+1)*fk], pl.k)
			}
		}
		if t.gx != nil {
			// gx = col2im(wᵀ·grad), the group's gradients side by side; col
			// is free again as the product's destination.
			var b []T // the group's output gradients side by side
			if g == 1 {
				b = t.grad[(t.first+i0)*on : (t.first+i0+1)*on]
			} else {
				b = t.tmp[q*pl.f*gp : (q+1)*pl.f*gp]
				for k := range g {
					s := t.first + i0 + k
					for f := range pl.f {
						copy(b[f*g*pl.p+k*pl.p:][:pl.p], t.grad[s*on+f*pl.p:][:pl.p])
					}
				}
			}
			gemmT(t.threads, t.pr, true, false, pl.k, g*pl.p, pl.f, t.w, pl.k, b, g*pl.p, 0, col, g*pl.p)
			for k := range g {
				s := t.first + i0 + k
				gx := t.gx[s*xn : (s+1)*xn]
				clear(gx)
				col2im(pl, gx, col[k*pl.p:], g*pl.p)
			}
		}
	}
}

// span returns the output positions [lo, hi) whose input index o·stride−pad+j
// falls inside [0, in).
func span(j, stride, pad, in, out int) (lo, hi int) {
	if d := pad - j; d > 0 {
		lo = min(out, (d+stride-1)/stride)
	}
	if e := in - 1 + pad - j; e >= 0 {
		hi = min(out, e/stride+1)
	}
	return lo, max(lo, hi)
}

// im2col writes one sample x [C, H, W] as col [C·KH·KW, OH·OW], its rows ld
// apart: row (c, i, j) holds x[c, oh·s−p+i, ow·s−p+j] for every output
// position, 0 in the padding.
func im2col[T float](pl *convPlan, col []T, ld int, x []T) {
	if pl.stride == 1 && pl.ow == pl.w {
		im2colSame(pl, col, ld, x)
		return
	}
	im2colRows(pl, col, ld, x)
}

// colWalk is a position in col [C·KH·KW, OH·OW]: row r, which is (c, i, j).
// Loops over the rows step it with next, which inlines: no call a row.
type colWalk struct{ r, c, i, j int }

// next moves w to the following row, j fastest.
func (w *colWalk) next(pl *convPlan) {
	w.r++
	if w.j++; w.j == pl.kw {
		w.j = 0
		if w.i++; w.i == pl.kh {
			w.i = 0
			w.c++
		}
	}
}

// im2colRows is im2col a row of the output at a time, for any geometry.
func im2colRows[T float](pl *convPlan, col []T, ld int, x []T) {
	s, hw := pl.stride, pl.h*pl.w
	for w := (colWalk{}); w.r < pl.k; w.next(pl) {
		dst, plane, i, j := col[w.r*ld:][:pl.p], x[w.c*hw:][:hw], w.i, w.j
		hlo, hhi := span(i, s, pl.pad, pl.h, pl.oh)
		wlo, whi := span(j, s, pl.pad, pl.w, pl.ow)
		clear(dst[:hlo*pl.ow])
		clear(dst[hhi*pl.ow:])
		for oh := hlo; oh < hhi; oh++ {
			row := dst[oh*pl.ow : (oh+1)*pl.ow]
			src := plane[(oh*s-pl.pad+i)*pl.w:][:pl.w]
			clear(row[:wlo])
			clear(row[whi:])
			iw := wlo*s - pl.pad + j
			if s == 1 {
				copy(row[wlo:whi], src[iw:])
				continue
			}
			for ow := wlo; ow < whi; ow++ {
				row[ow] = src[iw]
				iw += s
			}
		}
	}
}

// col2im adds col [C·KH·KW, OH·OW], its rows ld apart, back into gx [C, H,
// W], the adjoint of im2col: padding positions are dropped. col is scratch:
// it may be changed.
func col2im[T float](pl *convPlan, gx, col []T, ld int) {
	if pl.stride == 1 && pl.ow == pl.w {
		col2imSame(pl, gx, col, ld)
		return
	}
	col2imRows(pl, gx, col, ld)
}

// col2imRows is col2im a row of the output at a time, for any geometry.
func col2imRows[T float](pl *convPlan, gx, col []T, ld int) {
	s, hw := pl.stride, pl.h*pl.w
	for w := (colWalk{}); w.r < pl.k; w.next(pl) {
		src, plane, i, j := col[w.r*ld:][:pl.p], gx[w.c*hw:][:hw], w.i, w.j
		hlo, hhi := span(i, s, pl.pad, pl.h, pl.oh)
		wlo, whi := span(j, s, pl.pad, pl.w, pl.ow)
		for oh := hlo; oh < hhi; oh++ {
			row := src[oh*pl.ow : (oh+1)*pl.ow]
			dst := plane[(oh*s-pl.pad+i)*pl.w:][:pl.w]
			iw := wlo*s - pl.pad + j
			if s == 1 {
				vs := row[wlo:whi]
				d := dst[iw:][:len(vs)]
				for k, v := range vs {
					d[k] += v
				}
				continue
			}
			for _, v := range row[wlo:whi] {
				dst[iw] += v
				iw += s
			}
		}
	}
}

// At stride 1 with the output as wide as the input ("same" padding), the
// output positions of a row of col read the input plane at a fixed offset,
// (i−p)·W + (j−p): the valid output rows of a row of col are one contiguous
// copy of the plane, and only the |j−p| positions at the edge of each row,
// which the copy takes from the next or last row, belong to the padding.

// sameSpan returns the part [a, b) of col row (i, j)'s valid output rows that
// reads inside the plane, at offset delta, and the padding columns d = j−p.
func sameSpan(pl *convPlan, i, j int) (hlo, hhi, a, b, delta, d int) {
	hlo, hhi = span(i, 1, pl.pad, pl.h, pl.oh)
	d = j - pl.pad
	delta = (i-pl.pad)*pl.w + d
	a = min(max(hlo*pl.ow, -delta), hhi*pl.ow)
	b = max(a, min(hhi*pl.ow, pl.h*pl.w-delta))
	return hlo, hhi, a, b, delta, d
}

// edge zeroes the positions of rows [hlo, hhi) of dst that lie in the
// padding columns: the first −d of each row for d < 0, the last d for d > 0.
func edge[T float](dst []T, ow, hlo, hhi, d int) {
	lo, hi := 0, ow // the padding columns of each row: [lo, hi)
	switch {
	case d < 0:
		hi = min(ow, -d)
	case d > 0:
		lo = max(0, ow-d)
	default:
		return
	}
	for oh := hlo; oh < hhi; oh++ {
		row := dst[oh*ow : (oh+1)*ow]
		for q := lo; q < hi; q++ {
			row[q] = 0
		}
	}
}

// im2colSame is im2col at stride 1 with same-width output.
func im2colSame[T float](pl *convPlan, col []T, ld int, x []T) {
	hw := pl.h * pl.w
	for w := (colWalk{}); w.r < pl.k; w.next(pl) {
		dst, plane := col[w.r*ld:][:pl.p], x[w.c*hw:][:hw]
		hlo, hhi, a, b, delta, d := sameSpan(pl, w.i, w.j)
		clear(dst[:a])
		if a < b {
			copy(dst[a:b], plane[a+delta:b+delta])
		}
		clear(dst[b:])
		edge(dst, pl.ow, hlo, hhi, d)
	}
}

// col2imSame is col2im at stride 1 with same-width output. The padding
// positions of each row of col are zeroed first, so that one contiguous add
// takes the rest: those positions then add +0 to an element of the next or
// last row, which leaves it as it was (gx never holds -0: it starts at +0
// and sums GEMM results, which are never -0).
func col2imSame[T float](pl *convPlan, gx, col []T, ld int) {
	hw := pl.h * pl.w
	for w := (colWalk{}); w.r < pl.k; w.next(pl) {
		src, plane := col[w.r*ld:][:pl.p], gx[w.c*hw:][:hw]
		hlo, hhi, a, b, delta, d := sameSpan(pl, w.i, w.j)
		if a < b {
			edge(src, pl.ow, hlo, hhi, d)
			addInto(plane[a+delta:b+delta], src[a:b])
		}
	}
}

// gemmT is C = op(A)·op(B) + beta·C on the project's GEMM for either float
// type; threads and pr (bf16 products) bound the float32 GEMM only.
func gemmT[T float](threads int, pr products, transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	switch a := any(a).(type) {
	case []float32:
		if pr.bf16 {
			gemm.Threads(threads).SgemmBF16(pr.ar, transA, transB, m, n, k, 1, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
			return
		}
		gemm.Threads(threads).Sgemm(transA, transB, m, n, k, 1, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		gemm.Dgemm(transA, transB, m, n, k, 1, a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}
