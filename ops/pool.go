package ops

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/tensor"
)

// pool describes a 2-D pooling of an [N C H W] input without padding.
type pool struct {
	in, out        [4]int
	kernel, stride int
	threads        int // the goroutines the 2×2 float32 kernels may use; 0: one
}

// newPool checks the input shape, kernel and stride and works out the output
// shape. A zero H or W gives zero output rows or columns rather than a panic,
// so that empty batches flow through; otherwise a kernel larger than the input
// is an error, as in PyTorch.
// A backward passes its grad, to be named in messages. Messages format a copy
// of shape, so that it does not escape: steady calls allocate nothing.
func newPool(op string, shape []int, kernel, stride int, grad ...*tensor.Tensor) pool {
	ctx := func() string {
		if len(grad) > 0 {
			return fmt.Sprintf(" (grad shape %v)", grad[0].Shape())
		}
		return ""
	}
	if len(shape) != 4 {
		fail(op, "input shape %v is not [N C H W]%s", slices.Clone(shape), ctx())
	}
	for _, d := range shape {
		if d < 0 {
			fail(op, "input shape %v has a negative dimension%s", slices.Clone(shape), ctx())
		}
	}
	if kernel < 1 || stride < 1 {
		fail(op, "kernel %d and stride %d must be at least 1 (input shape %v)%s", kernel, stride, slices.Clone(shape), ctx())
	}
	p := pool{out: [4]int{shape[0], shape[1], 0, 0}, kernel: kernel, stride: stride}
	copy(p.in[:], shape)
	for i := 2; i < 4; i++ {
		if shape[i] == 0 {
			continue
		}
		if kernel > shape[i] {
			fail(op, "kernel %d is larger than input shape %v%s", kernel, slices.Clone(shape), ctx())
		}
		p.out[i] = (shape[i]-kernel)/stride + 1
	}
	return p
}

// poolOf is newPool for the shape of x.
func poolOf(op string, x *tensor.Tensor, kernel, stride int, grad ...*tensor.Tensor) pool {
	var buf [4]int
	return newPool(op, shapeOf(x, &buf), kernel, stride, grad...)
}

// shapeOf returns x's shape, in buf when it fits: no allocation.
func shapeOf(x *tensor.Tensor, buf *[4]int) []int {
	if x.Dims() > len(buf) {
		return x.Shape()
	}
	s := buf[:x.Dims()]
	for i := range s {
		s[i] = x.Dim(i)
	}
	return s
}

// checkGrad panics unless grad has the pooled shape.
func (p *pool) checkGrad(op string, grad *tensor.Tensor) {
	if !grad.HasShape(p.out[:]...) {
		fail(op, "grad shape %v does not match the output shape %v of input shape %v (kernel %d, stride %d)",
			grad.Shape(), p.out, p.in, p.kernel, p.stride)
	}
}

// checkDst panics unless dst is of dtype dt and shape want (the pool's input
// or output shape).
func (p *pool) checkDst(op string, dst *tensor.Tensor, dt tensor.DType, want [4]int) {
	if dst.DType() != dt || !dst.HasShape(want[:]...) {
		fail(op, "dst %v %v is not %v %v (input shape %v, kernel %d, stride %d)",
			dst.DType(), dst.Shape(), dt, want, p.in, p.kernel, p.stride)
	}
}

// windowRows calls f for each row of windows, in row-major order, with the
// output index of its first window and the input index of that window's
// top-left element; the row's windows step by p.stride from there. A call
// per row, not per window: the callers' loops over a row stay inline.
func (p *pool) windowRows(f func(o, start int)) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow, st := p.out[2], p.out[3], p.stride
	for pl := range planes {
		for i := range oh {
			f((pl*oh+i)*ow, pl*h*w+i*st*w)
		}
	}
}

// maxWindows visits every window of x in row-major order and calls f with
// the output index, the input index of the window's first maximum in
// row-major order, or of its last NaN (PyTorch's CPU rule, val > max ||
// isnan(val), so that ties send the whole gradient to one element), its
// offset r·kernel+c in the window, and its value.
func maxWindows[T float](p *pool, x []T, f func(o, at, off int, v T)) {
	w, ow, k, st := p.in[3], p.out[3], p.kernel, p.stride
	p.windowRows(func(o, start int) {
		for j := range ow {
			corner := start + j*st
			best, off, bv := corner, 0, x[corner]
			for r := range k {
				row := x[corner+r*w : corner+r*w+k]
				for c, v := range row {
					if v > bv || v != v {
						best, off, bv = corner+r*w+c, r*k+c, v
					}
				}
			}
			f(o+j, best, off, bv)
		}
	})
}

