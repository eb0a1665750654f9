//go:build !purego

package vec

import "golang.org/x/sys/cpu"

// The assembly in math_amd64.s takes any n > 0.

//go:noescape
func expAVX2(dst, x *float32, n int)

//go:noescape
func geluAVX2(dst, x *float32, n int)

//go:noescape
func geluBackwardAVX2(dst, dy, x *float32, n int)

//go:noescape
func expAVX512(dst, x *float32, n int)

//go:noescape
func geluAVX512(dst, x *float32, n int)

//go:noescape
func geluBackwardAVX512(dst, dy, x *float32, n int)

// mathLevel picks the kernels: 2 AVX-512, 1 AVX2 and FMA, 0 Go.
var mathLevel = func() int {
	switch {
	case !cpu.X86.HasAVX2 || !cpu.X86.HasFMA:
		return 0
	case !cpu.X86.HasAVX512F:
		return 1
	}
	return 2
}()

// mathImpl names the Exp and GELU kernels in use.
var mathImpl = [...]string{"go", "avx2", "avx512"}[mathLevel]

// mathKernels lists the assembly kernels this CPU runs, the one in use last.
var mathKernels = []mathKernel{
	{name: "avx2",
		exp:          func(dst, x []float32) { call2(expAVX2, dst, x) },
		gelu:         func(dst, x []float32) { call2(geluAVX2, dst, x) },
		geluBackward: func(dst, dy, x []float32) { call3(geluBackwardAVX2, dst, dy, x) }},
	{name: "avx512",
		exp:          func(dst, x []float32) { call2(expAVX512, dst, x) },
		gelu:         func(dst, x []float32) { call2(geluAVX512, dst, x) },
		geluBackward: func(dst, dy, x []float32) { call3(geluBackwardAVX512, dst, dy, x) }},
}[:mathLevel]

func call2(f func(dst, x *float32, n int), dst, x []float32) {
	if len(x) > 0 {
		_ = dst[len(x)-1]
		f(&dst[0], &x[0], len(x))
	}
}

func call3(f func(dst, dy, x *float32, n int), dst, dy, x []float32) {
	if len(x) > 0 {
		_, _ = dst[len(x)-1], dy[len(x)-1]
		f(&dst[0], &dy[0], &x[0], len(x))
	}
}

// The callers have checked the lengths.

func expVec(dst, x []float32) {
	switch {
	case len(x) == 0:
	case mathLevel == 2:
		expAVX512(&dst[0], &x[0], len(x))
	case mathLevel == 1:
		expAVX2(&dst[0], &x[0], len(x))
	default:
		expGo(dst, x)
	}
}

func geluVec(dst, x []float32) {
	switch {
	case len(x) == 0:
	case mathLevel == 2:
		geluAVX512(&dst[0], &x[0], len(x))
	case mathLevel == 1:
		geluAVX2(&dst[0], &x[0], len(x))
	default:
		geluGo(dst, x)
	}
}

func geluBackwardVec(dst, dy, x []float32) {
	switch {
	case len(x) == 0:
	case mathLevel == 2:
		geluBackwardAVX512(&dst[0], &dy[0], &x[0], len(x))
	case mathLevel == 1:
		geluBackwardAVX2(&dst[0], &dy[0], &x[0], len(x))
	default:
		geluBackwardGo(dst, dy, x)
	}
}
