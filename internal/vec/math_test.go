package vec

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// -mathstep=1 makes the Exp sweep exhaustive (all 2.2e9 float32 in
// [-104, 89]) and the GELU sweeps 1.4e9 points each (all of [-16, 16]
// every other bit pattern, the tails and the zero of GELU' every one); about five
// minutes on two cores: go test ./internal/vec -run Accuracy -args -mathstep=1
var mtStep = flag.Int("mathstep", 97, "stride through float32 bit patterns in the math accuracy sweeps")

// mtKernels are the implementations under test: the Go kernels, each
// assembly kernel this CPU runs, and the exported functions.
func mtKernels() []mathKernel {
	ks := []mathKernel{{name: "go", exp: expGo, gelu: geluGo, geluBackward: geluBackwardGo}}
	ks = append(ks, mathKernels...)
	return append(ks, mathKernel{name: "api", exp: Exp, gelu: GELU, geluBackward: GELUBackward})
}

// References in float64. Φ comes from Erfc, not 1 + Erf, which loses all
// accuracy for x below about -8 even in float64.
func mtPhi(v float64) float64 { return 0.5 * math.Erfc(-v/math.Sqrt2) }

func mtExpRef(x float32) float64 { return math.Exp(float64(x)) }

func mtGELURef(x float32) float64 {
	v := float64(x)
	if math.IsInf(v, -1) {
		return math.Copysign(0, -1)
	}
	return v * mtPhi(v)
}

func mtGELUPrimeRef(x float32) float64 {
	v := float64(x)
	switch {
	case math.IsInf(v, -1):
		return 0
	case math.IsInf(v, 1):
		return 1
	}
	return mtPhi(v) + v*math.Exp(-v*v/2)/math.Sqrt(2*math.Pi)
}

// mtOrd maps float32 bits to integers in value order (±0 both to 0).
func mtOrd(f float32) int64 {
	b := math.Float32bits(f)
	if b>>31 != 0 {
		return -int64(b & 0x7fffffff)
	}
	return int64(b)
}

// mtULP is the float32 ulp at |w|: 2^(e-23) for |w| in [2^e, 2^(e+1)).
func mtULP(w float64) float64 {
	_, e := math.Frexp(w)
	return math.Ldexp(1, max(e-24, -149))
}

// mtStats gathers the errors of one kernel over a sweep.
type mtStats struct {
	n        int
	steps    int64   // float32 steps from the rounded exact value, where |exact| ≥ 1e-30
	worstX   float32 // where steps is largest
	ulps     float64 // |result - exact| in ulps of the exact value, there
	absSmall float64 // |result - exact| where |exact| < 0.25
	stepsLow int64   // steps where 2^-126 ≤ |exact| < 1e-30
	absSub   float64 // |result - exact| where the exact value is subnormal
}

func (s *mtStats) add(x, got float32, want float64) {
	s.n++
	w32 := float32(want)
	if math.IsNaN(want) || math.IsInf(float64(w32), 0) || want == 0 {
		return // checked for exact agreement by the caller
	}
	d := math.Abs(float64(got) - want)
	a := math.Abs(want)
	if a < 0.25 {
		s.absSmall = max(s.absSmall, d)
	}
	if a < 0x1p-126 {
		s.absSub = max(s.absSub, d)
		return
	}
	st := mtOrd(got) - mtOrd(w32)
	st = max(st, -st)
	if a < 1e-30 {
		s.stepsLow = max(s.stepsLow, st)
		return
	}
	if st > s.steps {
		s.steps, s.worstX = st, x
	}
	s.ulps = max(s.ulps, d/mtULP(want))
}

func (s *mtStats) merge(o mtStats) {
	if o.steps > s.steps {
		s.steps, s.worstX = o.steps, o.worstX
	}
	s.n += o.n
	s.ulps = max(s.ulps, o.ulps)
	s.absSmall = max(s.absSmall, o.absSmall)
	s.stepsLow = max(s.stepsLow, o.stepsLow)
	s.absSub = max(s.absSub, o.absSub)
}

func (s mtStats) String() string {
	return fmt.Sprintf("%d points; |exact| ≥ 1e-30: max %d steps (x=%v), %.3f ulp; |exact| < 0.25: abs %.3g; "+
		"2^-126 ≤ |exact| < 1e-30: %d steps; subnormal: abs %.3g",
		s.n, s.steps, s.worstX, s.ulps, s.absSmall, s.stepsLow, s.absSub)
}