// MaxPool2d returns the maximum over each kernel×kernel window of x, an
// [N C H W] tensor, the windows stepping by stride with no padding: the output
// is [N C OH OW] with OH = ⌊(H−kernel)/stride⌋+1. NaN propagates.
func MaxPool2d(x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	p := poolOf("MaxPool2d", x, kernel, stride)
	return maxPoolInto(&p, tensor.Zeros(x.DType(), p.out[:]...), nil, x)
}

// MaxPool2dInto writes MaxPool2d(x, kernel, stride) into dst, of x's dtype
// and the output shape, and returns dst.
func MaxPool2dInto(dst, x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	p := poolOf("MaxPool2dInto", x, kernel, stride)
	p.checkDst("MaxPool2dInto", dst, x.DType(), p.out)
	return maxPoolInto(&p, dst, nil, x)
}

// maxPoolInto writes the windows' maxima into dst and, unless arg is nil,
// their offsets in the windows into arg. Comparisons are exact in either
// float type, so float32 needs no float64 copies.
func maxPoolInto(p *pool, dst *tensor.Tensor, arg []uint8, x *tensor.Tensor) *tensor.Tensor {
	switch {
	case p.kernel == 2 && p.stride == 2 && x.DType() == tensor.Float32:
		maxPool2x2f32(p, dst.Data32(), arg, x.Data32())
	case x.DType() == tensor.Float32:
		maxPool(p, dst.Data32(), arg, x.Data32())
	default:
		maxPool(p, dst.Data64(), arg, x.Data64())
	}
	return dst
}

func maxPool[T float](p *pool, out []T, arg []uint8, x []T) {
	if arg == nil {
		maxWindows(p, x, func(o, _, _ int, v T) { out[o] = v })
		return
	}
	maxWindows(p, x, func(o, _, off int, v T) { out[o], arg[o] = v, uint8(off) })
}

// maxPool2x2f32 is maxPool for the common 2×2 windows at stride 2 in
// float32, on the vector kernel: the same comparisons in the same order, so
// the same maxima and offsets. With an even height the rows of windows of
// every plane are evenly spaced and go in one call; else a plane a call.
func maxPool2x2f32(p *pool, out []float32, arg []uint8, x []float32) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow := p.out[2], p.out[3]
	if arg == nil {
		var scratch [256]uint8 // the offsets nobody asked for, a row at a time
		if ow <= len(scratch) {
			for r := range planes * oh {
				pl, i := r/oh, r%oh
				vec.MaxPool2x2(out[r*ow:(r+1)*ow], scratch[:ow], x[pl*h*w+2*i*w:], 1, ow, 2*w, w)
			}
			return
		}
		arg = make([]uint8, len(out))
	}
	if h%2 == 0 {
		pool2x2Rows(p.threads, false, out, arg, x, planes*oh, ow, 2*w, w)
		return
	}
	for pl := range planes {
		o := pl * oh * ow
		vec.MaxPool2x2(out[o:o+oh*ow], arg[o:o+oh*ow], x[pl*h*w:(pl+1)*h*w], oh, ow, 2*w, w)
	}
}

// poolTask runs the 2×2 kernels over a range of rows of windows, for
// par.For: forward from x to out and arg, or backward from out (the
// gradient) and arg to x.
type poolTask struct {
	backward      bool
	out, x        []float32
	arg           []uint8
	ow, stride, w int
}

func (t *poolTask) Run(lo, hi int) {
	if lo >= hi {
		return
	}
	out, arg, x := t.out[lo*t.ow:hi*t.ow], t.arg[lo*t.ow:hi*t.ow], t.x[lo*t.stride:]
	if t.backward {
		vec.MaxPool2x2Backward(x, out, arg, hi-lo, t.ow, t.stride, t.w)
	} else {
		vec.MaxPool2x2(out, arg, x, hi-lo, t.ow, t.stride, t.w)
	}
}

