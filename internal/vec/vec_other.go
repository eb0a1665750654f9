//go:build purego || !amd64

package vec

// impl names the kernels in use.
const impl = "go"

// asmBuild reports whether this build carries the assembly.
const asmBuild = false

func relu(dst, x []float32)                            { ReluGo(dst, x) }
func reluBackward(dst, dy, x []float32)                { ReluBackwardGo(dst, dy, x) }
func allFinite(x []float32) bool                       { return allFiniteRef(x) }
func add(dst, x []float32)                             { addRef(dst, x) }
func addConst(dst []float32, c float32)                { addConstRef(dst, c) }
func sgd(w, g []float32, lr float32)                   { sgdRef(w, g, lr) }
func sgdMomentum(w, g, buf []float32, lr, mom float32) { sgdMomentumRef(w, g, buf, lr, mom) }
func adam(w, g, m, v []float32, s *AdamStep)           { adamRef(w, g, m, v, s) }

// poolKernels lists the pooling kernels in assembly: none in this build.
var poolKernels []poolKernel

func maxPool2x2(dst []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
	maxPool2x2Ref(dst, arg, x, rows, ow, stride, w)
}
func maxPool2x2Backward(dx, g []float32, arg []uint8, rows, ow, stride, w int) {
	maxPool2x2BackwardRef(dx, g, arg, rows, ow, stride, w)
}
