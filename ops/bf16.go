package ops

import "github.com/pipetrain/pipetrain/internal/gemm"

// Arithmetic is the kind of steps the float32 sums of bf16 products take.
// Either gives the same bits on every CPU: natively where the CPU has the
// instruction whose steps it takes, emulated elsewhere.
type Arithmetic = gemm.Arithmetic

const (
	// AMX takes TDPBF16PS's steps: per 32 steps of k, an element's even
	// and odd products summed apart from zero, then added into the sum.
	AMX = gemm.AMX
	// Pairs takes VDPBF16PS's: each pair of steps added into the sum, the
	// odd step's product first.
	Pairs = gemm.Pairs
)

// ParseArithmetic returns the Arithmetic named s: "amx" or "avx512bf16".
func ParseArithmetic(s string) (Arithmetic, error) { return gemm.ParseArithmetic(s) }

// NativeArithmetic returns the arithmetic this CPU runs fastest: AMX on
// CPUs with AMX, else Pairs.
func NativeArithmetic() Arithmetic { return gemm.Native() }

// products is how an op's float32 GEMMs run: in fp32, or with bf16
// products summed in ar's steps.
type products struct {
	bf16 bool
	ar   Arithmetic
}
