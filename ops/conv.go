package ops

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/internal/gemm"
	"github.com/pipetrain/pipetrain/internal/par"
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
	f32 convWork[float32]
	f64 convWork[float64]
}

// convWork is a ConvWork's memory for one float type.
type convWork[T float] struct {
	cols []T       // one im2col matrix per part of a parallel loop
	gwN  []T       // one weight gradient per sample of a group
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
		conv2d(pl, &work.f32, out.Data32(), x.Data32(), w.Data32(), bias)
	} else {
		var bias []float64
		if b != nil {
			bias = b.Data64()
		}
		conv2d(pl, &work.f64, out.Data64(), x.Data64(), w.Data64(), bias)
	}
	return out
}

// conv2d runs the samples in parallel parts, each on its own im2col buffer;
// a sample's result does not depend on which part computes it.
func conv2d[T float](pl *convPlan, work *convWork[T], out, x, w, b []T) {
	threads := par.Budget(0)
	parts := min(threads, pl.n)
	work.cols = grow(work.cols, parts*pl.k*pl.p)
	t := &work.fwd
	*t = convForward[T]{pl: *pl, cols: work.cols, out: out, x: x, w: w, b: b, parts: parts}
	t.threads = max(1, threads/min(threads, max(1, pl.n)))
	par.Do(threads, parts, t)
	*t = convForward[T]{} // holds no memory of the caller's
}

type convForward[T float] struct {
	pl              convPlan
	cols, out, x, w []T
	b               []T
	parts, threads  int // parts of the samples; GEMM budget per part
}

