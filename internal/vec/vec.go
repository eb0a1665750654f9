package vec

import "fmt"

// Relu sets dst[i] = x[i] where x[i] > 0 or x[i] is NaN, else +0 (also for x = -0).
func Relu(dst, x []float32) {
	if len(dst) != len(x) {
		panic2("Relu", "dst", "x", len(dst), len(x))
	}
	relu(dst, x)
}

// ReluBackward sets dst[i] = dy[i] where x[i] > 0, else +0 (NaN x gives 0).
func ReluBackward(dst, dy, x []float32) {
	if len(dst) != len(dy) || len(dst) != len(x) {
		panic(fmt.Sprintf("vec: ReluBackward: len(dst)=%d, len(dy)=%d, len(x)=%d", len(dst), len(dy), len(x)))
	}
	reluBackward(dst, dy, x)
}

// AllFinite reports whether no element is NaN or ±Inf.
func AllFinite(x []float32) bool {
	return allFinite(x)
}

// Add sets dst[i] += x[i].
func Add(dst, x []float32) {
	if len(dst) != len(x) {
		panic2("Add", "dst", "x", len(dst), len(x))
	}
	add(dst, x)
}

// AddConst sets dst[i] += c.
func AddConst(dst []float32, c float32) {
	addConst(dst, c)
}

// SGD sets w[i] -= lr*g[i], with lr*g[i] rounded to float32 first.
func SGD(w, g []float32, lr float32) {
	if len(w) != len(g) {
		panic2("SGD", "w", "g", len(w), len(g))
	}
	sgd(w, g, lr)
}

// SGDMomentum sets buf[i] = mom*buf[i] + g[i], then w[i] -= lr*buf[i], each
// product rounded to float32 first.
func SGDMomentum(w, g, buf []float32, lr, mom float32) {
	if len(w) != len(g) || len(w) != len(buf) {
		panic(fmt.Sprintf("vec: SGDMomentum: len(w)=%d, len(g)=%d, len(buf)=%d", len(w), len(g), len(buf)))
	}
	sgdMomentum(w, g, buf, lr, mom)
}

// AdamStep holds the float32 constants of one Adam or AdamW update.
type AdamStep struct {
	Decay, WD      float32 // w·Decay first when Decouple; g + WD·w when Coupled
	Lerp, OneMinus float32 // m = m + Lerp·(g - m) when Small, else g - (g - m)·OneMinus
	Beta2, OmBeta2 float32 // v = v·Beta2 + (OmBeta2·g)·g
	BC2Sqrt, Eps   float32 // denom = sqrt(v)/BC2Sqrt + Eps
	NegStep        float32 // w = w + (NegStep·m)/denom
	Scale          float32 // g = g·Scale before all else when Scaled
	Decouple       bool
	Coupled, Small bool
	// Scaled and Zero fold gradient clipping's scaling and the clearing of
	// the gradients into the update's pass: g is written back scaled when
	// Scaled, or 0 when Zero, in place of passes of their own.
	Scaled, Zero bool
}

// Adam updates w, m and v by one Adam (AdamW) step of s, element by
// element, every product and quotient rounded to float32 before the next
// operation (no FMA). It writes g only when s.Scaled or s.Zero. w, g, m and
// v must not overlap.
func Adam(w, g, m, v []float32, s *AdamStep) {
	if len(w) != len(g) || len(w) != len(m) || len(w) != len(v) {
		panic(fmt.Sprintf("vec: Adam: len(w)=%d, len(g)=%d, len(m)=%d, len(v)=%d", len(w), len(g), len(m), len(v)))
	}
	adam(w, g, m, v, s)
}

func panic2(fn, a, b string, na, nb int) {
	panic(fmt.Sprintf("vec: %s: len(%s)=%d, len(%s)=%d", fn, a, na, b, nb))
}

// MaxPool2x2 pools rows of 2×2 windows. Row r of the output, ow windows,
// reads the input rows top = x[r·stride:] and bottom = x[r·stride+w:]: for
// j < ow, dst[r·ow+j] is the largest of top[2j], top[2j+1], bottom[2j] and
// bottom[2j+1] (the first of them in that order, or the last NaN, as
// PyTorch's CPU kernel picks) and arg[r·ow+j] its place among them, 0 to 3.
func MaxPool2x2(dst []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
	if !poolFits(len(dst), len(arg), len(x), rows, ow, stride, w) {
		panic(fmt.Sprintf("vec: MaxPool2x2: len(dst)=%d, len(arg)=%d, len(x)=%d do not fit %d rows of %d windows, stride %d, w %d",
			len(dst), len(arg), len(x), rows, ow, stride, w))
	}
	if rows > 0 && ow > 0 {
		maxPool2x2(dst, arg, x, rows, ow, stride, w)
	}
}

// MaxPool2x2Backward is MaxPool2x2's adjoint: for each window it writes the
// gradient g[r·ow+j] to the place of dx that arg[r·ow+j] names (dx laid out
// as MaxPool2x2's x) and +0 to the window's other three. Elements of dx in
// no window are left alone.
func MaxPool2x2Backward(dx, g []float32, arg []uint8, rows, ow, stride, w int) {
	if !poolFits(len(g), len(arg), len(dx), rows, ow, stride, w) {
		panic(fmt.Sprintf("vec: MaxPool2x2Backward: len(g)=%d, len(arg)=%d, len(dx)=%d do not fit %d rows of %d windows, stride %d, w %d",
			len(g), len(arg), len(dx), rows, ow, stride, w))
	}
	if rows > 0 && ow > 0 {
		maxPool2x2Backward(dx, g, arg, rows, ow, stride, w)
	}
}

// poolFits reports whether rows of ow windows fit outputs of nOut and nArg
// elements and an input of nX: the two rows of a window apart (w ≥ 2·ow),
// the rows of windows apart (stride ≥ w + 2·ow).
func poolFits(nOut, nArg, nX, rows, ow, stride, w int) bool {
	if rows < 0 || ow < 0 || rows == 0 || ow == 0 {
		return rows >= 0 && ow >= 0
	}
	return w >= 2*ow && stride >= w+2*ow && nOut >= rows*ow && nArg >= rows*ow && nX >= (rows-1)*stride+w+2*ow
}

// poolKernel is a pair of 2×2 max pooling kernels in assembly.
type poolKernel struct {
	name     string
	forward  func(dst *float32, arg *uint8, x *float32, rows, ow, stride, w int)
	backward func(dx, grad *float32, arg *uint8, rows, ow, stride, w int)
}
