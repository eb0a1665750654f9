package vec

import (
	"fmt"
	"math"
)

// Exp sets dst[i] = e^x[i]: within 1 ulp of the correctly rounded result
// for every float32 input (all of [-104, 89] checked), subnormal results
// included; +Inf above about 88.72, +0 below about -103.97 and for -Inf,
// NaN for NaN. dst may be x.
//
// On amd64 with AVX2 and FMA the kernels are assembly (AVX-512 where the
// CPU has it; both give the same bits). Elsewhere, and with the purego tag,
// they are Go code that evaluates the same approximations in float64 and
// rounds once: its results may differ from the assembly's in the last bit
// or two, never beyond the stated bounds. Each is deterministic for a given
// binary and CPU.
func Exp(dst, x []float32) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("vec: Exp: len(dst)=%d, len(x)=%d", len(dst), len(x)))
	}
	expVec(dst, x)
}

// GELU sets dst[i] = x·Φ(x) = 0.5·x·(1 + erf(x/√2)) for x = x[i], the exact
// GELU (PyTorch's nn.GELU() default, not the tanh approximation). It
// computes Φ(x) for x < 0 as e^{-x²/2}·R(|x|), not as 1 + erf, which keeps
// the relative error small also where the result is tiny: within 3 ulp of
// the correctly rounded result (1 in the Go code) wherever that is a normal
// float32, that is down to x ≈ -13.1; below, the subnormal results are
// within 2 steps. GELU(-Inf) = -0 (the limit; the formula gives NaN),
// GELU(+Inf) = +Inf, GELU(NaN) is NaN. dst may be x. Implementations as for
// Exp.
func GELU(dst, x []float32) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("vec: GELU: len(dst)=%d, len(x)=%d", len(dst), len(x)))
	}
	geluVec(dst, x)
}

// GELUBackward sets dst[i] = dy[i]·(Φ(x) + x·φ(x)) for x = x[i], the
// gradient of GELU, with φ(x) = e^{-x²/2}/√(2π). The factor GELU'(x) is
// within 4 ulp of its correctly rounded value (1 in the Go code) wherever
// that is normal, also next to its zero at x ≈ -0.7518, which it computes
// as (|x| - 0.7518…)·R(|x|), and in the tail; dy·GELU'(x) adds one
// rounding. At x = -Inf the factor is 0 and at +Inf it is 1 (the limits).
// dst may be dy or x. Implementations as for Exp.
func GELUBackward(dst, dy, x []float32) {
	if len(dst) != len(dy) || len(dst) != len(x) {
		panic(fmt.Sprintf("vec: GELUBackward: len(dst)=%d, len(dy)=%d, len(x)=%d", len(dst), len(dy), len(x)))
	}
	geluBackwardVec(dst, dy, x)
}