func (t *convForward[T]) Part(q int) {
	pl := &t.pl
	kp := pl.k * pl.p
	col := t.cols[q*kp : (q+1)*kp]
	xn, on := pl.c*pl.h*pl.w, pl.f*pl.p
	for i := par.Bound(q, t.parts, pl.n, 1); i < par.Bound(q+1, t.parts, pl.n, 1); i++ {
		im2col(pl, col, t.x[i*xn:(i+1)*xn])
		o := t.out[i*on : (i+1)*on]
		gemmT(t.threads, false, false, pl.f, pl.p, pl.k, t.w, pl.k, col, pl.p, 0, o, pl.p)
		if t.b != nil {
			for f := range pl.f {
				row := o[f*pl.p : (f+1)*pl.p]
				for j := range row {
					row[j] += t.b[f]
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
		conv2dBackward(pl, &work.f32, data32(gx), data32(gw), data32(gb), grad.Data32(), x.Data32(), w.Data32(), add)
	} else {
		conv2dBackward(pl, &work.f64, data64(gx), data64(gw), data64(gb), grad.Data64(), x.Data64(), w.Data64(), add)
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
func conv2dBackward[T float](pl *convPlan, work *convWork[T], gx, gw, gb, grad, x, w []T, add bool) {
	on, fk := pl.f*pl.p, pl.f*pl.k
	if gb != nil {
		sums := grow(work.gb, pl.f)
		work.gb = sums
		clear(sums)
		for i := range pl.n {
			g := grad[i*on : (i+1)*on]
			for f := range pl.f {
				var s float64
				for _, v := range g[f*pl.p : (f+1)*pl.p] {
					s += float64(v)
				}
				sums[f] += s
			}
		}
		for f, s := range sums {
			if add {
				gb[f] += T(s)
			} else {
				gb[f] = T(s)
			}
		}
	}
	if gw == nil && gx == nil {
		return
	}
	if pl.n == 0 || fk == 0 {
		clear(gx) // no filters: no gradient reaches x
		for j := range gw {
			if add {
				gw[j] += 0 // a sum of nothing, added: -0 becomes +0 as ever
			} else {
				gw[j] = 0
			}
		}
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
	work.cols = grow(work.cols, parts*pl.k*pl.p)
	if gw != nil {
		work.gwN = grow(work.gwN, group*fk)
	}
	t := &work.bwd
	*t = convBackward[T]{pl: *pl, cols: work.cols, gx: gx, gwN: work.gwN, grad: grad, x: x, w: w}
	if gw == nil {
		t.gwN = nil
	}
	for g0 := 0; g0 < pl.n; g0 += group {
		gn := min(group, pl.n-g0)
		t.first, t.n, t.parts = g0, gn, min(threads, gn)
		t.threads = max(1, threads/min(threads, gn))
		par.Do(threads, t.parts, t)
		if gw == nil {
			continue
		}
		for i := range gn {
			part := t.gwN[i*fk : (i+1)*fk]
			if g0+i == 0 {
				copy(sum, part)
				continue
			}
			for j, v := range part {
				sum[j] += v
			}
		}
	}
	*t = convBackward[T]{} // holds no memory of the caller's
	if add && gw != nil {
		for j, v := range sum {
			gw[j] += v
		}
	}
}

// convGroupElems bounds the per-sample weight gradients held at once.
const convGroupElems = 1 << 22

type convBackward[T float] struct {
	pl              convPlan
	cols            []T
	gx, gwN         []T // gwN holds one weight gradient per sample of the group; either may be nil
	grad, x, w      []T
	first, n, parts int // the group's first sample and size, and its parts
	threads         int // GEMM budget per part
}

func (t *convBackward[T]) Part(q int) {
	pl := &t.pl
	kp := pl.k * pl.p
	col := t.cols[q*kp : (q+1)*kp]
	xn, on, fk := pl.c*pl.h*pl.w, pl.f*pl.p, pl.f*pl.k
	for i := par.Bound(q, t.parts, t.n, 1); i < par.Bound(q+1, t.parts, t.n, 1); i++ {
		s := t.first + i
		g := t.grad[s*on : (s+1)*on]
		if t.gwN != nil {
			im2col(pl, col, t.x[s*xn:(s+1)*xn])
			gemmT(t.threads, false, true, pl.f, pl.k, pl.p, g, pl.p, col, pl.p, 0, t.gwN[i*fk:(i+1)*fk], pl.k)
		}
		if t.gx != nil {
			// gx = col2im(wᵀ·g); col is free again as the product's destination.
			gemmT(t.threads, true, false, pl.k, pl.p, pl.f, t.w, pl.k, g, pl.p, 0, col, pl.p)
			gx := t.gx[s*xn : (s+1)*xn]
			clear(gx)
			col2im(pl, gx, col)
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

// im2col writes one sample x [C, H, W] as col [C·KH·KW, OH·OW]: row (c, i, j)
// holds x[c, oh·s−p+i, ow·s−p+j] for every output position, 0 in the padding.
func im2col[T float](pl *convPlan, col, x []T) {
	s, r := pl.stride, 0
	for c := range pl.c {
		plane := x[c*pl.h*pl.w : (c+1)*pl.h*pl.w]
		for i := range pl.kh {
			hlo, hhi := span(i, s, pl.pad, pl.h, pl.oh)
			for j := range pl.kw {
				dst := col[r*pl.p : (r+1)*pl.p]
				r++
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
	}
}

// col2im adds col [C·KH·KW, OH·OW] back into gx [C, H, W], the adjoint of
// im2col: padding positions are dropped.
func col2im[T float](pl *convPlan, gx, col []T) {
	s, r := pl.stride, 0
	for c := range pl.c {
		plane := gx[c*pl.h*pl.w : (c+1)*pl.h*pl.w]
		for i := range pl.kh {
			hlo, hhi := span(i, s, pl.pad, pl.h, pl.oh)
			for j := range pl.kw {
				src := col[r*pl.p : (r+1)*pl.p]
				r++
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
	}
}

// gemmT is C = op(A)·op(B) + beta·C on the project's GEMM for either float
// type; threads bounds the float32 GEMM only.
func gemmT[T float](threads int, transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	switch a := any(a).(type) {
	case []float32:
		gemm.Threads(threads).Sgemm(transA, transB, m, n, k, 1, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		gemm.Dgemm(transA, transB, m, n, k, 1, a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}
