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
	n, c, h, w     int // input
	f, kh, kw      int // filters
	stride, pad    int
	oh, ow         int // output plane
	k, p           int // im2col rows (c·kh·kw) and columns (oh·ow)
	xShape, wShape []int
	outShape       []int
}

// planConv checks x, w and b (b may be nil) and derives the output geometry.
func planConv(op string, x, w, b *tensor.Tensor, stride, padding int) *convPlan {
	xs, ws := x.Shape(), w.Shape()
	desc := fmt.Sprintf("x %v and w %v", xs, ws)
	if b != nil {
		desc = fmt.Sprintf("x %v, w %v and b %v", xs, ws, b.Shape())
		dtypeOf(op, x, w, b)
	} else {
		dtypeOf(op, x, w)
	}
	if len(xs) != 4 || len(ws) != 4 {
		fail(op, "%s do not fit: x needs 4 axes [N C H W] and w 4 axes [F C KH KW]", desc)
	}
	pl := &convPlan{n: xs[0], c: xs[1], h: xs[2], w: xs[3], f: ws[0], kh: ws[2], kw: ws[3],
		stride: stride, pad: padding, xShape: xs, wShape: ws}
	if stride < 1 {
		fail(op, "stride %d is not positive (%s)", stride, desc)
	}
	if padding < 0 {
		fail(op, "padding %d is negative (%s)", padding, desc)
	}
	if ws[1] != pl.c {
		fail(op, "%s do not fit: x has %d channels, w %d", desc, pl.c, ws[1])
	}
	if b != nil && (b.Dims() != 1 || b.Shape()[0] != pl.f) {
		fail(op, "%s do not fit: b needs shape [%d], one element per filter", desc, pl.f)
	}
	if pl.kh == 0 || pl.kw == 0 {
		fail(op, "%s do not fit: the kernel %d×%d is empty", desc, pl.kh, pl.kw)
	}
	// Keep H+2·padding from overflowing before comparing it with the kernel.
	if padding > (math.MaxInt/2-max(pl.h, pl.w))/2 {
		fail(op, "padding %d is too large (%s)", padding, desc)
	}
	ph, pw := pl.h+2*padding, pl.w+2*padding
	if ph < pl.kh || pw < pl.kw {
		fail(op, "%s do not fit: the kernel %d×%d is larger than the padded input %d×%d (padding %d)",
			desc, pl.kh, pl.kw, ph, pw, padding)
	}
	pl.oh, pl.ow = (ph-pl.kh)/stride+1, (pw-pl.kw)/stride+1
	// Huge paddings must not overflow the sizes of the im2col buffer or the output.
	if !fits(pl.c, pl.kh, pl.kw, pl.oh, pl.ow) || !fits(pl.n, pl.f, pl.oh, pl.ow) {
		fail(op, "%s with stride %d and padding %d give an output [%d %d %d %d] too large to hold",
			desc, stride, padding, pl.n, pl.f, pl.oh, pl.ow)
	}
	pl.k, pl.p = pl.c*pl.kh*pl.kw, pl.oh*pl.ow
	pl.outShape = []int{pl.n, pl.f, pl.oh, pl.ow}
	return pl
}

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

// Conv2d returns the 2-D cross-correlation of x [N, C, H, W] with filters
// w [F, C, KH, KW] plus the bias b [F] (nil for none), as torch.nn.functional.conv2d
// with one stride and one padding for both axes: the result is [N, F, OH, OW]
// with OH = ⌊(H+2·padding−KH)/stride⌋+1, and likewise OW. Each sample is unfolded
// (im2col) into a [C·KH·KW, OH·OW] matrix and multiplied by w on the GEMM.
func Conv2d(x, w, b *tensor.Tensor, stride, padding int) *tensor.Tensor {
	pl := planConv("Conv2d", x, w, b, stride, padding)
	out := tensor.Zeros(x.DType(), pl.outShape...)
	if x.DType() == tensor.Float32 {
		var bias []float32
		if b != nil {
			bias = b.Data32()
		}
		conv2d(pl, out.Data32(), x.Data32(), w.Data32(), bias)
	} else {
		var bias []float64
		if b != nil {
			bias = b.Data64()
		}
		conv2d(pl, out.Data64(), x.Data64(), w.Data64(), bias)
	}
	return out
}

