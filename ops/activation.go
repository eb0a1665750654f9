package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"

	"github.com/pipetrain/pipetrain/tensor"
)

// ReLU returns max(x, 0) elementwise.
func ReLU(x *tensor.Tensor) *tensor.Tensor {
	return ReLUInto(tensor.Zeros(x.DType(), x.Shape()...), x, 1)
}

// ReLUInto writes ReLU(x) into dst, of x's dtype and shape, and returns dst.
// dst may be x. Float32 runs on up to par.Budget(threads) goroutines (0:
// GOMAXPROCS), the caller's included; the results do not depend on it.
func ReLUInto(dst, x *tensor.Tensor, threads int) *tensor.Tensor {
	into("ReLUInto", dst, x)
	if x.DType() == tensor.Float32 {
		elementwise(threads, reluForward, dst.Data32(), x.Data32(), nil)
	} else {
		vec.ReluGo(dst.Data64(), x.Data64())
	}
	return dst
}

// ReLUBackward passes grad where x > 0 and gives 0 elsewhere (0 at x = 0).
func ReLUBackward(grad, x *tensor.Tensor) *tensor.Tensor {
	sameShape("ReLUBackward", grad, x)
	return ReLUBackwardInto(tensor.Zeros(x.DType(), x.Shape()...), grad, x, 1)
}

// ReLUBackwardInto writes ReLUBackward(grad, x) into dst, of x's dtype and
// shape, and returns dst. dst may be grad or x. threads as ReLUInto's.
func ReLUBackwardInto(dst, grad, x *tensor.Tensor, threads int) *tensor.Tensor {
	into("ReLUBackwardInto", dst, grad, x)
	if x.DType() == tensor.Float32 {
		elementwise(threads, reluBackward, dst.Data32(), grad.Data32(), x.Data32())
	} else {
		vec.ReluBackwardGo(dst.Data64(), grad.Data64(), x.Data64())
	}
	return dst
}

// unary names a float32 element-wise kernel that unaryTask runs.
type unary uint8

const (
	reluForward unary = iota
	reluBackward
	geluForward
	geluBackward
)

// unaryTask runs a float32 element-wise kernel, forward (dst, a = x) or
// backward (dst, a = dy, b = x), over a range, for par.For. Each element is
// computed alone, so the ranges' bounds do not change a bit.
type unaryTask struct {
	op        unary
	dst, a, b []float32
}

func (t *unaryTask) Run(lo, hi int) {
	dst, a := t.dst[lo:hi], t.a[lo:hi]
	switch t.op {
	case reluForward:
		vec.Relu(dst, a)
	case reluBackward:
		vec.ReluBackward(dst, a, t.b[lo:hi])
	case geluForward:
		vec.GELU(dst, a)
	case geluBackward:
		vec.GELUBackward(dst, a, t.b[lo:hi])
	}
}

var unaryTasks par.FreeList[unaryTask]

// unaryGrain is the fewest elements worth a goroutine of their own.
const unaryGrain = 1 << 14

// elementwise runs op on up to threads goroutines.
func elementwise(threads int, op unary, dst, a, b []float32) {
	t := unaryTasks.Get()
	*t = unaryTask{op: op, dst: dst, a: a, b: b}
	par.For(threads, len(dst), unaryGrain, t)
	*t = unaryTask{}
	unaryTasks.Put(t)
}

// LeakyReLU returns x where x > 0 and alpha*x elsewhere.
func LeakyReLU(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	return map1(x, func(v float64) float64 {
		if v > 0 {
			return v
		}
		return alpha * v
	})
}

// LeakyReLUBackward returns grad where x > 0 and alpha*grad elsewhere.
func LeakyReLUBackward(grad, x *tensor.Tensor, alpha float64) *tensor.Tensor {
	return gradMap("LeakyReLUBackward", grad, x, func(g, v float64) float64 {
		if v > 0 {
			return g
		}
		return alpha * g
	})
}

// Softplus returns log(1 + e^(beta*x))/beta, and x itself where
// beta*x > threshold, as torch.nn.functional.softplus.
func Softplus(x *tensor.Tensor, beta, threshold float64) *tensor.Tensor {
	return map1(x, func(v float64) float64 {
		if beta*v > threshold {
			return v
		}
		return math.Log1p(math.Exp(beta*v)) / beta
	})
}

// SoftplusBackward returns grad*sigmoid(beta*x), and grad where
// beta*x > threshold.
func SoftplusBackward(grad, x *tensor.Tensor, beta, threshold float64) *tensor.Tensor {
	return gradMap("SoftplusBackward", grad, x, func(g, v float64) float64 {
		if beta*v > threshold {
			return g
		}
		z := math.Exp(beta * v)
		return g * z / (z + 1)
	})
}

// PReLU returns x where x > 0 and alpha*x elsewhere, with alpha a tensor that
// broadcasts against x.
func PReLU(x, alpha *tensor.Tensor) *tensor.Tensor {
	return map2("PReLU", x, alpha, func(v, a float64) float64 {
		if v > 0 {
			return v
		}
		return a * v
	})
}