// mtFunc names one of the three kernels and its reference. GELUBackward is
// checked with dy = 1, its result being GELU'(x) itself.
type mtFunc struct {
	name     string
	maxSteps int64 // the bound mtReport checks
	ref      func(float32) float64
	run      func(k mathKernel, dst, x []float32)
}

var mtOnes = func() []float32 {
	s := make([]float32, 1<<16)
	for i := range s {
		s[i] = 1
	}
	return s
}()

var mtFuncs = []mtFunc{
	{"Exp", 2, mtExpRef, func(k mathKernel, dst, x []float32) { k.exp(dst, x) }},
	{"GELU", 3, mtGELURef, func(k mathKernel, dst, x []float32) { k.gelu(dst, x) }},
	{"GELUBackward", 4, mtGELUPrimeRef, func(k mathKernel, dst, x []float32) { k.geluBackward(dst, mtOnes[:len(x)], x) }},
}

// mtSweep runs f's kernels over the inputs that gen writes (gen fills
// chunk c of nChunks and returns how many it wrote), on all CPUs, and
// returns each kernel's statistics. Results that are NaN, ±Inf or ±0 in the
// reference must be exactly that.
func mtSweep(t *testing.T, f mtFunc, nChunks int, gen func(c int, x []float32) int) map[string]*mtStats {
	t.Helper()
	ks := mtKernels()
	stats := make(map[string]*mtStats)
	for _, k := range ks {
		stats[k.name] = new(mtStats)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	failed := false
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := make([]float32, 1<<16)
			got := make([]float32, 1<<16)
			local := make([]mtStats, len(ks))
			var bad []string
			for c := range next {
				n := gen(c, x)
				want := make([]float64, n)
				for i, v := range x[:n] {
					want[i] = f.ref(v)
				}
				for ki, k := range ks {
					f.run(k, got[:n], x[:n])
					for i, g := range got[:n] {
						w := want[i]
						if (math.IsNaN(w) || math.IsInf(w, 0) || w == 0) && len(bad) < 5 {
							// The sign of a zero is checked in TestMathSpecials: the
							// float64 GELU' underflows to +0 where the true value is
							// a tiny negative.
							ok := math.IsNaN(w) && isNaN32f(g) || float64(g) == w
							if !ok {
								bad = append(bad, fmt.Sprintf("%s/%s: x=%v (%#08x): got %v, want %v", f.name, k.name, x[i], math.Float32bits(x[i]), g, w))
							}
						}
						local[ki].add(x[i], g, w)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for ki, k := range ks {
				stats[k.name].merge(local[ki])
			}
			for _, b := range bad {
				failed = true
				t.Error(b)
			}
		}()
	}
	for c := range nChunks {
		next <- c
	}
	close(next)
	wg.Wait()
	if failed {
		t.FailNow()
	}
	return stats
}

func isNaN32f(v float32) bool { return v != v }

// mtBitRange makes a gen over the bit patterns lo, lo+step, … ≤ hi (as
// uint32, so a negative range goes from -0 outwards), and its chunk count.
func mtBitRange(lo, hi uint32, step int) (int, func(c int, x []float32) int) {
	n := int((hi-lo)/uint32(step)) + 1
	per := 1 << 16
	return (n + per - 1) / per, func(c int, x []float32) int {
		i0 := c * per
		m := min(per, n-i0)
		for i := range m {
			x[i] = math.Float32frombits(lo + uint32((i0+i)*step))
		}
		return m
	}
}

// mtJoin concatenates gens.
func mtJoin(parts ...func() (int, func(int, []float32) int)) (int, func(int, []float32) int) {
	var starts []int
	var gens []func(int, []float32) int
	total := 0
	for _, p := range parts {
		n, g := p()
		starts = append(starts, total)
		gens = append(gens, g)
		total += n
	}
	return total, func(c int, x []float32) int {
		i := len(starts) - 1
		for starts[i] > c {
			i--
		}
		return gens[i](c-starts[i], x)
	}
}

func mtBits(lo, hi float32, step int) func() (int, func(int, []float32) int) {
	return func() (int, func(int, []float32) int) {
		return mtBitRange(math.Float32bits(lo), math.Float32bits(hi), step)
	}
}

// mtGrid sweeps lo, lo+h, … ≤ hi.
func mtGrid(lo, hi, h float64) func() (int, func(int, []float32) int) {
	return func() (int, func(int, []float32) int) {
		n := int((hi-lo)/h) + 1
		per := 1 << 16
		return (n + per - 1) / per, func(c int, x []float32) int {
			m := min(per, n-c*per)
			for i := range m {
				x[i] = float32(lo + float64(c*per+i)*h)
			}
			return m
		}
	}
}

// mtReport logs each kernel's errors and checks them: at most maxSteps
// float32 steps wherever the exact value is normal, at most 16 subnormal
// steps (2.2e-44) where it is subnormal, and an absolute error under 1e-7
// where |exact| < 0.25.
func mtReport(t *testing.T, what string, stats map[string]*mtStats, maxSteps int64) {
	t.Helper()
	for _, k := range mtKernels() {
		s := stats[k.name]
		t.Logf("%s %s: %v", what, k.name, s)
		if s.steps > maxSteps || s.stepsLow > maxSteps || s.absSub > 16*0x1p-149 || s.absSmall > 1e-7 {
			t.Errorf("%s %s: error over bounds", what, k.name)
		}
	}
}

// TestExpAccuracy: every kernel within 2 float32 steps of the rounded
// exact value over all finite float32 in [-104, 89] (every mathstep-th bit
// pattern, and all near the ends), and exactly 0, +Inf or NaN where the
// reference is.
func TestExpAccuracy(t *testing.T) {
	step := *mtStep
	n, gen := mtJoin(
		mtBits(0, 89, step),
		mtBits(float32(math.Copysign(0, -1)), -104, step),
		mtBits(80, 89, 1),      // overflow edge
		mtBits(-86, -104, 1),   // subnormal results
		mtBits(89, 1e38, 1013), // beyond: +Inf
		mtBits(-104, -1e38, 1013),
	)
	mtReport(t, "Exp", mtSweep(t, mtFuncs[0], n, gen), mtFuncs[0].maxSteps)
}

// TestGELUAccuracy: a grid of [-10, 10] with step 2^-14, every bit pattern
// around the zero of GELU', the tails 10 ≤ |x| ≤ 16 (past where the result
// underflows) and [-16, 16] densely, and strided bit patterns over all
// float32: GELU within 3 float32 steps of the rounded exact value, GELU'
// within 4 (as mtReport checks).
func TestGELUAccuracy(t *testing.T) {
	for _, f := range mtFuncs[1:] {
		t.Run(f.name, func(t *testing.T) {
			step := *mtStep
			n, gen := mtJoin(
				mtGrid(-10, 10, 1.0/(1<<14)),
				mtBits(-10, -16, max(1, step/8)),
				mtBits(10, 16, max(1, step/8)),
				mtBits(-0.70, -0.80, 1), // GELU' crosses 0 at -0.7518
				mtBits(0, math.MaxFloat32, step*16),
				mtBits(float32(math.Copysign(0, -1)), -math.MaxFloat32, step*16),
				mtBits(0, 16, 2*step),
				mtBits(float32(math.Copysign(0, -1)), -16, 2*step),
			)
			mtReport(t, f.name, mtSweep(t, f, n, gen), f.maxSteps)
		})
	}
}

// TestMathSpecials pins the values the sweeps only cover by comparison.
func TestMathSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	den := math.Float32frombits(1)           // smallest subnormal
	bigDen := math.Float32frombits(0x7fffff) // largest subnormal
	cases := []struct {
		f    string
		x    float32
		want float32
	}{
		{"Exp", 0, 1}, {"Exp", negZero, 1}, {"Exp", inf, inf}, {"Exp", -inf, 0}, {"Exp", nan, nan},
		{"Exp", den, 1}, {"Exp", -den, 1}, {"Exp", 89, inf}, {"Exp", 1e30, inf}, {"Exp", -200, 0},
		{"Exp", -103.28, den}, {"Exp", 1, math.E},
		{"GELU", 0, 0}, {"GELU", negZero, negZero}, {"GELU", inf, inf}, {"GELU", -inf, negZero},
		// GELU(den) is just above den/2, so den (the float64 formula, rounding
		// twice, gives 0; either passes).
		{"GELU", nan, nan}, {"GELU", den, den}, {"GELU", 2 * den, den}, {"GELU", -2 * den, -den},
		{"GELU", bigDen, math.Float32frombits(0x400000)}, {"GELU", 1e30, 1e30}, {"GELU", -1e30, negZero},
		{"GELU", -20, negZero},
		{"GELUBackward", 0, 0.5}, {"GELUBackward", negZero, 0.5}, {"GELUBackward", inf, 1},
		{"GELUBackward", -inf, 0}, {"GELUBackward", nan, nan}, {"GELUBackward", den, 0.5},
		{"GELUBackward", 1e30, 1}, {"GELUBackward", -1e30, 0}, {"GELUBackward", -20, 0},
	}
	for _, k := range mtKernels() {
		for _, c := range cases {
			f := mtFuncs[slices.IndexFunc(mtFuncs, func(f mtFunc) bool { return f.name == c.f })]
			// Each value alone and at every place of a 17-long vector, so
			// the unrolled loop, the single vector and the masked tail each
			// see it.
			for n := 1; n <= 17; n++ {
				for at := range n {
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(i) / 4
					}
					x[at] = c.x
					got := make([]float32, n)
					f.run(k, got, x)
					g := got[at]
					if !mtSpecialOK(c.f, g, c.want) {
						t.Fatalf("%s %s(%v) at %d of %d = %v (%#08x), want %v (%#08x)", k.name, c.f, c.x, at, n, g, math.Float32bits(g), c.want, math.Float32bits(c.want))
					}
				}
			}
		}
		// NaN in dy poisons, ±0 in dy gives a zero.
		dst := make([]float32, 3)
		k.geluBackward(dst, []float32{nan, 0, negZero}, []float32{1, 1, 1})
		if !isNaN32f(dst[0]) || math.Float32bits(dst[1]) != 0 || math.Float32bits(dst[2]) != 0x80000000 {
			t.Errorf("%s GELUBackward with dy NaN, +0, -0: %v", k.name, dst)
		}
	}
}

