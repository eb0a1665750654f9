//go:build !purego

package gemm

func hasRDTSCP() bool

// rdtscpAux returns the processor's TSC_AUX, where Linux keeps the number
// of the CPU it runs on (the low 12 bits) and of its node.
func rdtscpAux() uint32

var rdtscp = hasRDTSCP()

// cpuNumber is the CPU the calling thread runs on, or 0 when it cannot
// tell: a hint, as the thread may move at any time.
func cpuNumber() int {
	if !rdtscp {
		return 0
	}
	return int(rdtscpAux() & (1<<12 - 1))
}
