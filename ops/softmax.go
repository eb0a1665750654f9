package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// lanes describes x viewed as [outer, n, inner] around one axis.
type lanes struct{ outer, n, inner int }

func axisLanes(op string, shape []int, axis int) lanes {
	if len(shape) == 0 {
		if axis != 0 && axis != -1 {
			fail(op, "axis %d out of range for shape %v", axis, shape)
		}
		return lanes{1, 1, 1}
	}
	ax, ok := tensor.NormalizeAxis(axis, len(shape))
	if !ok {
		fail(op, "axis %d out of range for shape %v", axis, shape)
	}
	return lanes{tensor.SizeOf(shape[:ax]), shape[ax], tensor.SizeOf(shape[ax+1:])}
}

// each calls f with the flat indices of every lane along the axis.
func (l lanes) each(f func(idx func(j int) int)) {
	for o := range l.outer {
		for in := range l.inner {
			base := o*l.n*l.inner + in
			f(func(j int) int { return base + j*l.inner })
		}
	}
}

// Softmax returns exp(x)/sum(exp(x)) along axis, shifted by the lane's max so
// large logits stay finite.
func Softmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	return softmax("Softmax", x, axis, false)
}

// LogSoftmax returns x - max - log(sum(exp(x - max))) along axis.
func LogSoftmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	return softmax("LogSoftmax", x, axis, true)
}

func softmax(op string, x *tensor.Tensor, axis int, log bool) *tensor.Tensor {
	l := axisLanes(op, x.Shape(), axis)
	xs := values(x)
	out := make([]float64, len(xs))
	l.each(func(idx func(int) int) {
		m := math.Inf(-1)
		for j := range l.n {
			m = math.Max(m, xs[idx(j)])
		}
		if math.IsInf(m, -1) {
			m = 0 // an all -Inf lane gives NaN, as in PyTorch, without Inf-Inf here
		}
		s := 0.0
		for j := range l.n {
			s += math.Exp(xs[idx(j)] - m)
		}
		if log {
			ls := math.Log(s)
			for j := range l.n {
				out[idx(j)] = xs[idx(j)] - m - ls
			}
			return
		}
		for j := range l.n {
			out[idx(j)] = math.Exp(xs[idx(j)]-m) / s
		}
	})
	return fromValues(x.DType(), out, x.Shape()...)
}

// SoftmaxBackward returns out*(grad - sum(grad*out)) along axis, out = Softmax(x):
// the Jacobian-vector product in O(n).
func SoftmaxBackward(grad, out *tensor.Tensor, axis int) *tensor.Tensor {
	sameShape("SoftmaxBackward", grad, out)
	l := axisLanes("SoftmaxBackward", out.Shape(), axis)
	g, y := values(grad), values(out)
	res := make([]float64, len(y))
	l.each(func(idx func(int) int) {
		dot := 0.0
		for j := range l.n {
			dot += g[idx(j)] * y[idx(j)]
		}
		for j := range l.n {
			res[idx(j)] = y[idx(j)] * (g[idx(j)] - dot)
		}
	})
	return fromValues(out.DType(), res, out.Shape()...)
}

// LogSoftmaxBackward returns grad - exp(out)*sum(grad) along axis, out = LogSoftmax(x).
func LogSoftmaxBackward(grad, out *tensor.Tensor, axis int) *tensor.Tensor {
	sameShape("LogSoftmaxBackward", grad, out)
	l := axisLanes("LogSoftmaxBackward", out.Shape(), axis)
	g, y := values(grad), values(out)
	res := make([]float64, len(y))
	l.each(func(idx func(int) int) {
		s := 0.0
		for j := range l.n {
			s += g[idx(j)]
		}
		for j := range l.n {
			res[idx(j)] = g[idx(j)] - math.Exp(y[idx(j)])*s
		}
	})
	return fromValues(out.DType(), res, out.Shape()...)
}
