package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// specials are the edge values mixed into random data.
var specials = []uint32{
	0x7fc00000, // NaN
	0xffc00001, // negative NaN with payload
	0x7f800001, // signalling NaN
	0x7f800000, // +Inf
	0xff800000, // -Inf
	0x00000000, // +0
	0x80000000, // -0
	0x00000001, // smallest subnormal
	0x80000001,
	0x007fffff, // largest subnormal
	0x807fffff,
	0x00800000, // smallest normal
	0x7f7fffff, // MaxFloat32
	0xff7fffff,
	0x7f000000, // huge
	0x3f800000, // 1
	0xbf800000, // -1
	0x0da24260, // tiny (1e-30)
}

func isNaN32(v float32) bool { return v != v }

func finite(v float32) bool { return math.Float32bits(v)&0x7f800000 != 0x7f800000 }

// randVal draws a special value, arbitrary bits, or a normal number of
// random magnitude.
func randVal(r *rand.Rand) float32 {
	switch r.IntN(8) {
	case 0:
		return math.Float32frombits(specials[r.IntN(len(specials))])
	case 1:
		return math.Float32frombits(r.Uint32())
	default:
		return float32(math.Ldexp(r.NormFloat64(), r.IntN(40)-20))
	}
}

func randFinite(r *rand.Rand) float32 {
	for {
		if v := randVal(r); finite(v) {
			return v
		}
	}
}

var lengths = []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 39, 40, 41, 63, 64, 65, 95, 96, 97, 127, 128, 129, 1000, 1023, 1024, 1025, 100003}

func offsetsFor(n int) []int {
	if n > 2000 {
		return []int{0, 1, 5}
	}
	return []int{0, 1, 2, 3, 4, 5, 6, 7}
}

// aliasings map each slice argument to the array it lives in.
var aliasings = map[int][][]int{
	1: {{0}},
	2: {{0, 1}, {0, 0}},
	3: {{0, 1, 2}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {0, 0, 0}},
}

var scalars = []float32{0.01, -0.37, 0.9, 1, 0, float32(math.Copysign(0, -1)), 1e30, 1e-40,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}

type kernel struct {
	name  string
	nargs int
	// exactNaN: NaN results must match bit for bit too; otherwise any NaN
	// passes where the reference gives NaN (arithmetic may pick either
	// operand's payload).
	exactNaN bool
	scalars  bool
	run, ref func(a [][]float32, lr, mom float32)
}

var kernels = []kernel{
	{name: "Relu", nargs: 2, exactNaN: true,
		run: func(a [][]float32, _, _ float32) { Relu(a[0], a[1]) },
		ref: func(a [][]float32, _, _ float32) { ReluGo(a[0], a[1]) }},
	{name: "ReluBackward", nargs: 3, exactNaN: true,
		run: func(a [][]float32, _, _ float32) { ReluBackward(a[0], a[1], a[2]) },
		ref: func(a [][]float32, _, _ float32) { ReluBackwardGo(a[0], a[1], a[2]) }},
	{name: "Add", nargs: 2,
		run: func(a [][]float32, _, _ float32) { Add(a[0], a[1]) },
		ref: func(a [][]float32, _, _ float32) { addRef(a[0], a[1]) }},
	{name: "AddConst", nargs: 1, scalars: true,
		run: func(a [][]float32, c, _ float32) { AddConst(a[0], c) },
		ref: func(a [][]float32, c, _ float32) { addConstRef(a[0], c) }},
	{name: "SGD", nargs: 2, scalars: true,
		run: func(a [][]float32, lr, _ float32) { SGD(a[0], a[1], lr) },
		ref: func(a [][]float32, lr, _ float32) { sgdRef(a[0], a[1], lr) }},
	{name: "SGDMomentum", nargs: 3, scalars: true,
		run: func(a [][]float32, lr, mom float32) { SGDMomentum(a[0], a[1], a[2], lr, mom) },
		ref: func(a [][]float32, lr, mom float32) { sgdMomentumRef(a[0], a[1], a[2], lr, mom) }},
}

const guard = 9

// sentinel fills the guard zones; any write there is caught.
var sentinel = math.Float32frombits(0x7fbadbad)

func TestKernels(t *testing.T) {
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(k.name))))
			for _, n := range lengths {
				for _, off := range offsetsFor(n) {
					for _, al := range aliasings[k.nargs] {
						if !k.scalars {
							checkKernel(t, r, k, n, off, al, 0, 0)
							continue
						}
						if n > 2000 {
							checkKernel(t, r, k, n, off, al, 0.01, 0.9)
							continue
						}
						for i, lr := range scalars {
							mom := scalars[(i*7+off)%len(scalars)]
							checkKernel(t, r, k, n, off, al, lr, mom)
						}
					}
				}
			}
		})
	}
}