var poolTasks par.FreeList[poolTask]

// poolGrain is the fewest windows worth a goroutine of their own.
const poolGrain = 1 << 14

// pool2x2Rows runs rows of 2×2 windows, as vec.MaxPool2x2 (or its
// backward) takes them, on up to threads goroutines: each row is the same
// whoever runs it.
func pool2x2Rows(threads int, backward bool, out []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
	t := poolTasks.Get()
	*t = poolTask{backward: backward, out: out, x: x, arg: arg, ow: ow, stride: stride, w: w}
	par.For(max(threads, 1), rows, max(1, poolGrain/max(ow, 1)), t)
	*t = poolTask{}
	poolTasks.Put(t)
}

// MaxPool2dBackward passes each output gradient to its window's first maximum
// (or last NaN, as PyTorch) in row-major order; overlapping windows accumulate.
func MaxPool2dBackward(grad, x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	dtypeOf("MaxPool2dBackward", grad, x)
	p := poolOf("MaxPool2dBackward", x, kernel, stride, grad)
	p.checkGrad("MaxPool2dBackward", grad)
	dx := tensor.Zeros(x.DType(), p.in[:]...)
	if x.DType() == tensor.Float32 {
		maxPoolBackward(&p, dx.Data32(), grad.Data32(), x.Data32())
	} else {
		maxPoolBackward(&p, dx.Data64(), grad.Data64(), x.Data64())
	}
	return dx
}

// maxPoolBackward adds each output gradient g to its window's maximum in dx.
func maxPoolBackward[T float](p *pool, dx, g, x []T) {
	maxWindows(p, x, func(o, at, _ int, _ T) { dx[at] += g[o] })
}

// MaxArgKernel is the largest kernel MaxPool2dArg takes: its windows'
// offsets fit a byte.
const MaxArgKernel = 16

// MaxPool2dArg is MaxPool2d that also returns, for each output element,
// where in its window the element it came from lies: r·kernel+c for the
// window's row r and column c (its first maximum, or last NaN).
// MaxPool2dArgScatter then sends a gradient back without searching the
// windows again. The kernel is at most MaxArgKernel.
func MaxPool2dArg(x *tensor.Tensor, kernel, stride int) (*tensor.Tensor, []uint8) {
	p := poolOf("MaxPool2dArg", x, kernel, stride)
	p.checkArgKernel("MaxPool2dArg")
	arg := make([]uint8, tensor.SizeOf(p.out[:]))
	return maxPoolInto(&p, tensor.Zeros(x.DType(), p.out[:]...), arg, x), arg
}

// MaxPool2dArgInto is MaxPool2dArg into dst, of x's dtype and the output
// shape, and arg, of one offset per output element; it returns dst. The
// common 2×2 float32 pooling runs on up to par.Budget(threads) goroutines
// (0: GOMAXPROCS), the caller's included; the results do not depend on it.
func MaxPool2dArgInto(dst *tensor.Tensor, arg []uint8, x *tensor.Tensor, kernel, stride, threads int) *tensor.Tensor {
	const op = "MaxPool2dArgInto"
	p := poolOf(op, x, kernel, stride)
	p.threads = par.Budget(threads)
	p.checkArgKernel(op)
	p.checkDst(op, dst, x.DType(), p.out)
	if len(arg) != dst.Size() {
		fail(op, "%d offsets for an output of shape %v", len(arg), p.out)
	}
	return maxPoolInto(&p, dst, arg, x)
}

// MaxPool2dArgScatter is MaxPool2dBackward from the offsets MaxPool2dArg
// gave for an input of inputShape: the same gradient, bit for bit.
func MaxPool2dArgScatter(grad *tensor.Tensor, arg []uint8, inputShape []int, kernel, stride int) *tensor.Tensor {
	p := newPool("MaxPool2dArgScatter", inputShape, kernel, stride, grad)
	p.checkScatter("MaxPool2dArgScatter", grad, arg)
	return scatterInto(&p, tensor.Zeros(grad.DType(), p.in[:]...), grad, arg, true)
}

