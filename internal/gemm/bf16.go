package gemm

import "math"

// bf16KC is the k block of every bf16 kernel set, Go and assembly alike:
// with the same blocks and the same steps (VDPBF16PS's, below) they give the
// same bits. An 8×1024 A micro-panel of bf16 pairs is 16 KB, as avx512's
// fp32 one.
const bf16KC = 1024

// bf16Kernels is the set SgemmBF16 runs: the first of bf16KernelSets.
var bf16Kernels = bf16KernelSets()[0]

// BF16Arithmetic names the steps SgemmBF16 and its kin take on this CPU:
// "amx" where the amx set runs (TDPBF16PS's steps), else "avx512bf16"
// (VDPBF16PS's, in assembly or in Go). Hosts of the two kinds give
// different bits for the same bf16 product; each is deterministic.
func BF16Arithmetic() string { return arithmetic(bf16Kernels) }

// arithmetic is BF16Arithmetic of set s: the amx sets' tiles set them apart.
func arithmetic(s *kernelSet) string {
	if s.tile != 0 {
		return "amx"
	}
	return "avx512bf16"
}

// SgemmBF16 is Threads(0).SgemmBF16.
func SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Threads(0).SgemmBF16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16 is Sgemm with the products in bf16: the elements of op(A) and
// op(B) are rounded to bfloat16 (to nearest even, denormals to zero, as
// VCVTNEPS2BF16) where they are packed, and their products summed in
// float32 two steps of k at a time, as VDPBF16PS does: acc += a[p+1]·b[p+1]
// then acc += a[p]·b[p] for even p, each add rounded to nearest even and a
// denormal sum flushed to zero; an odd k pairs its last step with zeros.
// The k blocks and the epilogue are Sgemm's, except that alpha*acc and
// beta*C are rounded apart and then added. Any thread budget, and the Go
// kernel where the CPU lacks AVX512_BF16, give the same bits.
func (t Threads) SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	t.call(false, true, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16Chunked is Threads(0).SgemmBF16Chunked.
func SgemmBF16Chunked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Threads(0).SgemmBF16Chunked(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16Chunked is SgemmChunked with the products of SgemmBF16: a weight
// gradient in bf16 that does not depend on how a mini-batch is cut into
// micro-batches (at multiples of KChunk, an even number of steps).
func (t Threads) SgemmBF16Chunked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	t.call(true, true, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// PackBF16 is Pack for SgemmPackedBF16: op(B) rounded to bf16 once, as a
// layer's weights once per update.
func (p *PackedB) PackBF16(transB bool, k, n int, b []float32, ldb int) {
	p.pack(bf16Kernels, transB, k, n, b, ldb)
}

// SgemmPackedBF16 is Threads(0).SgemmPackedBF16.
func SgemmPackedBF16(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	Threads(0).SgemmPackedBF16(transA, m, alpha, a, lda, pb, beta, c, ldc)
}

// SgemmPackedBF16 is SgemmPacked for a pb packed by PackBF16: the bits of
// SgemmBF16 on the matrix pb was packed from.
func (t Threads) SgemmPackedBF16(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	pb.check("SgemmPackedBF16", true)
	t.packed(transA, m, alpha, a, lda, pb, beta, c, ldc)
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