func checkKernel(t *testing.T, r *rand.Rand, k kernel, n, off int, al []int, lr, mom float32) {
	t.Helper()
	narr := slices.Max(al) + 1
	got := make([][]float32, narr)
	want := make([][]float32, narr)
	offs := make([]int, narr)
	for j := range got {
		offs[j] = (off + 3*j) % 8 // arrays misaligned against each other
		b := make([]float32, offs[j]+n+guard)
		for i := range b {
			if i < offs[j] || i >= offs[j]+n {
				b[i] = sentinel
			} else {
				b[i] = randVal(r)
			}
		}
		got[j] = b
		want[j] = slices.Clone(b)
	}
	args := func(arrs [][]float32) [][]float32 {
		a := make([][]float32, len(al))
		for i, j := range al {
			a[i] = arrs[j][offs[j] : offs[j]+n]
		}
		return a
	}
	k.run(args(got), lr, mom)
	k.ref(args(want), lr, mom)
	for j := range got {
		for i := range got[j] {
			g, w := got[j][i], want[j][i]
			if math.Float32bits(g) == math.Float32bits(w) || !k.exactNaN && isNaN32(g) && isNaN32(w) {
				continue
			}
			t.Fatalf("n=%d off=%d alias=%v lr=%v mom=%v: array %d index %d: got %#08x (%v), want %#08x (%v)",
				n, off, al, lr, mom, j, i-offs[j], math.Float32bits(g), g, math.Float32bits(w), w)
		}
	}
}

func TestAllFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7f800001), math.Float32frombits(0xffffffff)}
	check := func(x []float32, want bool, what string) {
		t.Helper()
		if got := AllFinite(x); got != want {
			t.Fatalf("%s: n=%d: AllFinite=%v, want %v", what, len(x), got, want)
		}
		if got := allFiniteRef(x); got != want {
			t.Fatalf("%s: n=%d: allFiniteRef=%v, want %v", what, len(x), got, want)
		}
	}
	check(nil, true, "nil")
	for n := 0; n <= 80; n++ {
		for off := range 8 {
			b := make([]float32, off+n)
			for i := range b {
				b[i] = randFinite(r)
			}
			x := b[off:]
			check(x, true, "finite")
			for pos := range n {
				for _, v := range bad {
					old := x[pos]
					x[pos] = v
					check(x, false, fmt.Sprintf("off=%d %v at %d", off, v, pos))
					x[pos] = old
				}
			}
		}
	}
	for _, n := range []int{1000, 1025, 100003} {
		for _, off := range []int{0, 3} {
			b := make([]float32, off+n)
			for i := range b {
				b[i] = randFinite(r)
			}
			x := b[off:]
			check(x, true, "finite")
			for _, pos := range []int{0, 7, 8, 31, 32, 33, n / 2, n&^31 - 1, n &^ 31, n&^7 - 1, n &^ 7, n - 2, n - 1} {
				if pos >= n {
					continue
				}
				for _, v := range bad {
					old := x[pos]
					x[pos] = v
					check(x, false, fmt.Sprintf("off=%d %v at %d", off, v, pos))
					x[pos] = old
				}
			}
		}
	}
	// Random mixes against the reference.
	for range 2000 {
		n := r.IntN(200)
		x := make([]float32, n)
		for i := range x {
			x[i] = randFinite(r)
			if r.IntN(300) == 0 {
				x[i] = randVal(r)
			}
		}
		check(x, allFiniteRef(x), "mix")
	}
}

func TestLengthMismatch(t *testing.T) {
	a, b := make([]float32, 5), make([]float32, 4)
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"Relu", func() { Relu(a, b) }, "vec: Relu: len(dst)=5, len(x)=4"},
		{"ReluBackward/dy", func() { ReluBackward(a, b, a) }, "vec: ReluBackward: len(dst)=5, len(dy)=4, len(x)=5"},
		{"ReluBackward/x", func() { ReluBackward(a, a, b) }, "vec: ReluBackward: len(dst)=5, len(dy)=5, len(x)=4"},
		{"Add", func() { Add(b, a) }, "vec: Add: len(dst)=4, len(x)=5"},
		{"SGD", func() { SGD(a, b, 0.1) }, "vec: SGD: len(w)=5, len(g)=4"},
		{"SGDMomentum/g", func() { SGDMomentum(a, b, a, 0.1, 0.9) }, "vec: SGDMomentum: len(w)=5, len(g)=4, len(buf)=5"},
		{"SGDMomentum/buf", func() { SGDMomentum(a, a, b, 0.1, 0.9) }, "vec: SGDMomentum: len(w)=5, len(g)=5, len(buf)=4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				got := recover()
				if got != tt.want {
					t.Errorf("panic = %v, want %q", got, tt.want)
				}
			}()
			tt.f()
		})
	}
}

