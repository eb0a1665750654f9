//go:build purego || !amd64

package vec

// impl names the kernels in use.
const impl = "go"

// asmBuild reports whether this build carries the assembly.
const asmBuild = false

func relu(dst, x []float32)                            { reluRef(dst, x) }
func reluBackward(dst, dy, x []float32)                { reluBackwardRef(dst, dy, x) }
func allFinite(x []float32) bool                       { return allFiniteRef(x) }
func add(dst, x []float32)                             { addRef(dst, x) }
func sgd(w, g []float32, lr float32)                   { sgdRef(w, g, lr) }
func sgdMomentum(w, g, buf []float32, lr, mom float32) { sgdMomentumRef(w, g, buf, lr, mom) }