// The approximations, shared by the assembly and the Go code. Exp reduces
// x = n·ln2 + r, |r| ≤ ln2/2, and evaluates e^r ≈ 1 + r + c2·r² + … + c6·r⁶
// (minimax, relative error 2^-27.8 with these float32 coefficients).
//
// GELU writes Φ(-t) = e^{-t²/2}·m(t), t = |x|, with m(t) = Φ(-t)·e^{t²/2}
// smooth and ≈ 1/(t√(2π)) for large t. Then GELU(x) = -t·e·m for x < 0 and
// x - t·e·m for x ≥ 0, with no cancellation either way. t·m is
// N/(S·N + A) with N = t·Pm(t), S = √(2π): a rational fitted to 2^-26.8 on
// [0, 15] whose form keeps float32 evaluation accurate, since for large t,
// where Horner's rounding errors pile up, those of N cancel between the
// numerator and S·N, and A/(S·N) is small.
//
// GELU' = Φ(x) + x·φ(x) = e·d(t) for x < 0 and 1 - e·d(t) for x ≥ 0, with
// d(t) = m(t) - t/√(2π). d has a zero at t0 ≈ 0.7518; d(t)/(t - t0) is
// smooth, between -0.67 and -1/√(2π), and is Pd/(Ad - S·Pd) (2^-26.3; the
// same cancellation of errors for large t), and t - t0 is exact near t0.
//
// t is clamped where nothing changes any more: at 15 in the Go code; in the
// assembly at 7 for x ≥ 0 (in float32 GELU(x) = x from about 5.5 on,
// GELU'(x) = 1 from 6) and at 18 for x < 0, so that no intermediate comes
// near the subnormals unless the result is one (x from -14.5 to -13.2):
// there every instruction costs a microcode assist.
//
// The coefficients were fitted (Lawson's algorithm on the relative error,
// on the linearized rational) and rounded to float32 one at a time,
// refitting the rest.
const (
	expC2 = 0x1.fffffcp-2
	expC3 = 0x1.55549p-3
	expC4 = 0x1.5558fap-5
	expC5 = 0x1.123b1cp-7
	expC6 = 0x1.6a224ep-10

	ln2Hi32 = 0x1.62e43p-1   // float32(ln 2): x - n·ln2Hi32 is exact with FMA
	ln2Lo32 = -0x1.05c61p-29 // float32(ln 2 - ln2Hi32)

	// Exp's clamps: e^x rounds to +0 below -103.97, but -150 makes the
	// scaling by 2^n underflow far below the subnormals (no microcode
	// assist); e^89 overflows. GELU's t (in Go).
	expLo = -150
	expHi = 89
	tMax  = 15

	sqrt2Pi32 = 0x1.40d932p+1 // float32(√(2π)), the S above

	gmP0 = 0x1p-1
	gmP1 = 0x1.166466p-1
	gmP2 = 0x1.22b20ep-2
	gmP3 = 0x1.5f7de8p-4
	gmP4 = 0x1.ec4628p-7
	gmP5 = 0x1.4a08f4p-10
	gmA1 = 0x1.439ab8p-1
	gmA2 = 0x1.ac46d6p-3
	gmA3 = 0x1.345d82p-5
	gmA4 = 0x1.9dacfap-9

	gdP0 = 0x1.fe7212p-1
	gdP1 = 0x1.53abc8p+0
	gdP2 = 0x1.9c8ec6p-1
	gdP3 = 0x1.161ad8p-2
	gdP4 = 0x1.a0ba22p-5
	gdP5 = 0x1.1a93fp-8
	gdA1 = 0x1.dd8dacp-1
	gdA2 = 0x1.91e33ep-2
	gdA3 = 0x1.5c5f6ep-4
	gdA4 = 0x1.0a4154p-7

	// t0, the zero of d, as float32 hi + lo and as float64.
	gdT0Hi = 0x1.80ead2p-1
	gdT0Lo = -0x1.a03fd4p-27
	gdT0   = 0.75179152469356445746
)

// The Go kernels compute in float64 and round once at the end.

func expGo(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = float32(exp64(float64(min(max(v, expLo), expHi))))
	}
}

func geluGo(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		t := geluT(v)
		e := exp64(-0.5 * (t * t)) // t² is exact
		n := t * poly5(t, gmP0, gmP1, gmP2, gmP3, gmP4, gmP5)
		tm := n / (sqrt2Pi32*n + poly4(t, 1, gmA1, gmA2, gmA3, gmA4))
		// x - t·e·m for x ≥ 0; -0 - t·e·m for x < 0 (and -0).
		b := math.Float32bits(v)
		xz := math.Float32frombits(b &^ (uint32(int32(b)>>31) & 0x7fffffff))
		dst[i] = float32(float64(xz) - e*tm)
	}
}

func geluBackwardGo(dst, dy, x []float32) {
	dst = dst[:len(x)]
	dy = dy[:len(x)]
	for i, v := range x {
		t := geluT(v)
		e := exp64(-0.5 * (t * t))
		p := poly5(t, gdP0, gdP1, gdP2, gdP3, gdP4, gdP5)
		d := (t - gdT0) * p / (poly4(t, 1, gdA1, gdA2, gdA3, gdA4) - sqrt2Pi32*p)
		// e·d for x < 0 (and -0), 1 - e·d for x ≥ 0, without a branch.
		neg := float64(math.Float32bits(v) >> 31)
		g := (1 - neg) + (2*neg-1)*(e*d)
		dst[i] = float32(float64(dy[i]) * g)
	}
}

// geluT returns min(|v|, 15), NaN for NaN.
func geluT(v float32) float64 {
	return float64(min(math.Float32frombits(math.Float32bits(v)&0x7fffffff), tMax))
}

