package gemm

import (
	"fmt"
	"math"
)

// bf16KC is the k block of every bf16 kernel set, Go and assembly alike:
// with the same blocks and the same steps (VDPBF16PS's, below) they give the
// same bits. An 8×1024 A micro-panel of bf16 pairs is 16 KB, as avx512's
// fp32 one.
const bf16KC = 1024

// Arithmetic is the kind of steps the sums of a bf16 product take. Each
// gives the same bits on every CPU: natively where the CPU has its
// instruction, in FMAs or in Go where it does not.
type Arithmetic uint8

const (
	// AMX takes TDPBF16PS's steps: per 32 steps of k, an element's even
	// and odd products summed apart from zero, then added into the sum.
	// Native on CPUs with AMX; elsewhere the amx-fma set (AVX512_BF16) or
	// go-amx.
	AMX Arithmetic = iota
	// Pairs takes VDPBF16PS's: each pair of steps added into the sum, the
	// odd step's product first. Native on CPUs with AVX512_BF16; elsewhere
	// go-bf16.
	Pairs
)

var arithmeticNames = [...]string{AMX: "amx", Pairs: "avx512bf16"}

// String returns the name ParseArithmetic reads: "amx" or "avx512bf16".
func (a Arithmetic) String() string {
	if int(a) < len(arithmeticNames) {
		return arithmeticNames[a]
	}
	return fmt.Sprintf("Arithmetic(%d)", a)
}

// ParseArithmetic returns the Arithmetic named s.
func ParseArithmetic(s string) (Arithmetic, error) {
	for a, name := range arithmeticNames {
		if s == name {
			return Arithmetic(a), nil
		}
	}
	return 0, fmt.Errorf("gemm: unknown bf16 arithmetic %q (want %q or %q)", s, AMX, Pairs)
}

// Set names the kernel set that runs a's products on this CPU: "amx",
// "amx-fma" or "go-amx" for AMX, "avx512bf16" or "go-bf16" for Pairs.
func (a Arithmetic) Set() string { return bf16Sets[a].name }

// Native returns the arithmetic this CPU runs fastest: AMX where the amx
// set runs, else Pairs (natively with AVX512_BF16, or in Go).
func Native() Arithmetic {
	if bf16Sets[AMX].name == "amx" {
		return AMX
	}
	return Pairs
}

// bf16Sets holds, for each Arithmetic, the set SgemmBF16 runs: the first
// of bf16KernelSets(a).
var bf16Sets = [...]*kernelSet{AMX: bf16KernelSets(AMX)[0], Pairs: bf16KernelSets(Pairs)[0]}