// mtSpecialOK: NaN, ±Inf and zeros exactly (either zero for GELU', whose
// sign there is that of a value too small to show), others within 2 steps.
func mtSpecialOK(f string, g, want float32) bool {
	w := float64(want)
	switch {
	case math.IsNaN(w):
		return isNaN32f(g)
	case w == 0 && f == "GELUBackward":
		return g == 0
	case math.IsInf(w, 0) || w == 0:
		return math.Float32bits(g) == math.Float32bits(want)
	}
	d := mtOrd(g) - mtOrd(want)
	return -2 <= d && d <= 2
}

// mtVal draws inputs for the tail tests: mostly moderate values, some
// specials, some arbitrary bits.
func mtVal(r *rand.Rand) float32 {
	switch r.IntN(10) {
	case 0:
		return []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
			float32(math.NaN()), math.Float32frombits(1), 1e30, -1e30, -100, 100}[r.IntN(10)]
	case 1:
		return math.Float32frombits(r.Uint32())
	}
	return float32(r.NormFloat64() * 6)
}

const mtGuard = 9

var mtSentinel = math.Float32frombits(0x7fbadbad)

// TestMathTails: for every length 0..40, misalignment and aliasing, each
// kernel writes exactly dst, and each element is what that kernel gives
// for the same value in a long vector (every element goes through the same
// arithmetic, tails included).
func TestMathTails(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range mtKernels() {
		for _, f := range []string{"Exp", "GELU", "GELUBackward"} {
			for n := 0; n <= 40; n++ {
				for off := range 8 {
					x := make([]float32, n)
					dy := make([]float32, n)
					for i := range x {
						x[i], dy[i] = mtVal(r), mtVal(r)
					}
					// want: the same values inside a long vector.
					long := make([]float32, 64+n)
					longDy := make([]float32, 64+n)
					copy(long[37:], x)
					copy(longDy[37:], dy)
					lw := make([]float32, len(long))
					switch f {
					case "Exp":
						k.exp(lw, long)
					case "GELU":
						k.gelu(lw, long)
					default:
						k.geluBackward(lw, longDy, long)
					}
					want := lw[37 : 37+n]
					nargs := 2
					if f == "GELUBackward" {
						nargs = 3
					}
					for _, al := range mtAliasings[nargs] {
						mtCheckTail(t, k, f, n, off, al, x, dy, want)
					}
				}
			}
		}
	}
}

