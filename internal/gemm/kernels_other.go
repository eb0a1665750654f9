//go:build purego || !amd64

package gemm

// kernelSets lists the kernels this build runs: without assembly (the purego
// build tag, or a CPU architecture other than amd64), the pure-Go micro-kernel.
func kernelSets() []*kernelSet { return []*kernelSet{&goKernels} }

// bf16KernelSets lists the bf16 kernels this build runs for ar: the pure-Go
// one.
func bf16KernelSets(ar Arithmetic) []*kernelSet {
	if ar == AMX {
		return []*kernelSet{&goAMXKernels}
	}
	return []*kernelSet{&goBF16Kernels}
}
