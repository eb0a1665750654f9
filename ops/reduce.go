package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// Sum returns the sum over axes (all axes when none are given); reduced axes are dropped.
func Sum(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	r := reduceAxes("Sum", x.Shape(), axes)
	return scatterAdd(x, r.out, r.idx)
}

// SumBackward broadcasts grad, of Sum's output shape, back to inputShape.
func SumBackward(grad *tensor.Tensor, inputShape []int, axes ...int) *tensor.Tensor {
	r := reduceAxes("SumBackward", inputShape, axes)
	checkReducedGrad("SumBackward", grad, r)
	return expand(grad, r, 1)
}

// Mean returns the mean over axes (all axes when none are given); the mean over
// no elements is NaN, as in PyTorch.
func Mean(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	r := reduceAxes("Mean", x.Shape(), axes)
	s := scatterAdd(x.As(tensor.Float64), r.out, r.idx).Data64()
	for i := range s {
		s[i] /= float64(r.count)
	}
	return fromValues(x.DType(), s, r.out...)
}

// MeanBackward broadcasts grad/count back to inputShape, count being the number
// of elements averaged into each output.
func MeanBackward(grad *tensor.Tensor, inputShape []int, axes ...int) *tensor.Tensor {
	r := reduceAxes("MeanBackward", inputShape, axes)
	checkReducedGrad("MeanBackward", grad, r)
	return expand(grad, r, float64(r.count))
}

// Max returns the largest element over axes (as torch.amax); NaN propagates.
func Max(x *tensor.Tensor, axes ...int) *tensor.Tensor { return extreme("Max", x, axes, 1) }

// Min returns the smallest element over axes (as torch.amin); NaN propagates.
func Min(x *tensor.Tensor, axes ...int) *tensor.Tensor { return extreme("Min", x, axes, -1) }

// MaxBackward passes grad to the maxima of x over axes, shared equally among ties.
func MaxBackward(grad, x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return extremeBackward("MaxBackward", grad, x, axes, 1)
}

// MinBackward passes grad to the minima of x over axes, shared equally among ties.
func MinBackward(grad, x *tensor.Tensor, axes ...int) *tensor.Tensor {
	return extremeBackward("MinBackward", grad, x, axes, -1)
}

// extreme computes the max (dir 1) or min (dir -1) of x over axes.
func extreme(op string, x *tensor.Tensor, axes []int, dir float64) *tensor.Tensor {
	r := reduceAxes(op, x.Shape(), axes)
	n := tensor.SizeOf(r.out)
	if r.count == 0 && n > 0 {
		fail(op, "cannot reduce over an empty axis of shape %v", x.Shape())
	}
	best := make([]float64, n)
	seen := make([]bool, n)
	for i, v := range values(x) {
		j := r.idx[i]
		switch {
		case !seen[j]:
			best[j], seen[j] = v, true
		case math.IsNaN(best[j]):
		case math.IsNaN(v) || dir*(v-best[j]) > 0:
			best[j] = v
		}
	}
	return fromValues(x.DType(), best, r.out...)
}

func extremeBackward(op string, grad, x *tensor.Tensor, axes []int, dir float64) *tensor.Tensor {
	dtypeOf(op, grad, x)
	r := reduceAxes(op, x.Shape(), axes)
	checkReducedGrad(op, grad, r)
	best := values(extreme(op, x, axes, dir))
	xs := values(x)
	ties := make([]float64, len(best))
	for i, v := range xs {
		if v == best[r.idx[i]] || math.IsNaN(v) && math.IsNaN(best[r.idx[i]]) {
			ties[r.idx[i]]++
		}
	}
	g := values(grad)
	out := make([]float64, len(xs))
	for i, v := range xs {
		j := r.idx[i]
		if v == best[j] || math.IsNaN(v) && math.IsNaN(best[j]) {
			out[i] = g[j] / ties[j]
		}
	}
	return fromValues(x.DType(), out, r.in...)
}

// expand returns grad/div broadcast from the reduced shape back to r.in.
func expand(grad *tensor.Tensor, r *reduction, div float64) *tensor.Tensor {
	g := values(grad)
	out := make([]float64, len(r.idx))
	for i, j := range r.idx {
		out[i] = g[j] / div
	}
	return fromValues(grad.DType(), out, r.in...)
}

func checkReducedGrad(op string, grad *tensor.Tensor, r *reduction) {
	if !tensor.EqualShapes(grad.Shape(), r.out) {
		fail(op, "grad shape %v does not match the reduced shape %v of input shape %v", grad.Shape(), r.out, r.in)
	}
}
