//go:build purego || !amd64

package vec

// mathImpl names the Exp and GELU kernels in use.
const mathImpl = "go"

// mathKernels lists the assembly kernels this build and CPU can run.
var mathKernels []mathKernel

func expVec(dst, x []float32)              { expGo(dst, x) }
func geluVec(dst, x []float32)             { geluGo(dst, x) }
func geluBackwardVec(dst, dy, x []float32) { geluBackwardGo(dst, dy, x) }