// mtAliasings map dst, then x (or dy, x) to the arrays they live in.
var mtAliasings = map[int][][]int{
	2: {{0, 1}, {0, 0}},
	3: {{0, 1, 2}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {0, 0, 0}},
}

func mtCheckTail(t *testing.T, k mathKernel, f string, n, off int, al []int, x, dy, want []float32) {
	t.Helper()
	narr := slices.Max(al) + 1
	arrs := make([][]float32, narr)
	offs := make([]int, narr)
	for j := range arrs {
		offs[j] = (off + 3*j) % 8
		arrs[j] = make([]float32, offs[j]+n+mtGuard)
		for i := range arrs[j] {
			arrs[j][i] = mtSentinel
		}
	}
	arg := func(i int) []float32 { return arrs[al[i]][offs[al[i]] : offs[al[i]]+n] }
	// Inputs go in last to first, so that an aliased x wins over dy.
	var xs, dys []float32
	if len(al) == 3 {
		dys = arg(1)
		copy(dys, dy)
		xs = arg(2)
	} else {
		xs = arg(1)
	}
	copy(xs, x)
	if len(al) == 3 && al[1] == al[2] { // dy is x
		w := make([]float32, n)
		k.geluBackward(w, slices.Clone(x), slices.Clone(x))
		want = w
	}
	switch f {
	case "Exp":
		k.exp(arg(0), xs)
	case "GELU":
		k.gelu(arg(0), xs)
	default:
		k.geluBackward(arg(0), dys, xs)
	}
	for j := range arrs {
		for i, g := range arrs[j] {
			var w float32
			guard := false
			switch {
			case i >= offs[j] && i < offs[j]+n && j == al[0]:
				w = want[i-offs[j]]
			case i >= offs[j] && i < offs[j]+n:
				continue // an input, not written
			default:
				w, guard = mtSentinel, true
			}
			if math.Float32bits(g) != math.Float32bits(w) && (guard || !isNaN32f(g) || !isNaN32f(w)) {
				t.Fatalf("%s %s n=%d off=%d alias=%v: array %d index %d: got %v (%#08x), want %v (%#08x)",
					k.name, f, n, off, al, j, i-offs[j], g, math.Float32bits(g), w, math.Float32bits(w))
			}
		}
	}
}