// SgemmBF16 is Threads(0).SgemmBF16.
func SgemmBF16(ar Arithmetic, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Threads(0).SgemmBF16(ar, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16 is Sgemm with the products in bf16: the elements of op(A) and
// op(B) are rounded to bfloat16 (to nearest even, denormals to zero, as
// VCVTNEPS2BF16) where they are packed, and their products summed in
// float32 in ar's steps. With Pairs, two steps of k at a time, as VDPBF16PS
// does: acc += a[p+1]·b[p+1] then acc += a[p]·b[p] for even p, each add
// rounded to nearest even and a denormal sum flushed to zero; an odd k
// pairs its last step with zeros. With AMX, as TDPBF16PS does (doc.go).
// The k blocks and the epilogue are Sgemm's, except that alpha*acc and
// beta*C are rounded apart and then added. Any thread budget and any CPU
// give the same bits for the same ar.
func (t Threads) SgemmBF16(ar Arithmetic, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Call{Threads: t}.SgemmBF16(ar, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16 is Threads.SgemmBF16 followed by cl.Post.
func (cl Call) SgemmBF16(ar Arithmetic, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	cl.call(false, bf16Sets[ar], transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16Chunked is Threads(0).SgemmBF16Chunked.
func SgemmBF16Chunked(ar Arithmetic, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Threads(0).SgemmBF16Chunked(ar, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16Chunked is SgemmChunked with the products of SgemmBF16: a weight
// gradient in bf16 that does not depend on how a mini-batch is cut into
// micro-batches (at multiples of KChunk, an even number of steps).
func (t Threads) SgemmBF16Chunked(ar Arithmetic, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Call{Threads: t}.SgemmBF16Chunked(ar, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16Chunked is Threads.SgemmBF16Chunked followed by cl.Post.
func (cl Call) SgemmBF16Chunked(ar Arithmetic, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	cl.call(true, bf16Sets[ar], transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// PackBF16 is Pack for SgemmPackedBF16: op(B) rounded to bf16 once, as a
// layer's weights once per update, for products in ar's steps.
func (p *PackedB) PackBF16(ar Arithmetic, transB bool, k, n int, b []float32, ldb int) {
	p.pack(bf16Sets[ar], transB, k, n, b, ldb)
}

// SgemmPackedBF16 is Threads(0).SgemmPackedBF16.
func SgemmPackedBF16(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	Threads(0).SgemmPackedBF16(transA, m, alpha, a, lda, pb, beta, c, ldc)
}

// SgemmPackedBF16 is SgemmPacked for a pb packed by PackBF16: the bits of
// SgemmBF16 on the matrix pb was packed from, in the arithmetic it was
// packed for.
func (t Threads) SgemmPackedBF16(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	Call{Threads: t}.SgemmPackedBF16(transA, m, alpha, a, lda, pb, beta, c, ldc)
}

// SgemmPackedBF16 is Threads.SgemmPackedBF16 followed by cl.Post.
func (cl Call) SgemmPackedBF16(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	pb.check("SgemmPackedBF16", true)
	cl.packed(transA, m, alpha, a, lda, pb, beta, c, ldc)
}

// toBF16 rounds x to bfloat16 as VCVTNEPS2BF16 does: NaN stays NaN, made
// quiet; zeros and denormals become zero of x's sign; others round to
// nearest even (a carry may reach infinity).
func toBF16(x float32) uint16 {
	u := math.Float32bits(x)
	switch {
	case u&0x7f800000 == 0:
		return uint16(u>>16) & 0x8000
	case u&0x7fffffff > 0x7f800000:
		return uint16(u>>16) | 0x40
	case u&0x7fffffff == 0x7f800000:
		return uint16(u >> 16)
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// pairBF16 is the 32-bit lane of a packed panel holding steps p (low half)
// and p+1 (high half).
func pairBF16(lo, hi float32) uint32 { return uint32(toBF16(lo)) | uint32(toBF16(hi))<<16 }

// dotBF16 is one lane of VDPBF16PS: acc plus the high halves' product, then
// plus the low halves' (Intel SDM: odd pair first), each as a float32 FMA
// whose denormal result is flushed to zero. (Its inputs' denormals read as
// zero too, but packing has flushed them already.)
func dotBF16(acc float32, x, y uint32) float32 {
	acc = fmaFTZ(acc, math.Float32frombits(x&^0xffff), math.Float32frombits(y&^0xffff))
	return fmaFTZ(acc, math.Float32frombits(x<<16), math.Float32frombits(y<<16))
}

// minNormal32 is the least normal float32, 2^-126.
const minNormal32 = 0x1p-126

// fmaFTZ returns acc + x·y rounded once to float32 (nearest even), zero of
// the result's sign when that is denormal (underflow seen after rounding,
// as x86 does). x and y are bf16 values, so x·y has at most 16 significant
// bits: when it is a normal float32 it is exact in float32 and one float32
// add rounds right; else fmaSlow works in float64.
func fmaFTZ(acc, x, y float32) float32 {
	p := x * y
	ap := math.Abs(float64(p))
	switch {
	case ap >= minNormal32 && ap <= math.MaxFloat32, p == 0 && (x == 0 || y == 0):
	case math.IsNaN(float64(p)) || math.IsInf(float64(x), 0) || math.IsInf(float64(y), 0):
	default:
		return fmaSlow(acc, float64(x)*float64(y))
	}
	return flush(acc + p)
}

// flush returns r, or zero of its sign when r is denormal.
func flush(r float32) float32 {
	if r != 0 && math.Abs(float64(r)) < minNormal32 {
		return float32(math.Copysign(0, float64(r)))
	}
	return r
}

// fmaSlow returns acc + p rounded once to a 24-bit significand (exponent
// unbounded) and flushed if below 2^-126, for an exact product p that no
// float32 holds (it underflows or overflows float32). The float64 sum is
// exact, or (p more than 29 bits below acc's last bit: p has at most 16
// significant bits) so close that no float32 rounding boundary lies between
// it and the exact sum: rounding it to float32 is the one rounding. Tiny
// sums are scaled up first, so that they round to 24 bits and not to
// float32's denormal grid.
func fmaSlow(acc float32, p float64) float32 {
	s := float64(acc) + p
	if math.Abs(s) < 0x1p-100 {
		r := float32(s * 0x1p100) // exact scaling; now a normal float32
		if math.Abs(float64(r)) < minNormal32*0x1p100 {
			return float32(math.Copysign(0, s))
		}
		return float32(float64(r) * 0x1p-100)
	}
	return float32(s)
}