// conv2d runs the samples in parallel, each on its own im2col buffer; a
// sample's result does not depend on which goroutine computes it.
func conv2d[T float](pl *convPlan, out, x, w, b []T) {
	t := &convForward[T]{pl: pl, out: out, x: x, w: w, b: b}
	threads := par.Budget(0)
	t.threads = max(1, threads/min(threads, max(1, pl.n)))
	par.For(threads, pl.n, 1, t)
}

type convForward[T float] struct {
	pl        *convPlan
	out, x, w []T
	b         []T
	threads   int // GEMM budget per part
}

func (t *convForward[T]) Run(lo, hi int) {
	pl := t.pl
	col := make([]T, pl.k*pl.p)
	xn, on := pl.c*pl.h*pl.w, pl.f*pl.p
	for i := lo; i < hi; i++ {
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
	dtypeOf(op, grad, x, w)
	pl := planConv(op, x, w, nil, stride, padding)
	if !grad.HasShape(pl.outShape...) {
		fail(op, "grad %v does not match the output shape %v of x %v and w %v (stride %d, padding %d)",
			grad.Shape(), pl.outShape, pl.xShape, pl.wShape, stride, padding)
	}
	gx = tensor.Zeros(x.DType(), pl.xShape...)
	gw = tensor.Zeros(x.DType(), pl.wShape...)
	gb64 := make([]float64, pl.f)
	if x.DType() == tensor.Float32 {
		conv2dBackward(pl, gx.Data32(), gw.Data32(), gb64, grad.Data32(), x.Data32(), w.Data32())
	} else {
		conv2dBackward(pl, gx.Data64(), gw.Data64(), gb64, grad.Data64(), x.Data64(), w.Data64())
	}
	return gx, gw, fromValues(x.DType(), gb64, pl.f)
}

// conv2dBackward computes the samples' gx and weight gradients in parallel,
// a group at a time, and adds the weight gradients into gw in sample order:
// the group size bounds memory and, like the thread count, never the bits.
func conv2dBackward[T float](pl *convPlan, gx, gw []T, gb []float64, grad, x, w []T) {
	on, fk := pl.f*pl.p, pl.f*pl.k
	for i := range pl.n {
		g := grad[i*on : (i+1)*on]
		for f := range pl.f {
			var s float64
			for _, v := range g[f*pl.p : (f+1)*pl.p] {
				s += float64(v)
			}
			gb[f] += s
		}
	}
	if pl.n == 0 || fk == 0 {
		return
	}
	group := min(pl.n, max(1, convGroupElems/fk))
	t := &convBackward[T]{pl: pl, gx: gx, gwN: make([]T, group*fk), grad: grad, x: x, w: w}
	threads := par.Budget(0)
	for g0 := 0; g0 < pl.n; g0 += group {
		gn := min(group, pl.n-g0)
		t.first, t.threads = g0, max(1, threads/min(threads, gn))
		par.For(threads, gn, 1, t)
		for i := range gn {
			part := t.gwN[i*fk : (i+1)*fk]
			if g0+i == 0 {
				copy(gw, part)
				continue
			}
			for j, v := range part {
				gw[j] += v
			}
		}
	}
}

// convGroupElems bounds the per-sample weight gradients held at once.
const convGroupElems = 1 << 22

type convBackward[T float] struct {
	pl             *convPlan
	gx, gwN        []T // gwN holds one weight gradient per sample of the group
	grad, x, w     []T
	first, threads int // the group's first sample; GEMM budget per part
}

func (t *convBackward[T]) Run(lo, hi int) {
	pl := t.pl
	col := make([]T, pl.k*pl.p)
	xn, on, fk := pl.c*pl.h*pl.w, pl.f*pl.p, pl.f*pl.k
	for i := lo; i < hi; i++ {
		s := t.first + i
		g := t.grad[s*on : (s+1)*on]
		im2col(pl, col, t.x[s*xn:(s+1)*xn])
		gemmT(t.threads, false, true, pl.f, pl.k, pl.p, g, pl.p, col, pl.p, 0, t.gwN[i*fk:(i+1)*fk], pl.k)
		// gx = col2im(wᵀ·g); col is free again as the product's destination.
		gemmT(t.threads, true, false, pl.k, pl.p, pl.f, t.w, pl.k, g, pl.p, 0, col, pl.p)
		col2im(pl, t.gx[s*xn:(s+1)*xn], col)
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
