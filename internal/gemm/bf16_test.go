package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// specials are the values bf16 rounding and VDPBF16PS treat apart: zeros,
// denormals (read as zero), infinities, NaNs (a signalling one made
// quiet), the largest floats (rounding up to infinity), ties of the
// rounding, and magnitudes whose products overflow or fall below 2^-126.
var specials = []float32{
	0, float32(math.Copysign(0, -1)), 1e-40, -3e-39, 0x1p-149,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.Float32frombits(0x7f800001), math.Float32frombits(0xffa5a5a5),
	math.MaxFloat32, -0x1.fffp127, 0x1.01p0, 0x1.03p0, -0x1.0180p5, 0x1.7f8p-3,
	0x1p-126, -0x1.8p-120, 0x1p-70, 3e-30, 0x1p100, -0x1.4p110,
}

// sprinkle replaces about one element in every, of s, by a special value
// (only finite ones unless inf), and scales some by huge or tiny factors.
func sprinkle(rng *rand.Rand, s []float32, every int, inf bool) {
	for i := range s {
		switch rng.IntN(every) {
		case 0:
			v := specials[rng.IntN(len(specials))]
			if inf || !(math.IsInf(float64(v), 0) || math.IsNaN(float64(v))) {
				s[i] = v
			}
		case 1:
			s[i] *= [...]float32{0x1p-64, 0x1p-100, 0x1p64, 0x1p120}[rng.IntN(4)]
		}
	}
}

func scaleAll(s []float32, f float32) {
	for i := range s {
		s[i] *= f
	}
}

// sameBits reports whether x and y have the same bits or are both NaN: NaN
// payloads follow operand order (SDM table 5-1), which the kernels do not
// hold to.
func sameBits(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || math.IsNaN(float64(x)) && math.IsNaN(float64(y))
}

// bf16TestSets is every bf16 kernel set this build and CPU can run, for
// either arithmetic, the Go models among them.
func bf16TestSets() []*kernelSet {
	return append(bf16KernelSets(AMX), bf16KernelSets(Pairs)...)
}

// arithmetic is the Arithmetic set ks takes the steps of: the amx sets'
// tiles set them apart.
func arithmetic(ks *kernelSet) Arithmetic {
	if ks.tile != 0 {
		return AMX
	}
	return Pairs
}

// testAr is the arithmetic the bf16 cases run in: that of the set
// withBF16Kernels runs.
var testAr = AMX

// modelOf is the Go set whose bits ks gives: its model, or ks itself.
func modelOf(ks *kernelSet) *kernelSet {
	if ks.model != nil {
		return ks.model
	}
	return ks
}

// withBF16Kernels runs f once with each of bf16TestSets as the set of its
// arithmetic, which testAr then names.
func withBF16Kernels(t *testing.T, f func(t *testing.T, ks *kernelSet)) {
	saved, savedAr := bf16Sets, testAr
	defer func() { bf16Sets, testAr = saved, savedAr }()
	for _, ks := range bf16TestSets() {
		testAr = arithmetic(ks)
		bf16Sets[testAr] = ks
		t.Run(ks.name, func(t *testing.T) { f(t, ks) })
	}
}

// TestBF16StaleSteps holds each set to its model on products of k ≤ 32
// between products of deeper k whose B is NaN past the short k's steps:
// the amx set leaves a short k's pairs past k as the last product left
// them (fitsK), so its kernels must not read them, and its threads keep
// their tiles' configuration from one product to the next, so each
// product must set its own.
func TestBF16StaleSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	withBF16Kernels(t, func(t *testing.T, ks *kernelSet) {
		for _, k := range []int{1, 9, 10, 31, 32} {
			for _, tB := range []bool{false, true} {
				m, n := 48, 130
				deep := newOperands(rng, false, tB, m, n, 64, 0)
				for i := range deep.b {
					if i%3 == 0 {
						deep.b[i] = float32(math.NaN())
					}
				}
				short := newOperands(rng, false, tB, m, n, k, 0)
				run := func(o *operands) []float32 {
					c := make([]float32, len(o.c))
					Threads(1).SgemmBF16(testAr, false, tB, m, n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0, c, o.ldc)
					return c
				}
				bf16Sets[testAr] = modelOf(ks)
				wantDeep, wantShort := run(deep), run(short)
				bf16Sets[testAr] = ks
				for i, o := range []*operands{deep, short, deep} {
					got, want := run(o), wantShort
					if o == deep {
						want = wantDeep
					}
					for j := range want {
						if !sameBits(got[j], want[j]) {
							t.Fatalf("k=%d transB=%v, product %d (k=%d): C[%d] = %g, want %g", k, tB, i, o.k, j, got[j], want[j])
						}
					}
				}
			}
		}
	})
}