func TestImpl(t *testing.T) {
	want := "go"
	if asmBuild && cpu.X86.HasAVX2 {
		want = "avx2"
	}
	if impl != want {
		t.Fatalf("impl = %q, want %q (asmBuild=%v, AVX2=%v)", impl, want, asmBuild, cpu.X86.HasAVX2)
	}
	t.Logf("impl = %s", impl)
}

var benchSizes = []int{65536, 535818}

func BenchmarkKernels(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 5))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	for _, n := range benchSizes {
		x, y, z := fill(n), fill(n), fill(n)
		for i := range z {
			z[i] *= 0.01
		}
		benches := []struct {
			name  string
			bytes int // bytes read and written per call
			f     func()
		}{
			{"Relu", 8 * n, func() { Relu(y, x) }},
			{"ReluBackward", 12 * n, func() { ReluBackward(z, y, x) }},
			{"AllFinite", 4 * n, func() { AllFinite(x) }},
			{"Add", 12 * n, func() { Add(y, z) }},
			{"SGD", 12 * n, func() { SGD(y, x, 1e-6) }},
			{"SGDMomentum", 20 * n, func() { SGDMomentum(y, x, z, 1e-6, 0.9) }},
		}
		for _, bb := range benches {
			b.Run(fmt.Sprintf("%s/n=%d", bb.name, n), func(b *testing.B) {
				b.SetBytes(int64(bb.bytes))
				for b.Loop() {
					bb.f()
				}
			})
		}
	}
}

// poolVal draws from few values, so that windows tie often (+0 and -0
// among them), with specials mixed in.
func poolVal(r *rand.Rand) float32 {
	if r.IntN(4) == 0 {
		return randVal(r)
	}
	return []float32{-1, 0, float32(math.Copysign(0, -1)), 1, 2}[r.IntN(5)]
}

// TestMaxPool2x2: the kernels give their references' bits, NaN payloads and
// arguments included, for rows of every length (the masked tails among
// them) and misalignment, and write nothing outside their windows.
func TestMaxPool2x2(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	same := func(what string, c string, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s %s: index %d: got %#08x, want %#08x", what, c, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
	for _, ow := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 16, 17, 23, 24, 25, 56, 100} {
		for _, rows := range []int{1, 2, 3, 7} {
			for _, extra := range []int{0, 1} { // w = 2·ow + extra: an odd last column no window covers
				for _, off := range []int{0, 1, 3, 5} {
					w := 2*ow + extra
					stride := 2*w + extra // and a row no window covers, sometimes
					c := fmt.Sprintf("rows=%d ow=%d w=%d stride=%d off=%d", rows, ow, w, stride, off)
					nx := (rows-1)*stride + w + 2*ow
					x := make([]float32, off+nx+guard)
					for i := range x {
						x[i] = poolVal(r)
					}
					dst, want := make([]float32, off+rows*ow+guard), make([]float32, off+rows*ow+guard)
					for i := range dst {
						dst[i], want[i] = sentinel, sentinel
					}
					arg, wantArg := make([]uint8, off+rows*ow+guard), make([]uint8, off+rows*ow+guard)
					maxPool2x2Ref(want[off:], wantArg[off:], x[off:], rows, ow, stride, w)
					for _, k := range poolKernelsAndDispatch() {
						d, a := slices.Clone(dst), slices.Clone(arg)
						k.forward(d[off:], a[off:], x[off:], rows, ow, stride, w)
						same("MaxPool2x2 "+k.name, c, d, want)
						if !slices.Equal(a, wantArg) {
							t.Fatalf("MaxPool2x2 %s %s: arguments %v, want %v", k.name, c, a[:min(len(a), 40)], wantArg[:min(len(a), 40)])
						}
					}

					g := make([]float32, off+rows*ow)
					for i := range g {
						g[i] = randVal(r)
					}
					for i := range arg {
						arg[i] = uint8(r.IntN(4))
					}
					dx := make([]float32, off+nx+guard)
					for i := range dx {
						dx[i] = sentinel
					}
					wantDX := slices.Clone(dx)
					maxPool2x2BackwardRef(wantDX[off:], g[off:], arg[off:], rows, ow, stride, w)
					for _, k := range poolKernelsAndDispatch() {
						d := slices.Clone(dx)
						k.backward(d[off:], g[off:], arg[off:], rows, ow, stride, w)
						same("MaxPool2x2Backward "+k.name, c, d, wantDX)
					}
				}
			}
		}
	}
}