// MaxPool2dArgScatterInto writes MaxPool2dArgScatter's gradient into dst,
// which has the input's shape and grad's dtype, and returns dst; threads
// as MaxPool2dArgInto's.
func MaxPool2dArgScatterInto(dst, grad *tensor.Tensor, arg []uint8, kernel, stride, threads int) *tensor.Tensor {
	const op = "MaxPool2dArgScatterInto"
	p := poolOf(op, dst, kernel, stride, grad)
	p.threads = par.Budget(threads)
	p.checkDst(op, dst, grad.DType(), p.in)
	p.checkScatter(op, grad, arg)
	return scatterInto(&p, dst, grad, arg, false)
}

// checkArgKernel panics unless the windows' offsets fit a byte.
func (p *pool) checkArgKernel(op string) {
	if p.kernel > MaxArgKernel {
		fail(op, "kernel %d is larger than %d: its windows' offsets do not fit a byte (use MaxPool2dBackward)", p.kernel, MaxArgKernel)
	}
}

// checkScatter panics unless grad has the pooled shape, arg one offset per
// element of grad, and the kernel is one MaxPool2dArg takes.
func (p *pool) checkScatter(op string, grad *tensor.Tensor, arg []uint8) {
	p.checkArgKernel(op)
	p.checkGrad(op, grad)
	if len(arg) != grad.Size() {
		fail(op, "%d offsets for a gradient of shape %v", len(arg), grad.Shape())
	}
}

// scatterInto sends each element of grad to the place arg gives in its
// window of dx; zeroed tells that dx holds zeros already. An offset outside
// the window panics.
func scatterInto(p *pool, dx, grad *tensor.Tensor, arg []uint8, zeroed bool) *tensor.Tensor {
	if p.kernel == 2 && p.stride == 2 && grad.DType() == tensor.Float32 {
		if a, ok := below4(arg); !ok {
			fail("MaxPool2dArgScatter", "offset %d outside a 2×2 window", a)
		}
		scatter2x2f32(p, dx.Data32(), grad.Data32(), arg, zeroed)
		return dx
	}
	if !zeroed {
		dx.Zero()
	}
	if grad.DType() == tensor.Float32 {
		scatter(p, dx.Data32(), grad.Data32(), arg)
	} else {
		scatter(p, dx.Data64(), grad.Data64(), arg)
	}
	return dx
}

// below4 reports whether every offset is below 4, eight at a time, and
// else the first that is not.
func below4(arg []uint8) (uint8, bool) {
	n := len(arg) &^ 7
	for i := 0; i < n; i += 8 {
		if binary.LittleEndian.Uint64(arg[i:])&0xfcfcfcfcfcfcfcfc != 0 {
			n = i
			break
		}
	}
	for _, a := range arg[n:] {
		if a > 3 {
			return a, false
		}
	}
	return 0, true
}

// scatter adds each g[o] to its window's element at offset arg[o] of dx;
// overlapping windows accumulate, in output order.
func scatter[T float](p *pool, dx, g []T, arg []uint8) {
	w, ow, k, st := p.in[3], p.out[3], p.kernel, p.stride
	p.windowRows(func(o, start int) {
		for j := range ow {
			a := int(arg[o+j])
			if a >= k*k {
				fail("MaxPool2dArgScatter", "offset %d outside a %d×%d window", a, k, k)
			}
			dx[start+j*st+a/k*w+a%k] += g[o+j]
		}
	})
}

// scatter2x2f32 is scatter for 2×2 windows at stride 2 in float32, whose
// windows do not overlap: the vector kernel writes every window whole, and
// what no window covers (an odd last row or column) is zeroed unless dx
// holds zeros already.
func scatter2x2f32(p *pool, dx, g []float32, arg []uint8, zeroed bool) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow := p.out[2], p.out[3]
	if h%2 == 0 {
		pool2x2Rows(p.threads, true, g, arg, dx, planes*oh, ow, 2*w, w)
	} else {
		for pl := range planes {
			o := pl * oh * ow
			vec.MaxPool2x2Backward(dx[pl*h*w:(pl+1)*h*w], g[o:o+oh*ow], arg[o:o+oh*ow], oh, ow, 2*w, w)
		}
	}
	if zeroed || (w == 2*ow && h == 2*oh) {
		return
	}
	for pl := range planes {
		plane := dx[pl*h*w : (pl+1)*h*w]
		for i := range 2 * oh {
			clear(plane[i*w+2*ow : (i+1)*w])
		}
		clear(plane[2*oh*w:])
	}
}