// TestToBF16 checks the rounding against values worked by hand.
func TestToBF16(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {0x1.01p0, 0x3f80}, {0x1.03p0, 0x3f82}, {0x1.0101p0, 0x3f81},
		{1e-40, 0}, {-1e-40, 0x8000}, {0x1p-126, 0x0080}, {math.MaxFloat32, 0x7f80},
		{float32(math.Inf(-1)), 0xff80}, {math.Float32frombits(0x7f800001), 0x7fc0},
		{math.Float32frombits(0xff812345), 0xffc1},
	} {
		if got := toBF16(c.x); got != c.want {
			t.Errorf("toBF16(%g = %#08x) = %#04x, want %#04x", c.x, math.Float32bits(c.x), got, c.want)
		}
	}
}

// TestBF16Steps checks the steps of VDPBF16PS (want) or TDPBF16PS (amx)
// on every bf16 kernel set, the assembly and the Go models alike, with 1×1
// products whose results tell the steps apart.
func TestBF16Steps(t *testing.T) {
	negZero, inf := float32(math.Copysign(0, -1)), float32(math.Inf(1))
	// k = 35: step 0 and the next chunk of 32 (TDPBF16PS's), steps 32, 34.
	chunks := make([]float32, 35)
	chunks[0], chunks[32], chunks[34] = 0x1p24, 1, 1
	ones := make([]float32, 35)
	for i := range ones {
		ones[i] = 1
	}
	withBF16Kernels(t, func(t *testing.T, ks *kernelSet) {
		for _, c := range []struct {
			what      string
			a, b      []float32
			want, amx float32
		}{
			// Pairs (0,1) and (2,3): acc = 0 + 1 + 0, then + x - 1 with x =
			// 2^-24(1+2^-7). Odd first: 1 + x rounds to 1 + 2^-23, less 1
			// leaves 2^-23; even first would leave x. TDPBF16PS: even
			// 0 - 1, odd 1 + x → 1 + 2^-23, summed: 2^-23.
			{"odd step first", []float32{0, 1, 1, 0x1.02p-24}, []float32{0, 1, -1, 1}, 0x1p-23, 0x1p-23},
			// VDPBF16PS: 1, 2, 2 + x → 2, 1. TDPBF16PS: even 1 - 1,
			// odd 1 + x → 1 + 2^-23, then even + odd.
			{"even and odd summed apart", []float32{1, 1, -1, 0x1.02p-24}, ones[:4], 1, 1 + 0x1p-23},
			// VDPBF16PS: 2^24 + 1 rounds to 2^24, twice. TDPBF16PS: the
			// chunk of steps 32-34 sums 2 first, then adds it to 2^24.
			{"chunks of 32 steps summed apart", chunks, ones, 0x1p24, 0x1p24 + 2},
			{"odd k pairs with zero", []float32{2, 3, 5}, []float32{7, 11, 13}, 2*7 + 3*11 + 5*13, 2*7 + 3*11 + 5*13},
			{"denormal sum flushed", []float32{0x1p-70, 0}, []float32{0x1p-70, 0}, 0, 0},
			// TDPBF16PS: even -0 (flushed) + odd +0 is +0.
			{"denormal sum flushed, sign kept", []float32{0x1p-100, 0x1p-20}, []float32{-0x1p-30, 0}, negZero, 0},
			{"denormal input read as zero", []float32{1e-40, 1}, []float32{1e30, 1}, 1, 1},
			{"operands rounded to bf16", []float32{0x1.01p0, 0x1.03p0}, []float32{1, 1}, 1 + 0x1.04p0, 1 + 0x1.04p0},
			{"tiny product adds exactly", []float32{1, 0x1p-70}, []float32{0x1p-126, 0x1p-70}, 0x1p-126, 0x1p-126},
			// VDPBF16PS: -inf, plus 2^200 exactly. TDPBF16PS: even +inf, odd -inf.
			{"overflowing product", []float32{0x1p100, -0x1p100}, []float32{0x1p100, 0x1p100}, -inf, inf - inf},
		} {
			want := c.want
			if modelOf(ks) == &goAMXKernels {
				want = c.amx
			}
			k := len(c.a)
			got := []float32{float32(math.NaN())}
			SgemmBF16(testAr, false, false, 1, 1, k, 1, c.a, k, c.b, 1, 0, got, 1)
			if !sameBits(got[0], want) {
				t.Errorf("%s: %v·%v = %g (%#08x), want %g (%#08x)", c.what, c.a, c.b, got[0], math.Float32bits(got[0]), want, math.Float32bits(want))
			}
		}
	})
}