// TestMathKernelsAgree: the assembly kernels give the same bits as each
// other (NaNs aside): AVX-512 scales by VSCALEFPS where AVX2 multiplies by
// two powers of two, both one rounding.
func TestMathKernelsAgree(t *testing.T) {
	if len(mathKernels) < 2 {
		t.Skipf("only %d assembly kernels on this CPU", len(mathKernels))
	}
	r := rand.New(rand.NewPCG(9, 10))
	const n = 1 << 16
	x, dy := make([]float32, n), make([]float32, n)
	for round := range 40 {
		for i := range x {
			switch round % 3 {
			case 0:
				x[i] = mtVal(r)
			case 1:
				x[i] = math.Float32frombits(r.Uint32())
			default:
				x[i] = float32(r.Float64()*240 - 120)
			}
			dy[i] = mtVal(r)
		}
		var first [3][]float32
		for ki, k := range mathKernels {
			outs := [3][]float32{make([]float32, n), make([]float32, n), make([]float32, n)}
			k.exp(outs[0], x)
			k.gelu(outs[1], x)
			k.geluBackward(outs[2], dy, x)
			if ki == 0 {
				first = outs
				continue
			}
			for j, name := range []string{"Exp", "GELU", "GELUBackward"} {
				for i := range x {
					a, b := first[j][i], outs[j][i]
					if math.Float32bits(a) != math.Float32bits(b) && !(isNaN32f(a) && isNaN32f(b)) {
						t.Fatalf("%s(%v, dy=%v): %s %v (%#08x), %s %v (%#08x)", name, x[i], dy[i],
							mathKernels[0].name, a, math.Float32bits(a), k.name, b, math.Float32bits(b))
					}
				}
			}
		}
	}
}

func TestMathLengthMismatch(t *testing.T) {
	a, b := make([]float32, 5), make([]float32, 4)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { Exp(a, b) }, "vec: Exp: len(dst)=5, len(x)=4"},
		{func() { GELU(b, a) }, "vec: GELU: len(dst)=4, len(x)=5"},
		{func() { GELUBackward(a, b, a) }, "vec: GELUBackward: len(dst)=5, len(dy)=4, len(x)=5"},
		{func() { GELUBackward(a, a, b) }, "vec: GELUBackward: len(dst)=5, len(dy)=5, len(x)=4"},
	} {
		func() {
			defer func() {
				if p := recover(); p != c.want {
					t.Errorf("panic %v, want %q", p, c.want)
				}
			}()
			c.f()
		}()
	}
}