// exp64 is e^a for a in [-150, 89], to about 2^-27.
func exp64(a float64) float64 {
	const magic = 0x1.8p52 // adding it rounds to an integer
	n := (a*math.Log2E + magic) - magic
	r := a - n*math.Ln2 // n·Ln2 is off by < 2^-44
	p := 1 + r*(1+r*(expC2+r*(expC3+r*(expC4+r*(expC5+r*expC6)))))
	return p * math.Float64frombits(uint64(int64(n)+1023)<<52)
}

func poly4(t, c0, c1, c2, c3, c4 float64) float64 {
	return c0 + t*(c1+t*(c2+t*(c3+t*c4)))
}

func poly5(t, c0, c1, c2, c3, c4, c5 float64) float64 {
	return c0 + t*(c1+t*(c2+t*(c3+t*(c4+t*c5))))
}

// mathKernel is one implementation of the three kernels, for the tests and
// benchmarks to run each.
type mathKernel struct {
	name         string
	exp, gelu    func(dst, x []float32)
	geluBackward func(dst, dy, x []float32)
}

// mathTabRows are the constants of math_amd64.s in the order of mathTab.
// The assembly names each row's byte offset (32·index) in a #define MT_name,
// which TestMathTabLayout checks against this list.
var mathTabRows = [...]struct {
	name string
	bits uint32
}{
	{"SIGN", 0x80000000},
	{"ONE", math.Float32bits(1)},
	{"XLO", math.Float32bits(expLo)},
	{"XHI", math.Float32bits(expHi)},
	{"TPOS", math.Float32bits(7)},     // GELU's t clamp for x ≥ 0: beyond, GELU(x) = x, GELU'(x) = 1
	{"TNEG", math.Float32bits(11)},    // added to it for x < 0
	{"TNEGMAX", math.Float32bits(18)}, // the clamp for x < 0: e^{-t²/2} < 2^-233
	{"NMIN", math.Float32bits(-155)},  // below 2^-155 every result is 0
	{"NHALF", math.Float32bits(-0.5)},
	{"LOG2E", math.Float32bits(math.Log2E)},
	{"MAGIC", 0x4b400000}, // 1.5·2^23: adding it rounds to an integer, kept in the low bits
	{"LN2HI", math.Float32bits(ln2Hi32)},
	{"LN2LO", math.Float32bits(ln2Lo32)},
	{"BIAS", 127},
	{"C6", math.Float32bits(expC6)},
	{"C5", math.Float32bits(expC5)},
	{"C4", math.Float32bits(expC4)},
	{"C3", math.Float32bits(expC3)},
	{"C2", math.Float32bits(expC2)},
	{"S2PI", math.Float32bits(sqrt2Pi32)},
	{"MP5", math.Float32bits(gmP5)},
	{"MP4", math.Float32bits(gmP4)},
	{"MP3", math.Float32bits(gmP3)},
	{"MP2", math.Float32bits(gmP2)},
	{"MP1", math.Float32bits(gmP1)},
	{"MP0", math.Float32bits(gmP0)},
	{"MA4", math.Float32bits(gmA4)},
	{"MA3", math.Float32bits(gmA3)},
	{"MA2", math.Float32bits(gmA2)},
	{"MA1", math.Float32bits(gmA1)},
	{"DP5", math.Float32bits(gdP5)},
	{"DP4", math.Float32bits(gdP4)},
	{"DP3", math.Float32bits(gdP3)},
	{"DP2", math.Float32bits(gdP2)},
	{"DP1", math.Float32bits(gdP1)},
	{"DP0", math.Float32bits(gdP0)},
	{"DA4", math.Float32bits(gdA4)},
	{"DA3", math.Float32bits(gdA3)},
	{"DA2", math.Float32bits(gdA2)},
	{"DA1", math.Float32bits(gdA1)},
	{"T0HI", math.Float32bits(gdT0Hi)},
	{"NT0LO", math.Float32bits(-gdT0Lo)},
	{"TAILONES", 0xffffffff}, // with the zeros after it, AVX2 tail masks
	{"TAILZEROS", 0},
}

// mathTab is mathTabRows, each value 8 times: a YMM operand (the AVX-512
// code broadcasts the first).
var mathTab = func() (t [len(mathTabRows)][8]uint32) {
	for i, r := range mathTabRows {
		for j := range t[i] {
			t[i][j] = r.bits
		}
	}
	return t
}()