// pooling is a 2×2 max pooling kernel pair on slices.
type pooling struct {
	name     string
	forward  func(dst []float32, arg []uint8, x []float32, rows, ow, stride, w int)
	backward func(dx, g []float32, arg []uint8, rows, ow, stride, w int)
}

// poolKernelsAndDispatch returns every assembly kernel pair this CPU runs,
// then MaxPool2x2 and MaxPool2x2Backward as callers reach them.
func poolKernelsAndDispatch() []pooling {
	var ps []pooling
	for _, k := range poolKernels {
		ps = append(ps, pooling{k.name,
			func(dst []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
				k.forward(&dst[0], &arg[0], &x[0], rows, ow, stride, w)
			},
			func(dx, g []float32, arg []uint8, rows, ow, stride, w int) {
				k.backward(&dx[0], &g[0], &arg[0], rows, ow, stride, w)
			}})
	}
	return append(ps, pooling{"dispatch", MaxPool2x2, MaxPool2x2Backward})
}

// TestMaxPool2x2Fits: sizes that do not fit panic, naming them.
func TestMaxPool2x2Fits(t *testing.T) {
	for _, c := range []struct{ nOut, nX, rows, ow, stride, w int }{
		{4, 16, 1, 4, 16, 7},  // the rows of a window overlap
		{8, 32, 2, 4, 12, 8},  // rows of windows overlap
		{3, 16, 1, 4, 16, 8},  // too short an output
		{4, 15, 1, 4, 16, 8},  // too short an input
		{4, 16, -1, 4, 16, 8}, // negative
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "MaxPool2x2") {
					t.Errorf("%+v: panic %v, want one naming MaxPool2x2", c, p)
				}
			}()
			MaxPool2x2(make([]float32, c.nOut), make([]uint8, c.nOut), make([]float32, c.nX), c.rows, c.ow, c.stride, c.w)
		}()
	}
}

func BenchmarkAddRows(b *testing.B) {
	const total = 1 << 16
	dst, x := make([]float32, total), make([]float32, total)
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				for o := 0; o+n <= total; o += n {
					Add(dst[o:o+n], x[o:o+n])
				}
			}
		})
	}
}

// BenchmarkMaxPool2x2 times each kernel pair on the MNIST CNN's pooled
// layers: 32 planes of 28×28 and 64 of 14×14 a sample, 128 samples.
func BenchmarkMaxPool2x2(b *testing.B) {
	for _, s := range []struct{ planes, w int }{{128 * 32, 28}, {128 * 64, 14}} {
		ow, rows := s.w/2, s.planes*s.w/2
		x := make([]float32, s.planes*s.w*s.w)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range x {
			x[i] = randVal(r)
		}
		dst, arg := make([]float32, rows*ow), make([]uint8, rows*ow)
		dx := make([]float32, len(x))
		for _, k := range poolKernelsAndDispatch() {
			b.Run(fmt.Sprintf("%dx%d/%s/forward", s.w, s.w, k.name), func(b *testing.B) {
				b.SetBytes(int64(4*len(x) + 5*len(dst)))
				for b.Loop() {
					k.forward(dst, arg, x, rows, ow, 2*s.w, s.w)
				}
			})
			b.Run(fmt.Sprintf("%dx%d/%s/backward", s.w, s.w, k.name), func(b *testing.B) {
				b.SetBytes(int64(4*len(x) + 5*len(dst)))
				for b.Loop() {
					k.backward(dx, dst, arg, rows, ow, 2*s.w, s.w)
				}
			})
		}
	}
}

