//go:build !purego

package vec

import "golang.org/x/sys/cpu"

// The assembly in vec_amd64.s takes n > 0, a multiple of 8; the Go
// references finish the last n%8 elements.

//go:noescape
func reluAVX2(dst, x *float32, n int)

//go:noescape
func reluBackwardAVX2(dst, dy, x *float32, n int)

//go:noescape
func allFiniteAVX2(x *float32, n int) bool

//go:noescape
func addAVX2(dst, x *float32, n int)

//go:noescape
func addConstAVX2(dst *float32, c float32, n int)

//go:noescape
func sgdAVX2(w, grad *float32, n int, lr float32)

//go:noescape
func sgdMomentumAVX2(w, grad, buf *float32, n int, lr, mom float32)

//go:noescape
func maxPool2x2AVX2(dst *float32, arg *uint8, x *float32, rows, ow, stride, w int)

//go:noescape
func maxPool2x2BackwardAVX2(dx, grad *float32, arg *uint8, rows, ow, stride, w int)

// asmBuild reports whether this build carries the assembly.
const asmBuild = true

var useAVX2 = cpu.X86.HasAVX2

// impl names the kernels in use.
var impl = implName()

func implName() string {
	if useAVX2 {
		return "avx2"
	}
	return "go"
}

func relu(dst, x []float32) {
	n := len(x) &^ 7
	if useAVX2 && n > 0 {
		reluAVX2(&dst[0], &x[0], n)
	} else {
		n = 0
	}
	reluRef(dst[n:], x[n:])
}

func reluBackward(dst, dy, x []float32) {
	n := len(x) &^ 7
	if useAVX2 && n > 0 {
		reluBackwardAVX2(&dst[0], &dy[0], &x[0], n)
	} else {
		n = 0
	}
	reluBackwardRef(dst[n:], dy[n:], x[n:])
}

func allFinite(x []float32) bool {
	n := len(x) &^ 7
	if useAVX2 && n > 0 {
		if !allFiniteAVX2(&x[0], n) {
			return false
		}
	} else {
		n = 0
	}
	return allFiniteRef(x[n:])
}

func add(dst, x []float32) {
	n := len(x) &^ 7
	if useAVX2 && n > 0 {
		addAVX2(&dst[0], &x[0], n)
	} else {
		n = 0
	}
	addRef(dst[n:], x[n:])
}

func addConst(dst []float32, c float32) {
	n := len(dst) &^ 7
	if useAVX2 && n > 0 {
		addConstAVX2(&dst[0], c, n)
	} else {
		n = 0
	}
	addConstRef(dst[n:], c)
}

func sgd(w, g []float32, lr float32) {
	n := len(g) &^ 7
	if useAVX2 && n > 0 {
		sgdAVX2(&w[0], &g[0], n, lr)
	} else {
		n = 0
	}
	sgdRef(w[n:], g[n:], lr)
}

func sgdMomentum(w, g, buf []float32, lr, mom float32) {
	n := len(g) &^ 7
	if useAVX2 && n > 0 {
		sgdMomentumAVX2(&w[0], &g[0], &buf[0], n, lr, mom)
	} else {
		n = 0
	}
	sgdMomentumRef(w[n:], g[n:], buf[n:], lr, mom)
}

func maxPool2x2(dst []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
	if useAVX2 {
		maxPool2x2AVX2(&dst[0], &arg[0], &x[0], rows, ow, stride, w)
		return
	}
	maxPool2x2Ref(dst, arg, x, rows, ow, stride, w)
}

func maxPool2x2Backward(dx, g []float32, arg []uint8, rows, ow, stride, w int) {
	if useAVX2 {
		maxPool2x2BackwardAVX2(&dx[0], &g[0], &arg[0], rows, ow, stride, w)
		return
	}
	maxPool2x2BackwardRef(dx, g, arg, rows, ow, stride, w)
}
