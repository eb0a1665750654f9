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

func panic2(fn, a, b string, na, nb int) {
	panic(fmt.Sprintf("vec: %s: len(%s)=%d, len(%s)=%d", fn, a, na, b, nb))
}