// TestPairPackers checks each bf16 set's packers against the Go ones, bit
// for bit, over panel widths, odd and even depths, partial panels and
// special values: every lane written, lanes past nn zero.
func TestPairPackers(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, ks := range bf16TestSets() {
		for _, pw := range []int{4, 8, 16, 32, 48} {
			for _, kc := range []int{1, 2, 3, 15, 16, 17, 31, 32, 33, 64, 101} {
				for _, nn := range []int{1, pw/2 + 1, pw - 1, pw} {
					if nn < 1 || pw%ks.vec != 0 && pw != ks.mr {
						continue
					}
					lds := max(kc, nn) + rng.IntN(4)
					src := make([]float32, max(kc, nn)*lds)
					for i := range src {
						src[i] = rng.Float32()*2 - 1
					}
					sprinkle(rng, src, 4, true)
					for name, f := range map[string][2]panelPacker{
						"copy":  {ks.copyPanel, copyPairsGo},
						"trans": {ks.transPanel, transPairsGo},
					} {
						got := make([]float32, kc*pw+16)
						want := make([]float32, kc*pw+16)
						for i := range got {
							got[i] = math.Float32frombits(0xdeadbeef)
							want[i] = got[i]
						}
						f[0](got, src, lds, kc, nn, pw)
						f[1](want, src, lds, kc, nn, pw)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s %sPairs(kc=%d nn=%d pw=%d) lane %d = %#08x, want %#08x", ks.name, name, kc, nn, pw, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
							}
						}
					}
				}
			}
		}
	}
}

// TestAMXPanelA checks the amx A packers, the assembly and the Go model's,
// against rows of pairs taken from the source one by one (pairBF16), bit
// for bit: chunks of 32 steps as 16 rows of 16 pairs, pairs past kc and
// rows past nn zero, nothing written past the last chunk.
func TestAMXPanelA(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, ks := range bf16TestSets() {
		if ks.copyA == nil {
			continue
		}
		for _, kc := range []int{1, 2, 3, 31, 32, 33, 64, 65, 101} {
			for _, nn := range []int{1, 7, 15, 16} {
				lds := max(kc, nn) + rng.IntN(4)
				src := make([]float32, max(kc, nn)*lds)
				for i := range src {
					src[i] = rng.Float32()*2 - 1
				}
				sprinkle(rng, src, 4, true)
				for name, f := range map[string]panelPacker{"copy": ks.copyA, "trans": ks.transA} {
					at := func(r, p int) float32 { return src[r*lds+p] }
					if name == "copy" {
						at = func(r, p int) float32 { return src[p*lds+r] }
					}
					got := make([]float32, 8*roundUp(kc, 32)+16)
					for i := range got {
						got[i] = math.Float32frombits(0xdeadbeef)
					}
					f(got, src, lds, kc, nn, 16)
					g := words(got)
					for p0 := 0; p0 < kc; p0 += 32 {
						for r := range 16 {
							for q := range 16 {
								var want uint32
								if p := p0 + 2*q; r < nn && p < kc {
									hi := float32(0)
									if p+1 < kc {
										hi = at(r, p+1)
									}
									want = pairBF16(at(r, p), hi)
								}
								if w := g[p0*8+16*r+q]; w != want {
									t.Fatalf("%s %sA(kc=%d nn=%d): chunk %d row %d pair %d = %#08x, want %#08x", ks.name, name, kc, nn, p0/32, r, q, w, want)
								}
							}
						}
					}
					for i := 8 * roundUp(kc, 32); i < len(g); i++ {
						if g[i] != 0xdeadbeef {
							t.Fatalf("%s %sA(kc=%d nn=%d) wrote word %d", ks.name, name, kc, nn, i)
						}
					}
				}
			}
		}
	}
}