// TestSGDMomentumTiny runs SGDMomentum where momentum entries shrink
// through the denormals (gradients of 0, as for a weight nothing feeds)
// and near them, beside tiny gradients and weights: it must give
// sgdMomentumRef's bits.
func TestSGDMomentumTiny(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	tiny := func() float32 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.Float32frombits(r.Uint32N(1<<23) | r.Uint32N(2)<<31) // denormal or ±0
		default:
			return float32(math.Ldexp(r.NormFloat64(), -r.IntN(60)-90)) // 2⁻¹⁵⁰ to 2⁻⁹⁰
		}
	}
	for _, h := range [][2]float32{{0.05, 0.9}, {1e-4, 0.99}, {1, 1}, {0.5, 0.01}, {3, 0.9}, {0.05, 0}} {
		lr, mom := h[0], h[1]
		sizes := []int{7, 8, 33, 64, 100, 1000, 1000}
		for c, n := range sizes {
			w, g, buf := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range w {
				w[i], buf[i] = float32(r.NormFloat64()*0.1), tiny()
				if c == len(sizes)-1 && r.IntN(40) != 0 { // the last: a tiny entry in 40, 32 floats with none and some
					buf[i] = float32(r.NormFloat64() * 0.01)
				}
				if r.IntN(3) == 0 {
					w[i] = tiny()
				}
				if r.IntN(4) == 0 {
					g[i] = tiny()
				} else if r.IntN(8) == 0 {
					g[i] = float32(r.NormFloat64())
				}
			}
			for _, al := range aliasings[3][1:] { // w, g and buf sharing an array
				a := [][]float32{slices.Clone(buf), slices.Clone(g)}
				want := [][]float32{slices.Clone(buf), slices.Clone(g)}
				SGDMomentum(a[al[0]], a[al[1]], a[al[2]], lr, mom)
				sgdMomentumRef(want[al[0]], want[al[1]], want[al[2]], lr, mom)
				for j := range a {
					if i := firstDiff32(a[j], want[j]); i >= 0 {
						t.Fatalf("lr=%v mom=%v n=%d alias %v: array %d element %d: %#08x, want %#08x", lr, mom, n, al, j, i, math.Float32bits(a[j][i]), math.Float32bits(want[j][i]))
					}
				}
			}
			for step := range 3 { // the same arrays again: their entries shrink on
				ww, wb := slices.Clone(w), slices.Clone(buf)
				SGDMomentum(w, g, buf, lr, mom)
				sgdMomentumRef(ww, g, wb, lr, mom)
				for j, got := range [][]float32{w, buf} {
					want := [][]float32{ww, wb}[j]
					if i := firstDiff32(got, want); i >= 0 {
						t.Fatalf("lr=%v mom=%v n=%d step %d: %s element %d: %#08x, want %#08x", lr, mom, n, step, []string{"w", "buf"}[j], i, math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// BenchmarkSGDMomentumDenormal times SGDMomentum over fc1's 401,408 weights
// of the MNIST MLP with one momentum entry in 60 denormal and its gradient
// 0, as after three epochs; mom = 1 keeps them so from call to call.
func BenchmarkSGDMomentumDenormal(b *testing.B) {
	const n = 401408
	w, g, buf := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range w {
		w[i], g[i], buf[i] = 0.01, 1e-3, 2e-3
		if i%60 == 0 {
			g[i], buf[i] = 0, math.Float32frombits(1000)
		}
	}
	b.SetBytes(20 * n)
	for b.Loop() {
		SGDMomentum(w, g, buf, 0.05, 1)
	}
}

// firstDiff32 returns the first index where a and b differ in bits, -1 if none.
func firstDiff32(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestAdam holds Adam to adamRef's bits (any NaN for a NaN) on every length
// and offset, with each flag on and off and constants of every size.
func TestAdam(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	for _, n := range lengths {
		for _, off := range offsetsFor(n) {
			for flags := range 8 {
				s := AdamStep{Decay: randFinite(r), WD: randFinite(r), Lerp: 0.1, OneMinus: 0.9,
					Beta2: 0.999, OmBeta2: 0.001, BC2Sqrt: randFinite(r), Eps: 1e-8, NegStep: randFinite(r),
					Decouple: flags&1 != 0, Coupled: flags&2 != 0, Small: flags&4 != 0}
				if r.IntN(2) == 0 {
					s.Lerp, s.OneMinus, s.Beta2, s.OmBeta2, s.Eps = randVal(r), randVal(r), randVal(r), randVal(r), randVal(r)
				}
				got, want := make([][]float32, 4), make([][]float32, 4)
				for j := range got {
					b := make([]float32, off+n)
					for i := range b {
						b[i] = randVal(r)
					}
					got[j], want[j] = b[off:], slices.Clone(b[off:])
				}
				Adam(got[0], got[1], got[2], got[3], &s)
				adamRef(want[0], want[1], want[2], want[3], &s)
				for j := range got {
					for i := range got[j] {
						g, w := got[j][i], want[j][i]
						if math.Float32bits(g) != math.Float32bits(w) && !(isNaN32(g) && isNaN32(w)) {
							t.Fatalf("n=%d off=%d step %+v: array %d element %d: %#08x, want %#08x", n, off, s, j, i, math.Float32bits(g), math.Float32bits(w))
						}
					}
				}
			}
		}
	}
}

// TestAdamFused holds Adam with the gradient's scaling and clearing folded
// in (Scaled, Zero) to adamRef and to the passes it replaces, scaling, Adam,
// clearing, bit for bit (any NaN for a NaN), on every length to 70 and a
// few longer, with each flag on and off; g is written in its range only.
func TestAdamFused(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	ns := []int{1000, 4099}
	for n := range 71 {
		ns = append(ns, n)
	}
	scales := []float32{1, 0.37, 1e-3}
	for _, n := range ns {
		for _, off := range []int{0, 3} {
			for flags := range 32 {
				for _, scale := range append(scales, randFinite(r)) {
					s := AdamStep{Decay: 1 - 1e-3, WD: 0.1, Lerp: 0.1, OneMinus: 0.9,
						Beta2: 0.999, OmBeta2: 0.001, BC2Sqrt: 0.3, Eps: 1e-8, NegStep: -1e-3, Scale: scale,
						Decouple: flags&1 != 0, Coupled: flags&2 != 0, Small: flags&4 != 0,
						Scaled: flags&8 != 0, Zero: flags&16 != 0}
					if r.IntN(2) == 0 {
						s.Decay, s.WD, s.BC2Sqrt, s.NegStep = randFinite(r), randFinite(r), randFinite(r), randFinite(r)
					}
					var got, ref, sep [4][]float32
					for j := range got {
						b := make([]float32, off+n+guard)
						for i := range b {
							b[i] = randVal(r)
						}
						b = b[:off+n]
						got[j], ref[j], sep[j] = b[off:], slices.Clone(b[off:]), slices.Clone(b[off:])
					}
					tail := got[1][n : n+guard] // past g's end, not to be written
					for i := range tail {
						tail[i] = sentinel
					}
					Adam(got[0], got[1], got[2], got[3], &s)
					adamRef(ref[0], ref[1], ref[2], ref[3], &s)
					plain := s
					plain.Scaled, plain.Zero = false, false
					if s.Scaled {
						for i := range sep[1] {
							sep[1][i] = sep[1][i] * s.Scale
						}
					}
					Adam(sep[0], sep[1], sep[2], sep[3], &plain)
					if s.Zero {
						clear(sep[1])
					}
					for _, want := range []struct {
						name string
						a    [4][]float32
					}{{"adamRef", ref}, {"three passes", sep}} {
						for j := range got {
							for i := range got[j] {
								g, w := got[j][i], want.a[j][i]
								if math.Float32bits(g) != math.Float32bits(w) && !(isNaN32(g) && isNaN32(w)) {
									t.Fatalf("n=%d off=%d step %+v: array %d element %d: %#08x, want %#08x as %s", n, off, s, j, i, math.Float32bits(g), math.Float32bits(w), want.name)
								}
							}
						}
					}
					for i, v := range tail {
						if math.Float32bits(v) != math.Float32bits(sentinel) {
							t.Fatalf("n=%d off=%d step %+v: g[%d] past the end written", n, off, s, n+i)
						}
					}
				}
			}
		}
	}
}

// BenchmarkAdam times Adam and adamRef, the scalar loop it replaces, over
// 2²⁰ parameters (the GPT recipe has about 0.8M).
func BenchmarkAdam(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(12, 13))
	w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range w {
		w[i], g[i], m[i], v[i] = float32(r.NormFloat64()*0.02), float32(r.NormFloat64()*1e-3), 0, 0
	}
	s := AdamStep{Decay: 1 - 1e-4, Lerp: 0.1, OneMinus: 0.9, Beta2: 0.99, OmBeta2: 0.01, BC2Sqrt: 0.5, Eps: 1e-8, NegStep: -1e-3, Decouple: true, Small: true}
	for _, c := range []struct {
		name string
		f    func(w, g, m, v []float32, s *AdamStep)
	}{{"asm", Adam}, {"ref", adamRef}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(24 * n)
			for b.Loop() {
				c.f(w, g, m, v, &s)
			}
		})
	}
}