// TestMathTabLayout: the #defines of math_amd64.s name the rows of mathTab
// at their offsets.
func TestMathTabLayout(t *testing.T) {
	src, err := os.ReadFile("math_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defs := regexp.MustCompile(`(?m)^#define MT_(\w+) (\d+)$`).FindAllStringSubmatch(string(src), -1)
	if len(defs) != len(mathTabRows) {
		t.Fatalf("%d MT_ offsets in math_amd64.s, %d rows in mathTabRows", len(defs), len(mathTabRows))
	}
	for i, d := range defs {
		if d[1] != mathTabRows[i].name || d[2] != strconv.Itoa(32*i) {
			t.Errorf("math_amd64.s: MT_%s %s, want MT_%s %d", d[1], d[2], mathTabRows[i].name, 32*i)
		}
		for _, v := range mathTab[i] {
			if v != mathTabRows[i].bits {
				t.Errorf("mathTab[%d] = %#x, want %#x each", i, mathTab[i], mathTabRows[i].bits)
				break
			}
		}
	}
}

func TestMathImpl(t *testing.T) {
	names := []string{"go"}
	for _, k := range mathKernels {
		names = append(names, k.name)
	}
	if mathImpl != names[len(names)-1] {
		t.Fatalf("mathImpl = %q, want the last of %v", mathImpl, names)
	}
	t.Logf("math kernels: %s in use, of %s", mathImpl, strings.Join(names, ", "))
}

// Benchmarks at the size of one GELU pass of a transformer block. Inputs:
// N(0, 2²) for GELU, attention-like scores in [-20, 0] (after subtracting
// the row max) for Exp. "float64" is the loop over math.Exp / math.Erf that
// these kernels replace.
const mtBenchN = 393216

func mtBench(b *testing.B, bytesPerElem int, run func()) {
	b.SetBytes(int64(bytesPerElem * mtBenchN))
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/mtBenchN, "ns/elem")
}

func mtBenchData(scale, shift float64, clampHi float64) (x, dy, dst []float32) {
	r := rand.New(rand.NewPCG(11, 12))
	x, dy, dst = make([]float32, mtBenchN), make([]float32, mtBenchN), make([]float32, mtBenchN)
	for i := range x {
		x[i] = float32(min(r.NormFloat64()*scale+shift, clampHi))
		dy[i] = float32(r.NormFloat64())
	}
	return
}

func BenchmarkExp(b *testing.B) {
	x, _, dst := mtBenchData(6, -8, 0)
	// causal: the scores of 768 rows of 512 under a causal mask, -Inf above
	// the diagonal (in all, about half), as attention exponentiates them.
	causal := slices.Clone(x)
	for i := range causal {
		if i%512 > i/512%512 {
			causal[i] = float32(math.Inf(-1))
		}
	}
	for _, k := range mtKernels() {
		b.Run(k.name, func(b *testing.B) { mtBench(b, 8, func() { k.exp(dst, x) }) })
		b.Run(k.name+"/causal", func(b *testing.B) { mtBench(b, 8, func() { k.exp(dst, causal) }) })
	}
	b.Run("float64", func(b *testing.B) {
		mtBench(b, 8, func() {
			for i, v := range x {
				dst[i] = float32(math.Exp(float64(v)))
			}
		})
	})
}

func BenchmarkGELU(b *testing.B) {
	x, _, dst := mtBenchData(2, 0, math.Inf(1))
	for _, k := range mtKernels() {
		b.Run(k.name, func(b *testing.B) { mtBench(b, 8, func() { k.gelu(dst, x) }) })
	}
	b.Run("float64", func(b *testing.B) {
		mtBench(b, 8, func() {
			for i, v := range x {
				u := float64(v)
				dst[i] = float32(0.5 * u * (1 + math.Erf(u/math.Sqrt2)))
			}
		})
	})
}

func BenchmarkGELUBackward(b *testing.B) {
	x, dy, dst := mtBenchData(2, 0, math.Inf(1))
	for _, k := range mtKernels() {
		b.Run(k.name, func(b *testing.B) { mtBench(b, 12, func() { k.geluBackward(dst, dy, x) }) })
	}
	b.Run("float64", func(b *testing.B) {
		mtBench(b, 12, func() {
			for i, v := range x {
				u := float64(v)
				cdf := 0.5 * (1 + math.Erf(u/math.Sqrt2))
				pdf := math.Exp(-0.5*u*u) / math.Sqrt(2*math.Pi)
				dst[i] = float32(float64(dy[i]) * (cdf + u*pdf))
			}
		})
	})
}