// AvgPool2d returns the mean over each kernel×kernel window of x, shaped as
// MaxPool2d's output; every window is whole, so the count is kernel².
func AvgPool2d(x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	p := poolOf("AvgPool2d", x, kernel, stride)
	return avgPoolInto(&p, tensor.Zeros(x.DType(), p.out[:]...), x)
}

// AvgPool2dInto writes AvgPool2d(x, kernel, stride) into dst, of x's dtype
// and the output shape, and returns dst.
func AvgPool2dInto(dst, x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	p := poolOf("AvgPool2dInto", x, kernel, stride)
	p.checkDst("AvgPool2dInto", dst, x.DType(), p.out)
	return avgPoolInto(&p, dst, x)
}

func avgPoolInto(p *pool, dst, x *tensor.Tensor) *tensor.Tensor {
	if x.DType() == tensor.Float32 {
		avgPool(p, dst.Data32(), x.Data32())
	} else {
		avgPool(p, dst.Data64(), x.Data64())
	}
	return dst
}

// avgPool sums each window in float64, row-major, and rounds its mean once.
func avgPool[T float](p *pool, out, x []T) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow, k, st := p.out[2], p.out[3], p.kernel, p.stride
	div := float64(k * k)
	o := 0
	for pl := range planes {
		for i := range oh {
			for j := range ow {
				corner := pl*h*w + i*st*w + j*st
				var s float64
				for r := range k {
					for _, v := range x[corner+r*w : corner+r*w+k] {
						s += float64(v)
					}
				}
				out[o] = T(s / div)
				o++
			}
		}
	}
}

// AvgPool2dBackward spreads each output gradient, divided by kernel², over its
// window of an input of inputShape; overlapping windows accumulate.
func AvgPool2dBackward(grad *tensor.Tensor, inputShape []int, kernel, stride int) *tensor.Tensor {
	p := newPool("AvgPool2dBackward", inputShape, kernel, stride, grad)
	p.checkGrad("AvgPool2dBackward", grad)
	return avgPoolBackwardInto(&p, tensor.Zeros(grad.DType(), p.in[:]...), grad)
}

// AvgPool2dBackwardInto writes AvgPool2dBackward's gradient into dst, which
// has the input's shape and grad's dtype, and returns dst.
func AvgPool2dBackwardInto(dst, grad *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	const op = "AvgPool2dBackwardInto"
	p := poolOf(op, dst, kernel, stride, grad)
	p.checkDst(op, dst, grad.DType(), p.in)
	p.checkGrad(op, grad)
	return avgPoolBackwardInto(&p, dst, grad)
}

func avgPoolBackwardInto(p *pool, dx, grad *tensor.Tensor) *tensor.Tensor {
	if grad.DType() == tensor.Float32 {
		avgPoolBackward(p, dx.Data32(), grad.Data32())
	} else {
		avgPoolBackward(p, dx.Data64(), grad.Data64())
	}
	return dx
}

// avgPoolBackward gathers, for each input element, grad/kernel² of the
// windows over it in row-major order, summed in float64 from zero and rounded
// once: the sum a scatter in window order would make, without a float64 copy
// of the input's size.
func avgPoolBackward[T float](p *pool, dx, g []T) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow, k, st := p.out[2], p.out[3], p.kernel, p.stride
	div := float64(k * k)
	for pl := range planes {
		gp, dp := g[pl*oh*ow:(pl+1)*oh*ow], dx[pl*h*w:(pl+1)*h*w]
		for y := range h {
			ilo, ihi := windows(y, k, st, oh)
			for x := range w {
				jlo, jhi := windows(x, k, st, ow)
				var s float64
				for i := ilo; i < ihi; i++ {
					for _, v := range gp[i*ow+jlo : i*ow+jhi] {
						s += float64(v) / div
					}
				}
				dp[y*w+x] = T(s)
			}
		}
	}
}

// windows returns the windows [lo, hi) of side k stepping by stride, out of
// n, that cover position y.
func windows(y, k, stride, n int) (lo, hi int) {
	if y >= k {
		lo = (y-k)/stride + 1
	}
	hi = min(n, y/stride+1)
	return lo, max(lo, hi)
}
