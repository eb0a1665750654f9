//go:build purego || !amd64

package gemm

// cpuNumber is 0: without assembly the CPU is not asked.
func cpuNumber() int { return 0 }
