package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// Exp returns e^x elementwise.
func Exp(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Exp) }

// ExpBackward returns grad*out, where out = Exp(x).
func ExpBackward(grad, out *tensor.Tensor) *tensor.Tensor {
	return gradMap("ExpBackward", grad, out, mul)
}

// Log returns the natural logarithm elementwise (Log(0) = -Inf, negative gives NaN).
func Log(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Log) }

// LogBackward returns grad/x, with no epsilon.
func LogBackward(grad, x *tensor.Tensor) *tensor.Tensor {
	return gradMap("LogBackward", grad, x, func(g, v float64) float64 { return g / v })
}

// Log2 returns the base-2 logarithm elementwise.
func Log2(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Log2) }

// Log2Backward returns grad/(x*ln 2).
func Log2Backward(grad, x *tensor.Tensor) *tensor.Tensor {
	return gradMap("Log2Backward", grad, x, func(g, v float64) float64 { return g / (v * math.Ln2) })
}

// Log10 returns the base-10 logarithm elementwise.
func Log10(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Log10) }

// Log10Backward returns grad/(x*ln 10).
func Log10Backward(grad, x *tensor.Tensor) *tensor.Tensor {
	return gradMap("Log10Backward", grad, x, func(g, v float64) float64 { return g / (v * math.Ln10) })
}

// Sqrt returns the square root elementwise.
func Sqrt(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Sqrt) }

// SqrtBackward returns grad/(2*out), where out = Sqrt(x), with no epsilon.
func SqrtBackward(grad, out *tensor.Tensor) *tensor.Tensor {
	return gradMap("SqrtBackward", grad, out, func(g, o float64) float64 { return g / (2 * o) })
}

// Abs returns |x| elementwise.
func Abs(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Abs) }

// AbsBackward returns grad*sign(x), 0 at x = 0.
func AbsBackward(grad, x *tensor.Tensor) *tensor.Tensor {
	return gradMap("AbsBackward", grad, x, func(g, v float64) float64 { return g * sign(v) })
}

// Sin returns sin(x) elementwise.
func Sin(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Sin) }

// SinBackward returns grad*cos(x).
func SinBackward(grad, x *tensor.Tensor) *tensor.Tensor {
	return gradMap("SinBackward", grad, x, func(g, v float64) float64 { return g * math.Cos(v) })
}

// Cos returns cos(x) elementwise.
func Cos(x *tensor.Tensor) *tensor.Tensor { return map1(x, math.Cos) }

// CosBackward returns -grad*sin(x).
func CosBackward(grad, x *tensor.Tensor) *tensor.Tensor {
	return gradMap("CosBackward", grad, x, func(g, v float64) float64 { return g * -math.Sin(v) })
}

// Clip returns min(max(x, lo), hi) elementwise, as torch.clamp (NaN stays NaN).
func Clip(x *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		fail("Clip", "bounds lo=%v hi=%v must not be NaN (shape %v)", lo, hi, x.Shape())
	}
	return map1(x, func(v float64) float64 {
		if math.IsNaN(v) {
			return v
		}
		return math.Min(math.Max(v, lo), hi)
	})
}

// ClipBackward passes grad where lo <= x <= hi (bounds included) and gives 0 elsewhere.
func ClipBackward(grad, x *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	return gradMap("ClipBackward", grad, x, func(g, v float64) float64 {
		if v >= lo && v <= hi {
			return g
		}
		return 0
	})
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return v // 0 or NaN
}
