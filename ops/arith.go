package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// Add returns a + b, broadcast.
func Add(a, b *tensor.Tensor) *tensor.Tensor {
	return map2("Add", a, b, func(x, y float64) float64 { return x + y })
}

// AddBackward returns the gradients of Add for inputs of shapes aShape and bShape.
func AddBackward(grad *tensor.Tensor, aShape, bShape []int) (ga, gb *tensor.Tensor) {
	checkBroadcastGrad("AddBackward", grad, aShape, bShape)
	return sumTo("AddBackward", grad, aShape).Clone(), sumTo("AddBackward", grad, bShape).Clone()
}

// Sub returns a - b, broadcast.
func Sub(a, b *tensor.Tensor) *tensor.Tensor {
	return map2("Sub", a, b, func(x, y float64) float64 { return x - y })
}

// SubBackward returns the gradients of Sub for inputs of shapes aShape and bShape.
func SubBackward(grad *tensor.Tensor, aShape, bShape []int) (ga, gb *tensor.Tensor) {
	checkBroadcastGrad("SubBackward", grad, aShape, bShape)
	ga = sumTo("SubBackward", grad, aShape).Clone()
	gb = map1(sumTo("SubBackward", grad, bShape), func(g float64) float64 { return -g })
	return ga, gb
}

// Mul returns a * b elementwise, broadcast.
func Mul(a, b *tensor.Tensor) *tensor.Tensor {
	return map2("Mul", a, b, func(x, y float64) float64 { return x * y })
}

// MulBackward returns the gradients of Mul: grad*b and grad*a, summed to each input's shape.
func MulBackward(grad, a, b *tensor.Tensor) (ga, gb *tensor.Tensor) {
	checkBinaryGrad("MulBackward", grad, a, b)
	ga = sumTo("MulBackward", map2("MulBackward", grad, b, mul), a.Shape())
	gb = sumTo("MulBackward", map2("MulBackward", grad, a, mul), b.Shape())
	return ga, gb
}

// Div returns a / b elementwise, broadcast, with IEEE results for division by 0.
func Div(a, b *tensor.Tensor) *tensor.Tensor {
	return map2("Div", a, b, func(x, y float64) float64 { return x / y })
}

// DivBackward returns the gradients of Div: grad/b and -grad*(a/b)/b, as PyTorch forms them.
func DivBackward(grad, a, b *tensor.Tensor) (ga, gb *tensor.Tensor) {
	checkBinaryGrad("DivBackward", grad, a, b)
	ga = sumTo("DivBackward", map2("DivBackward", grad, b, func(g, y float64) float64 { return g / y }), a.Shape())
	q := map2("DivBackward", a, b, func(x, y float64) float64 { return x / y })
	q = map2("DivBackward", q, b, func(x, y float64) float64 { return x / y })
	gb = sumTo("DivBackward", map2("DivBackward", grad, q, func(g, v float64) float64 { return -g * v }), b.Shape())
	return ga, gb
}

// Pow returns a raised to b elementwise (real exponents; b broadcasts), as math.Pow.
func Pow(a, b *tensor.Tensor) *tensor.Tensor {
	return map2("Pow", a, b, math.Pow)
}

// PowBackward returns the gradients of Pow: grad*b*a^(b-1) (0 where b == 0) and
// grad*a^b*ln(a) (0 where a == 0 and b >= 0), as PyTorch defines them.
func PowBackward(grad, a, b *tensor.Tensor) (ga, gb *tensor.Tensor) {
	checkBinaryGrad("PowBackward", grad, a, b)
	ga = map3("PowBackward", grad, a, b, func(g, x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return g * (y * math.Pow(x, y-1))
	})
	gb = map3("PowBackward", grad, a, b, func(g, x, y float64) float64 {
		if x == 0 && y >= 0 {
			return 0
		}
		return g * (math.Pow(x, y) * math.Log(x))
	})
	return sumTo("PowBackward", ga, a.Shape()), sumTo("PowBackward", gb, b.Shape())
}

func mul(x, y float64) float64 { return x * y }

// checkBroadcastGrad panics unless grad has the broadcast shape of aShape and bShape.
func checkBroadcastGrad(op string, grad *tensor.Tensor, aShape, bShape []int) {
	out, ok := tensor.BroadcastShapes(aShape, bShape)
	if !ok || !tensor.EqualShapes(out, grad.Shape()) {
		fail(op, "grad shape %v does not fit input shapes %v and %v", grad.Shape(), aShape, bShape)
	}
}

// checkBinaryGrad panics unless a, b and grad share a dtype and grad has the
// broadcast shape of a and b.
func checkBinaryGrad(op string, grad, a, b *tensor.Tensor) {
	dtypeOf(op, grad, a, b)
	out, ok := tensor.BroadcastShapes(a.Shape(), b.Shape())
	if !ok || !tensor.EqualShapes(out, grad.Shape()) {
		fail(op, "shapes %s do not fit (grad, a, b)", shapesOf(grad, a, b))
	}
}
