package ops

import (
	"fmt"
	"slices"

	"github.com/pipetrain/pipetrain/tensor"
)

// pool describes a 2-D pooling of an [N C H W] input without padding.
type pool struct {
	in, out        []int
	kernel, stride int
}

// newPool checks the input shape, kernel and stride and works out the output
// shape. A zero H or W gives zero output rows or columns rather than a panic,
// so that empty batches flow through; otherwise a kernel larger than the input
// is an error, as in PyTorch.
// A backward passes its grad, to be named in messages.
func newPool(op string, shape []int, kernel, stride int, grad ...*tensor.Tensor) pool {
	ctx := ""
	if len(grad) > 0 {
		ctx = fmt.Sprintf(" (grad shape %v)", grad[0].Shape())
	}
	if len(shape) != 4 {
		fail(op, "input shape %v is not [N C H W]%s", shape, ctx)
	}
	for _, d := range shape {
		if d < 0 {
			fail(op, "input shape %v has a negative dimension%s", shape, ctx)
		}
	}
	if kernel < 1 || stride < 1 {
		fail(op, "kernel %d and stride %d must be at least 1 (input shape %v)%s", kernel, stride, shape, ctx)
	}
	out := []int{shape[0], shape[1], 0, 0}
	for i := 2; i < 4; i++ {
		if shape[i] == 0 {
			continue
		}
		if kernel > shape[i] {
			fail(op, "kernel %d is larger than input shape %v%s", kernel, shape, ctx)
		}
		out[i] = (shape[i]-kernel)/stride + 1
	}
	return pool{in: slices.Clone(shape), out: out, kernel: kernel, stride: stride}
}

// checkGrad panics unless grad has the pooled shape.
func (p pool) checkGrad(op string, grad *tensor.Tensor) {
	if !tensor.EqualShapes(grad.Shape(), p.out) {
		fail(op, "grad shape %v does not match the output shape %v of input shape %v (kernel %d, stride %d)",
			grad.Shape(), p.out, p.in, p.kernel, p.stride)
	}
}

// each calls f for every output element o with the input offset of the
// top-left corner of its window, in row-major order.
func (p pool) each(f func(o, corner int)) {
	planes, h, w := p.in[0]*p.in[1], p.in[2], p.in[3]
	oh, ow := p.out[2], p.out[3]
	o := 0
	for pl := range planes {
		for i := range oh {
			for j := range ow {
				f(o, pl*h*w+i*p.stride*w+j*p.stride)
				o++
			}
		}
	}
}

// argmax returns, for each output element, the input offset of its window's
// first maximum in row-major order, or of its last NaN: PyTorch's CPU rule
// (val > max || isnan(val)), so that ties send the whole gradient to one
// element.
func (p pool) argmax(x []float64) []int {
	w, k := p.in[3], p.kernel
	idx := make([]int, tensor.SizeOf(p.out))
	p.each(func(o, corner int) {
		best := corner
		for r := range k {
			for c := range k {
				i := corner + r*w + c
				if v := x[i]; v > x[best] || v != v {
					best = i
				}
			}
		}
		idx[o] = best
	})
	return idx
}

// max32 visits every window of a float32 input in row-major order and
// calls f with the output index, the input index of the window's first
// maximum (or last NaN, argmax's rule) and its value. A plain loop: this is
// on the training path of every convolutional model.
func (p pool) max32(x []float32, f func(o, at int, v float32)) {
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
	p := newPool("MaxPool2d", x.Shape(), kernel, stride)
	if x.DType() == tensor.Float32 { // no float64 copies: comparisons are exact in either
		xs := x.Data32()
		y := tensor.Zeros(tensor.Float32, p.out...)
		out := y.Data32()
		p.max32(xs, func(o, _ int, v float32) { out[o] = v })
		return y
	}
	xs := values(x)
	out := make([]float64, tensor.SizeOf(p.out))
	for o, i := range p.argmax(xs) {
		out[o] = xs[i]
	}
	return fromValues(x.DType(), out, p.out...)
}

