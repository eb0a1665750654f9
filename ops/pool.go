package ops

import (
	"fmt"
	"slices"

	"github.com/pipetrain/pipetrain/tensor"
)

// pool describes a 2-D pooling of an [N C H W] input without padding.
type pool struct {
	in, out        [4]int
	kernel, stride int
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

// maxWindows visits every window of x in row-major order and calls f with
// the output index, the input index of the window's first maximum in
// row-major order, or of its last NaN (PyTorch's CPU rule, val > max ||
// isnan(val), so that ties send the whole gradient to one element), and its
// value. A plain loop: this is on the training path of every convolutional
// model.
func maxWindows[T float](p *pool, x []T, f func(o, at int, v T)) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow, k, st := p.out[2], p.out[3], p.kernel, p.stride
	o := 0
	for pl := range planes {
		for i := range oh {
			rowStart := pl*h*w + i*st*w
			for j := range ow {
				corner := rowStart + j*st
				best, bv := corner, x[corner]
				for r := range k {
					row := x[corner+r*w : corner+r*w+k]
					for c, v := range row {
						if v > bv || v != v {
							best, bv = corner+r*w+c, v
						}
					}
				}
				f(o, best, bv)
				o++
			}
		}
	}
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

// maxPoolInto writes the windows' maxima into dst and, unless idx is nil,
// where they were into idx. Comparisons are exact in either float type, so
// float32 needs no float64 copies.
func maxPoolInto(p *pool, dst *tensor.Tensor, idx []int, x *tensor.Tensor) *tensor.Tensor {
	if x.DType() == tensor.Float32 {
		maxPool(p, dst.Data32(), idx, x.Data32())
	} else {
		maxPool(p, dst.Data64(), idx, x.Data64())
	}
	return dst
}

func maxPool[T float](p *pool, out []T, idx []int, x []T) {
	if p.kernel == 2 && p.stride == 2 {
		maxPool2x2(p, out, idx, x)
		return
	}
	if idx == nil {
		maxWindows(p, x, func(o, _ int, v T) { out[o] = v })
		return
	}
	maxWindows(p, x, func(o, at int, v T) { out[o], idx[o] = v, at })
}

// maxPool2x2 is maxPool for the common 2×2 windows at stride 2, without a
// call per window: the same comparisons in the same order, so the same
// maxima and indices (the first maximum, or the last NaN).
func maxPool2x2[T float](p *pool, out []T, idx []int, x []T) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow := p.out[2], p.out[3]
	o := 0
	for pl := range planes {
		for i := range oh {
			r0 := pl*h*w + 2*i*w
			top, bottom := x[r0:r0+2*ow], x[r0+w:r0+w+2*ow]
			dst := out[o : o+ow]
			for j := range dst {
				at, bv := 2*j, top[2*j]
				if v := top[2*j+1]; v > bv || v != v {
					at, bv = 2*j+1, v
				}
				if v := bottom[2*j]; v > bv || v != v {
					at, bv = w+2*j, v
				}
				if v := bottom[2*j+1]; v > bv || v != v {
					at, bv = w+2*j+1, v
				}
				dst[j] = bv
				if idx != nil {
					idx[o+j] = r0 + at
				}
			}
			o += ow
		}
	}
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
	maxWindows(p, x, func(o, at int, _ T) { dx[at] += g[o] })
}

// MaxPool2dIndices is MaxPool2d that also returns, for each output element,
// the flat index into x of the element it came from (the window's first
// maximum, or last NaN): MaxPool2dScatter then sends a gradient back
// without searching the windows again.
func MaxPool2dIndices(x *tensor.Tensor, kernel, stride int) (*tensor.Tensor, []int) {
	p := poolOf("MaxPool2dIndices", x, kernel, stride)
	idx := make([]int, tensor.SizeOf(p.out[:]))
	return maxPoolInto(&p, tensor.Zeros(x.DType(), p.out[:]...), idx, x), idx
}

// MaxPool2dIndicesInto is MaxPool2dIndices into dst, of x's dtype and the
// output shape, and idx, of one index per output element; it returns dst.
func MaxPool2dIndicesInto(dst *tensor.Tensor, idx []int, x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	const op = "MaxPool2dIndicesInto"
	p := poolOf(op, x, kernel, stride)
	p.checkDst(op, dst, x.DType(), p.out)
	if len(idx) != dst.Size() {
		fail(op, "%d indices for an output of shape %v", len(idx), p.out)
	}
	return maxPoolInto(&p, dst, idx, x)
}

// MaxPool2dScatter is MaxPool2dBackward from the indices MaxPool2dIndices
// gave for an input of inputShape: the same gradient, bit for bit.
func MaxPool2dScatter(grad *tensor.Tensor, idx []int, inputShape []int, kernel, stride int) *tensor.Tensor {
	p := newPool("MaxPool2dScatter", inputShape, kernel, stride, grad)
	p.checkScatter("MaxPool2dScatter", grad, idx)
	return scatterInto(tensor.Zeros(grad.DType(), p.in[:]...), grad, idx)
}

// MaxPool2dScatterInto writes MaxPool2dScatter's gradient into dst, which
// has the input's shape and grad's dtype, and returns dst.
func MaxPool2dScatterInto(dst, grad *tensor.Tensor, idx []int, kernel, stride int) *tensor.Tensor {
	const op = "MaxPool2dScatterInto"
	p := poolOf(op, dst, kernel, stride, grad)
	p.checkDst(op, dst, grad.DType(), p.in)
	p.checkScatter(op, grad, idx)
	dst.Zero()
	return scatterInto(dst, grad, idx)
}

// checkScatter panics unless grad has the pooled shape and idx one index
// into the input per element of grad.
func (p *pool) checkScatter(op string, grad *tensor.Tensor, idx []int) {
	p.checkGrad(op, grad)
	if len(idx) != grad.Size() {
		fail(op, "%d indices for a gradient of shape %v", len(idx), grad.Shape())
	}
	n := tensor.SizeOf(p.in[:])
	for _, i := range idx {
		if i < 0 || i >= n {
			fail(op, "index %d outside the input of shape %v", i, p.in)
		}
	}
}

// scatterInto adds grad into dx at idx.
func scatterInto(dx, grad *tensor.Tensor, idx []int) *tensor.Tensor {
	if grad.DType() == tensor.Float32 {
		scatter(dx.Data32(), grad.Data32(), idx)
	} else {
		scatter(dx.Data64(), grad.Data64(), idx)
	}
	return dx
}

func scatter[T float](dx, g []T, idx []int) {
	for o, i := range idx {
		dx[i] += g[o]
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
