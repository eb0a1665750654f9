//go:build !purego

package vec

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

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
func sgdMomentumAVX2(w, grad, buf *float32, n int, lr, mom float32, tiny uint32)

//go:noescape
func adamAVX2(w, grad, m, v *float32, n int, s *AdamStep)

//go:noescape
func maxPool2x2AVX2(dst *float32, arg *uint8, x *float32, rows, ow, stride, w int)

//go:noescape
func maxPool2x2BackwardAVX2(dx, grad *float32, arg *uint8, rows, ow, stride, w int)

//go:noescape
func maxPool2x2AVX512(dst *float32, arg *uint8, x *float32, rows, ow, stride, w int)

//go:noescape
func maxPool2x2BackwardAVX512(dx, grad *float32, arg *uint8, rows, ow, stride, w int)

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

// asmPrefix runs kernel on the first n = m&^7 of m elements when AVX2 is
// there and n > 0, and returns n (else 0): the reference takes the rest.
func asmPrefix(m int, kernel func(n int)) int {
	n := m &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	kernel(n)
	return n
}

func relu(dst, x []float32) {
	n := asmPrefix(len(x), func(n int) { reluAVX2(&dst[0], &x[0], n) })
	ReluGo(dst[n:], x[n:])
}

func reluBackward(dst, dy, x []float32) {
	n := asmPrefix(len(x), func(n int) { reluBackwardAVX2(&dst[0], &dy[0], &x[0], n) })
	ReluBackwardGo(dst[n:], dy[n:], x[n:])
}

func allFinite(x []float32) bool {
	ok := true
	n := asmPrefix(len(x), func(n int) { ok = allFiniteAVX2(&x[0], n) })
	return ok && allFiniteRef(x[n:])
}

func add(dst, x []float32) {
	n := asmPrefix(len(x), func(n int) { addAVX2(&dst[0], &x[0], n) })
	addRef(dst[n:], x[n:])
}

func addConst(dst []float32, c float32) {
	n := asmPrefix(len(dst), func(n int) { addConstAVX2(&dst[0], c, n) })
	addConstRef(dst[n:], c)
}

func sgd(w, g []float32, lr float32) {
	n := asmPrefix(len(g), func(n int) { sgdAVX2(&w[0], &g[0], n, lr) })
	sgdRef(w[n:], g[n:], lr)
}

// adamAVX2 reads AdamStep's floats at 0 to 36 and its flags at 40 to 44:
// a change of its layout fails to compile here.
var (
	_ = [1]struct{}{}[unsafe.Offsetof(AdamStep{}.NegStep)-32]
	_ = [1]struct{}{}[unsafe.Offsetof(AdamStep{}.Scale)-36]
	_ = [1]struct{}{}[unsafe.Offsetof(AdamStep{}.Decouple)-40]
	_ = [1]struct{}{}[unsafe.Offsetof(AdamStep{}.Coupled)-41]
	_ = [1]struct{}{}[unsafe.Offsetof(AdamStep{}.Small)-42]
	_ = [1]struct{}{}[unsafe.Offsetof(AdamStep{}.Scaled)-43]
	_ = [1]struct{}{}[unsafe.Offsetof(AdamStep{}.Zero)-44]
)

func adam(w, g, m, v []float32, s *AdamStep) {
	n := asmPrefix(len(w), func(n int) { adamAVX2(&w[0], &g[0], &m[0], &v[0], n, s) })
	adamRef(w[n:], g[n:], m[n:], v[n:], s)
}

// tinyMomentum is the magnitude below which a momentum entry's products
// may be denormal: mom·buf, and lr·mom·buf when the gradient is 0 (a
// weight nothing feeds), as momentum shrinks towards 0. Only speed depends
// on it: at most 2⁻¹⁰⁰, so that few entries take the exact steps even for
// a tiny learning rate.
func tinyMomentum(lr, mom float32) float32 {
	f := min(1, math.Abs(float64(mom))) * min(1, math.Abs(float64(lr)))
	if !(f > 0) {
		return 0x1p-126
	}
	return float32(min(0x1p-100, 0x1p-126/f))
}

func sgdMomentum(w, g, buf []float32, lr, mom float32) {
	tiny := math.Float32bits(tinyMomentum(lr, mom))
	n := asmPrefix(len(g), func(n int) { sgdMomentumAVX2(&w[0], &g[0], &buf[0], n, lr, mom, tiny) })
	sgdMomentumRef(w[n:], g[n:], buf[n:], lr, mom)
}

// useAVX512Pool: the pooling kernels on AVX-512 (with BMI2's BZHI for masks).
var useAVX512Pool = cpu.X86.HasAVX512F && cpu.X86.HasBMI2

// poolKernels lists the pooling kernels this CPU runs, the one in use last.
var poolKernels = func() []poolKernel {
	var ks []poolKernel
	if useAVX2 {
		ks = append(ks, poolKernel{"avx2", maxPool2x2AVX2, maxPool2x2BackwardAVX2})
	}
	if useAVX512Pool {
		ks = append(ks, poolKernel{"avx512", maxPool2x2AVX512, maxPool2x2BackwardAVX512})
	}
	return ks
}()

// The kernels are called directly, not through poolKernels: the compiler
// then knows that the slices do not escape.

func maxPool2x2(dst []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
	pool2x2(false, dst, arg, x, rows, ow, stride, w)
}

func maxPool2x2Backward(dx, g []float32, arg []uint8, rows, ow, stride, w int) {
	pool2x2(true, g, arg, dx, rows, ow, stride, w)
}

// pool2x2 runs the kernel in use: forward from x to out and arg, or
// backward from out (the gradient) and arg to x.
func pool2x2(backward bool, out []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
	o, a, p := &out[0], &arg[0], &x[0]
	switch {
	case useAVX512Pool && backward:
		maxPool2x2BackwardAVX512(p, o, a, rows, ow, stride, w)
	case useAVX512Pool:
		maxPool2x2AVX512(o, a, p, rows, ow, stride, w)
	case useAVX2 && backward:
		maxPool2x2BackwardAVX2(p, o, a, rows, ow, stride, w)
	case useAVX2:
		maxPool2x2AVX2(o, a, p, rows, ow, stride, w)
	case backward:
		maxPool2x2BackwardRef(x, out, arg, rows, ow, stride, w)
	default:
		maxPool2x2Ref(out, arg, x, rows, ow, stride, w)
	}
}