// bf16Case is one SgemmBF16 problem, run by each entry point.
type bf16Case struct {
	*operands
	alpha, beta float32
}

func (o bf16Case) name() string {
	return fmt.Sprintf("%s %dx%dx%d alpha=%v beta=%v", layoutName(o.tA, o.tB), o.m, o.n, o.k, o.alpha, o.beta)
}

// c returns a copy of C to run on, NaN where beta = 0 must not read it.
func (o bf16Case) cCopy() []float32 {
	c := append([]float32(nil), o.c...)
	if o.beta == 0 {
		for i := range c {
			c[i] = float32(math.NaN())
		}
	}
	return c
}

func (o bf16Case) run(th Threads) []float32 {
	c := o.cCopy()
	th.SgemmBF16(testAr, o.tA, o.tB, o.m, o.n, o.k, o.alpha, o.a, o.lda, o.b, o.ldb, o.beta, c, o.ldc)
	return c
}

func (o bf16Case) compare(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("%s %s: C[%d] = %g (%#08x), want %g (%#08x)", o.name(), what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// bf16Cases are random problems with special values: shapes around the
// tiles, both transposes, alpha and beta cases, k in one block and in two,
// and rows of tiles at k ≤ 32 (the amx set's strips, odd and even).
func bf16Cases(rng *rand.Rand, short bool) []bf16Case {
	shapes := [][3]int{{1, 1, 1}, {1, 1, 2}, {3, 5, 7}, {8, 48, 32}, {9, 49, 33}, {7, 47, 31},
		{17, 97, 65}, {16, 15, 128}, {32, 64, 10}, {48, 130, 9}, {33, 100, 3}, {5, 130, 200}, {40, 17, 1100}}
	for range 12 {
		shapes = append(shapes, [3]int{1 + rng.IntN(60), 1 + rng.IntN(120), 1 + rng.IntN(90)})
	}
	if short {
		shapes = shapes[:10]
	}
	abs := [][2]float32{{1, 0}, {1, 1}, {-0.5, 0.25}, {2.5, -1}}
	var cs []bf16Case
	for si, d := range shapes {
		for li, l := range layouts {
			o := newOperands(rng, l[0], l[1], d[0], d[1], d[2], rng.IntN(3))
			ab := abs[(si+li)%len(abs)]
			switch (si + li) % 3 {
			case 0: // dense finite specials
				sprinkle(rng, o.a, 8, false)
				sprinkle(rng, o.b, 8, false)
			case 1: // sparse infinities and NaN, in C too
				sprinkle(rng, o.a, 300, true)
				sprinkle(rng, o.b, 300, true)
				sprinkle(rng, o.c, 30, true)
			case 2:
				// Products near 2^-126, below and above: sums flushed
				// or rounded near the least normal float32, and some
				// products below float32's range; C = acc.
				scaleAll(o.a, 0x1p-62)
				scaleAll(o.b, 0x1p-62)
				ab = [2]float32{1, 0}
			}
			cs = append(cs, bf16Case{o, ab[0], ab[1]})
		}
	}
	return cs
}

// TestSgemmBF16SameBits holds every bf16 kernel set, the assembly among
// them, to its Go model bit for bit (NaN to NaN), for thread budgets 1 to
// 3, on random data with denormals, infinities, NaN, overflow and
// underflow, odd k, shapes off the tiles, both transposes and alpha/beta
// cases.
func TestSgemmBF16SameBits(t *testing.T) {
	cases := bf16Cases(rand.New(rand.NewPCG(33, 34)), testing.Short())
	wants := map[*kernelSet][][]float32{}
	withBF16Kernels(t, func(t *testing.T, ks *kernelSet) {
		model := modelOf(ks)
		want, ok := wants[model]
		if !ok {
			bf16Sets[testAr] = model
			for _, o := range cases {
				want = append(want, o.run(1))
			}
			wants[model] = want
			bf16Sets[testAr] = ks
		}
		for i, o := range cases {
			for th := 1; th <= 3; th++ {
				o.compare(t, fmt.Sprintf("%s threads=%d", ks.name, th), o.run(Threads(th)), want[i])
			}
		}
	})
}

// TestSgemmBF16Entries checks that the chunked and packed entry points give
// the bits they promise on every bf16 kernel set: SgemmPackedBF16 those of
// SgemmBF16, SgemmBF16Chunked over k those of calls over parts of k cut at
// multiples of KChunk, and both at any thread budget.
func TestSgemmBF16Entries(t *testing.T) {
	withBF16Kernels(t, func(t *testing.T, ks *kernelSet) {
		rng := rand.New(rand.NewPCG(35, 36))
		cases := bf16Cases(rng, true)
		for _, tB := range []bool{false, true} { // B in several column blocks
			cases = append(cases, bf16Case{newOperands(rng, false, tB, 20, 800, 9, 1), 1, 0}, bf16Case{newOperands(rng, false, tB, 20, 800, 40, 1), 1, 0})
		}
		for _, o := range cases {
			var pb PackedB
			pb.PackBF16(testAr, o.tB, o.k, o.n, o.b, o.ldb)
			want := o.run(1)
			for th := 1; th <= 3; th++ {
				got := o.cCopy()
				Threads(th).SgemmPackedBF16(o.tA, o.m, o.alpha, o.a, o.lda, &pb, o.beta, got, o.ldc)
				o.compare(t, fmt.Sprintf("SgemmPackedBF16 threads=%d", th), got, want)
			}
		}
		for _, d := range [][3]int{{37, 101, 256}, {9, 13, 45}, {30, 200, 1100}} {
			for _, l := range layouts {
				o := bf16Case{newOperands(rng, l[0], l[1], d[0], d[1], d[2], 2), 1.5, 0.5}
				whole := o.cCopy()
				SgemmBF16Chunked(testAr, o.tA, o.tB, o.m, o.n, o.k, o.alpha, o.a, o.lda, o.b, o.ldb, o.beta, whole, o.ldc)
				for th := 1; th <= 3; th++ {
					got, beta := o.cCopy(), o.beta
					for p := 0; p < o.k; p += 2 * KChunk {
						a, b := o.kSlice(p)
						Threads(th).SgemmBF16Chunked(testAr, o.tA, o.tB, o.m, o.n, min(2*KChunk, o.k-p), o.alpha, a, o.lda, b, o.ldb, beta, got, o.ldc)
						beta = 1
					}
					o.compare(t, fmt.Sprintf("SgemmBF16Chunked in parts of %d, threads=%d", 2*KChunk, th), got, whole)
				}
			}
		}
	})
}

// TestSgemmBF16Accuracy compares SgemmBF16 with the float64 product of the
// unrounded operands: each element within bf16's error, 2^-8 of the sum of
// |terms| (each operand rounded by at most 2^-9 of itself, plus float32
// sums), and, over all, further off than fp32 Sgemm would be, so the
// operands were rounded.
func TestSgemmBF16Accuracy(t *testing.T) {
	withBF16Kernels(t, func(t *testing.T, ks *kernelSet) {
		rng := rand.New(rand.NewPCG(37, 38))
		for _, d := range [][3]int{{20, 30, 40}, {64, 100, 784}, {9, 50, 1300}} {
			for _, l := range layouts {
				o := bf16Case{newOperands(rng, l[0], l[1], d[0], d[1], d[2], 1), 0.75, 0.5}
				got := o.run(2)
				worst := 0.0
				for i := range o.m {
					for j := range o.n {
						want, mag := o.reference(i, j, float64(o.alpha), float64(o.beta))
						err := math.Abs(float64(got[i*o.ldc+j]) - want)
						if !(err <= 0x1p-8*mag) {
							t.Fatalf("%s: C[%d,%d] = %v, want %v within %g", o.name(), i, j, got[i*o.ldc+j], want, 0x1p-8*mag)
						}
						worst = max(worst, err/mag)
					}
				}
				if worst < 1e-4 {
					t.Fatalf("%s: relative error at most %g: operands not rounded to bf16", o.name(), worst)
				}
			}
		}
	})
}

// reference returns element (i, j) of alpha·op(A)·op(B) + beta·C in float64
// and the sum of the magnitudes of its terms.
func (o *operands) reference(i, j int, alpha, beta float64) (want, mag float64) {
	s := 0.0
	for p := range o.k {
		ai, bi := i*o.lda+p, p*o.ldb+j
		if o.tA {
			ai = p*o.lda + i
		}
		if o.tB {
			bi = j*o.ldb + p
		}
		av, bv := float64(o.a[ai]), float64(o.b[bi])
		s += av * bv
		mag += math.Abs(av * bv)
	}
	cv := beta * float64(o.c[i*o.ldc+j])
	return alpha*s + cv, math.Abs(alpha)*mag + math.Abs(cv)
}

// TestSgemmPackedBF16Panics: a PackedB serves only the entry point of the
// packing it holds.
func TestSgemmPackedBF16Panics(t *testing.T) {
	b := make([]float32, 12)
	c := make([]float32, 6)
	var fp, bf PackedB
	fp.Pack(false, 4, 3, b, 3)
	bf.PackBF16(AMX, false, 4, 3, b, 3)
	for name, f := range map[string]func(){
		"SgemmPackedBF16 of Pack":    func() { SgemmPackedBF16(false, 2, 1, b, 4, &fp, 0, c, 3) },
		"SgemmPacked of PackBF16":    func() { SgemmPacked(false, 2, 1, b, 4, &bf, 0, c, 3) },
		"SgemmPackedBF16 of nothing": func() { SgemmPackedBF16(false, 2, 1, b, 4, new(PackedB), 0, c, 3) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestSgemmBF16Concurrent runs every bf16 set on 16 goroutines at once
// for half a second,
// more than there are threads, with the collector running and allocating
// beside them: goroutines switch threads, threads switch cores and signals
// (preemption, GC) arrive while tiles hold sums, which the kernel must save
// and restore (amx). Every result must be the bits of a lone call.
func TestSgemmBF16Concurrent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2 * runtime.NumCPU()))
	withBF16Kernels(t, func(t *testing.T, ks *kernelSet) {
		rng := rand.New(rand.NewPCG(39, 40))
		cases := bf16Cases(rng, true)
		for _, l := range layouts {
			cases = append(cases, bf16Case{newOperands(rng, l[0], l[1], 100, 150, 700, 1), 1, 0.5})
		}
		want := make([][]float32, len(cases))
		for i, o := range cases {
			want[i] = o.run(1)
		}
		stop := make(chan struct{})
		var garbage sync.WaitGroup
		garbage.Go(func() {
			var keep [][]byte
			for {
				select {
				case <-stop:
					return
				default:
				}
				keep = append(keep, make([]byte, 1<<16))
				if len(keep) > 64 {
					keep = nil
					runtime.GC()
				}
			}
		})
		var wg sync.WaitGroup
		errs := make(chan string, 16)
		start := time.Now()
		for g := range 16 {
			wg.Go(func() {
				for r := 0; r < 10 || time.Since(start) < time.Second/2; r++ {
					i := (g*7 + r) % len(cases)
					o := cases[i]
					got := o.run(Threads(1 + r%3))
					for j := range got {
						if !sameBits(got[j], want[i][j]) {
							errs <- fmt.Sprintf("%s goroutine %d: C[%d] = %g, alone %g", o.name(), g, j, got[j], want[i][j])
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		garbage.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
}

// TestBF16Arithmetic checks that each set takes its model's steps, that
// the Go models of the two kinds are told apart, that every arithmetic
// runs on some set here, and that names parse back.
func TestBF16Arithmetic(t *testing.T) {
	for _, ks := range bf16TestSets() {
		if a, m := arithmetic(ks), arithmetic(modelOf(ks)); a != m {
			t.Errorf("set %s: arithmetic %v, its model's %v", ks.name, a, m)
		}
	}
	for ks, want := range map[*kernelSet]Arithmetic{&goBF16Kernels: Pairs, &goAMXKernels: AMX} {
		if got := arithmetic(ks); got != want {
			t.Errorf("set %s: arithmetic %v, want %v", ks.name, got, want)
		}
	}
	for _, ar := range []Arithmetic{AMX, Pairs} {
		if got := arithmetic(bf16Sets[ar]); got != ar {
			t.Errorf("bf16Sets[%v] is %s, of arithmetic %v", ar, bf16Sets[ar].name, got)
		}
		if got, err := ParseArithmetic(ar.String()); got != ar || err != nil {
			t.Errorf("ParseArithmetic(%q) = %v, %v", ar.String(), got, err)
		}
		t.Logf("%v runs on %s", ar, ar.Set())
	}
	if _, err := ParseArithmetic("amx-fma"); err == nil {
		t.Error("ParseArithmetic(\"amx-fma\"): no error")
	}
}