// PReLUBackward returns the gradients of PReLU for x and alpha, each summed to
// its input's shape.
func PReLUBackward(grad, x, alpha *tensor.Tensor) (gx, galpha *tensor.Tensor) {
	checkBinaryGrad("PReLUBackward", grad, x, alpha)
	gx = map3("PReLUBackward", grad, x, alpha, func(g, v, a float64) float64 {
		if v > 0 {
			return g
		}
		return a * g
	})
	galpha = map3("PReLUBackward", grad, x, alpha, func(g, v, _ float64) float64 {
		if v > 0 {
			return 0
		}
		return v * g
	})
	return sumTo("PReLUBackward", gx, x.Shape()), sumTo("PReLUBackward", galpha, alpha.Shape())
}

// Sigmoid returns 1/(1+e^-x) elementwise, finite for any finite x.
func Sigmoid(x *tensor.Tensor) *tensor.Tensor { return map1(x, sigmoid) }

func sigmoid(v float64) float64 {
	if v >= 0 {
		return 1 / (1 + math.Exp(-v))
	}
	e := math.Exp(v)
	return e / (1 + e)
}

// SigmoidBackward returns grad*out*(1-out), where out = Sigmoid(x).
func SigmoidBackward(grad, out *tensor.Tensor) *tensor.Tensor {
	return gradMap("SigmoidBackward", grad, out, func(g, o float64) float64 { return g * (1 - o) * o })
}

// Tanh returns tanh(x) elementwise.
func Tanh(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Tanh) }

// TanhBackward returns grad*(1-out²), where out = Tanh(x).
func TanhBackward(grad, out *tensor.Tensor) *tensor.Tensor {
	return gradMap("TanhBackward", grad, out, func(g, o float64) float64 { return g * (1 - o*o) })
}

const (
	geluBeta  = math.Sqrt2 * (2 / math.SqrtPi) * 0.5 // sqrt(2/pi)
	geluKappa = 0.044715
	invSqrt2  = 1 / math.Sqrt2
	invSqrt2P = (2 / math.SqrtPi) * invSqrt2 * 0.5 // 1/sqrt(2*pi)
)

// GELU returns x*Φ(x) with the exact erf form, or PyTorch's tanh approximation
// 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715x³))) when approximate is true. The
// exact form in float32 runs vectorised, within 3 float32 steps of the
// exact value (4 for its backward), as PyTorch's vectorised erf does.
func GELU(x *tensor.Tensor, approximate bool) *tensor.Tensor {
	if !approximate && x.DType() == tensor.Float32 {
		return GELUInto(tensor.Zeros(tensor.Float32, x.Shape()...), x, 1)
	}
	if approximate {
		return map1(x, func(v float64) float64 {
			return 0.5 * v * (1 + math.Tanh(geluBeta*(v+geluKappa*v*v*v)))
		})
	}
	return map1(x, func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v*invSqrt2)) })
}

// GELUInto is the exact GELU into dst, which may be x; threads as
// ReLUInto's.
func GELUInto(dst, x *tensor.Tensor, threads int) *tensor.Tensor {
	into("GELUInto", dst, x)
	if x.DType() == tensor.Float32 {
		elementwise(threads, geluForward, dst.Data32(), x.Data32(), nil)
		return dst
	}
	d := dst.Data64()
	for i, v := range x.Data64() {
		d[i] = 0.5 * v * (1 + math.Erf(v*invSqrt2))
	}
	return dst
}

// GELUBackwardInto is the exact GELU's backward into dst, which may be
// grad; threads as ReLUInto's.
func GELUBackwardInto(dst, grad, x *tensor.Tensor, threads int) *tensor.Tensor {
	into("GELUBackwardInto", dst, grad)
	into("GELUBackwardInto", dst, x)
	if x.DType() == tensor.Float32 {
		elementwise(threads, geluBackward, dst.Data32(), grad.Data32(), x.Data32())
		return dst
	}
	d, g := dst.Data64(), grad.Data64()
	for i, v := range x.Data64() {
		d[i] = g[i] * geluGrad(v)
	}
	return dst
}

// geluGrad is the exact GELU's derivative Φ(x) + x·φ(x).
func geluGrad(v float64) float64 {
	return 0.5*(1+math.Erf(v*invSqrt2)) + v*math.Exp(-0.5*v*v)*invSqrt2P
}

// GELUBackward returns grad times the derivative of GELU at x, for either form.
func GELUBackward(grad, x *tensor.Tensor, approximate bool) *tensor.Tensor {
	if !approximate && x.DType() == tensor.Float32 && grad.SameShape(x) && grad.DType() == x.DType() {
		return GELUBackwardInto(tensor.Zeros(tensor.Float32, x.Shape()...), grad, x, 1)
	}
	if approximate {
		return gradMap("GELUBackward", grad, x, func(g, v float64) float64 {
			inner := geluBeta * (v + geluKappa*v*v*v)
			th := math.Tanh(inner)
			left := 0.5 * v
			right := 1 + th
			dInner := geluBeta * (1 + 3*geluKappa*v*v)
			return g * (0.5*right + left*(1-th*th)*dInner)
		})
	}
	return gradMap("GELUBackward", grad, x, func(g, v float64) float64 { return g * geluGrad(v) })
}