// MaxPool2dBackward passes each output gradient to its window's first maximum
// (or last NaN, as PyTorch) in row-major order; overlapping windows accumulate.
func MaxPool2dBackward(grad, x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	dtypeOf("MaxPool2dBackward", grad, x)
	p := newPool("MaxPool2dBackward", x.Shape(), kernel, stride, grad)
	p.checkGrad("MaxPool2dBackward", grad)
	if x.DType() == tensor.Float32 {
		xs, g := x.Data32(), grad.Data32()
		dx := tensor.Zeros(tensor.Float32, p.in...)
		out := dx.Data32()
		p.max32(xs, func(o, at int, _ float32) { out[at] += g[o] })
		return dx
	}
	g := values(grad)
	out := make([]float64, x.Size())
	for o, i := range p.argmax(values(x)) {
		out[i] += g[o]
	}
	return fromValues(x.DType(), out, p.in...)
}

// MaxPool2dIndices is MaxPool2d that also returns, for each output element,
// the flat index into x of the element it came from (the window's first
// maximum, or last NaN): MaxPool2dScatter then sends a gradient back
// without searching the windows again.
func MaxPool2dIndices(x *tensor.Tensor, kernel, stride int) (*tensor.Tensor, []int) {
	p := newPool("MaxPool2dIndices", x.Shape(), kernel, stride)
	idx := make([]int, tensor.SizeOf(p.out))
	if x.DType() == tensor.Float32 {
		y := tensor.Zeros(tensor.Float32, p.out...)
		out := y.Data32()
		p.max32(x.Data32(), func(o, at int, v float32) { out[o], idx[o] = v, at })
		return y, idx
	}
	xs := values(x)
	out := make([]float64, len(idx))
	for o, i := range p.argmax(xs) {
		out[o], idx[o] = xs[i], i
	}
	return fromValues(x.DType(), out, p.out...), idx
}

// MaxPool2dScatter is MaxPool2dBackward from the indices MaxPool2dIndices
// gave for an input of inputShape: the same gradient, bit for bit.
func MaxPool2dScatter(grad *tensor.Tensor, idx []int, inputShape []int, kernel, stride int) *tensor.Tensor {
	p := newPool("MaxPool2dScatter", inputShape, kernel, stride, grad)
	p.checkGrad("MaxPool2dScatter", grad)
	if len(idx) != grad.Size() {
		fail("MaxPool2dScatter", "%d indices for a gradient of shape %v", len(idx), grad.Shape())
	}
	n := tensor.SizeOf(p.in)
	for _, i := range idx {
		if i < 0 || i >= n {
			fail("MaxPool2dScatter", "index %d outside the input of shape %v", i, p.in)
		}
	}
	if grad.DType() == tensor.Float32 {
		g := grad.Data32()
		dx := tensor.Zeros(tensor.Float32, p.in...)
		out := dx.Data32()
		for o, i := range idx {
			out[i] += g[o]
		}
		return dx
	}
	g := values(grad)
	out := make([]float64, n)
	for o, i := range idx {
		out[i] += g[o]
	}
	return fromValues(grad.DType(), out, p.in...)
}

// AvgPool2d returns the mean over each kernel×kernel window of x, shaped as
// MaxPool2d's output; every window is whole, so the count is kernel².
func AvgPool2d(x *tensor.Tensor, kernel, stride int) *tensor.Tensor {
	p := newPool("AvgPool2d", x.Shape(), kernel, stride)
	xs, w, k := values(x), p.in[3], p.kernel
	out := make([]float64, tensor.SizeOf(p.out))
	p.each(func(o, corner int) {
		var s float64
		for r := range k {
			for c := range k {
				s += xs[corner+r*w+c]
			}
		}
		out[o] = s / float64(k*k)
	})
	return fromValues(x.DType(), out, p.out...)
}

// AvgPool2dBackward spreads each output gradient, divided by kernel², over its
// window of an input of inputShape; overlapping windows accumulate.
func AvgPool2dBackward(grad *tensor.Tensor, inputShape []int, kernel, stride int) *tensor.Tensor {
	p := newPool("AvgPool2dBackward", inputShape, kernel, stride, grad)
	p.checkGrad("AvgPool2dBackward", grad)
	g, w, k := values(grad), p.in[3], p.kernel
	out := make([]float64, tensor.SizeOf(p.in))
	div := float64(k * k)
	p.each(func(o, corner int) {
		for r := range k {
			for c := range k {
				out[corner+r*w+c] += g[o] / div
			}
		}
	})
	return fromValues(grad.DType(), out, p.in...)
}
