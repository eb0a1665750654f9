package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/internal/par"
)

// naive is the reference C = alpha*op(A)*op(B) + beta*C in float64.
func naive(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				var av, bv float64
				if tA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
		}
	}
}

func TestGemmLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {4, 6, 0}, {0, 3, 2}} {
		m, n, k := d[0], d[1], d[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				a := make([]float64, m*k)
				b := make([]float64, k*n)
				c := make([]float64, m*n)
				for _, s := range [][]float64{a, b, c} {
					for i := range s {
						s[i] = rng.Float64()*2 - 1
					}
				}
				want := append([]float64(nil), c...)
				naive(tA, tB, m, n, k, 1.5, a, max(lda, 1), b, max(ldb, 1), 0.5, want, max(n, 1))
				got := append([]float64(nil), c...)
				Dgemm(tA, tB, m, n, k, 1.5, a, max(lda, 1), b, max(ldb, 1), 0.5, got, max(n, 1))
				a32, b32, c32 := to32(a), to32(b), to32(c)
				Sgemm(tA, tB, m, n, k, 1.5, a32, max(lda, 1), b32, max(ldb, 1), 0.5, c32, max(n, 1))
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
						t.Fatalf("Dgemm(%v, %v, m=%d n=%d k=%d)[%d] = %v, want %v", tA, tB, m, n, k, i, got[i], want[i])
					}
					if math.Abs(float64(c32[i])-want[i]) > 1e-4*(1+math.Abs(want[i])) {
						t.Fatalf("Sgemm(%v, %v, m=%d n=%d k=%d)[%d] = %v, want %v", tA, tB, m, n, k, i, c32[i], want[i])
					}
				}
			}
		}
	}
}

func to32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// TestSgemmLongK checks that a long inner axis keeps float32 close to float64.
func TestSgemmLongK(t *testing.T) {
	const k = 1 << 20
	rng := rand.New(rand.NewPCG(5, 6))
	a := make([]float32, k)
	b := make([]float32, k)
	want := 0.0
	for i := range a {
		a[i], b[i] = rng.Float32(), rng.Float32()
		want += float64(a[i]) * float64(b[i])
	}
	c := []float32{7}
	Sgemm(false, false, 1, 1, k, 1, a, k, b, 1, 1, c, 1)
	want += 7
	rel := math.Abs(float64(c[0])-want) / want
	t.Logf("K=%d: relative error %.2g", k, rel)
	if rel > 2e-5 {
		t.Fatalf("Sgemm over K=%d: got %v, want %v (relative error %.2g)", k, c[0], want, rel)
	}
}

// layouts are the four (transA, transB) combinations.
var layouts = [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}}

func layoutName(tA, tB bool) string {
	s := [2]string{"N", "T"}
	b := func(x bool) int {
		if x {
			return 1
		}
		return 0
	}
	return s[b(tA)] + s[b(tB)]
}

// operands holds one random Sgemm problem with padded leading dimensions; the
// padding is NaN, so reading it would show in C.
type operands struct {
	threads       Threads // run's budget
	tA, tB        bool
	m, n, k       int
	a, b, c       []float32
	lda, ldb, ldc int
}

func newOperands(rng *rand.Rand, tA, tB bool, m, n, k, pad int) *operands {
	o := &operands{tA: tA, tB: tB, m: m, n: n, k: k}
	ar, ac := stored(tA, m, k)
	br, bc := stored(tB, k, n)
	fill := func(rows, cols int) ([]float32, int) {
		ld := cols + pad
		if ld == 0 {
			ld = 1
		}
		s := make([]float32, rows*ld)
		for i := range rows {
			for j := range ld {
				if j < cols {
					s[i*ld+j] = rng.Float32()*2 - 1
				} else {
					s[i*ld+j] = float32(math.NaN())
				}
			}
		}
		return s, ld
	}
	o.a, o.lda = fill(ar, ac)
	o.b, o.ldb = fill(br, bc)
	o.c, o.ldc = fill(m, n)
	return o
}

// check compares got (C after Sgemm) with the float64 reference computed from
// o's inputs: each element within 2e-4 of the magnitude of the terms it sums
// (|alpha|·Σ|a||b| + |beta·c|), and the padding of C untouched.
func (o *operands) check(t *testing.T, what string, alpha, beta float32, got []float32) {
	t.Helper()
	for i := range o.m {
		for j := range o.ldc {
			g := got[i*o.ldc+j]
			if j >= o.n {
				if !math.IsNaN(float64(g)) {
					t.Fatalf("%s: padding C[%d,%d] changed to %v", what, i, j, g)
				}
				continue
			}
			s, mag := 0.0, 0.0
			for p := range o.k {
				var av, bv float64
				if o.tA {
					av = float64(o.a[p*o.lda+i])
				} else {
					av = float64(o.a[i*o.lda+p])
				}
				if o.tB {
					bv = float64(o.b[j*o.ldb+p])
				} else {
					bv = float64(o.b[p*o.ldb+j])
				}
				s += av * bv
				mag += math.Abs(av * bv)
			}
			want := float64(alpha) * s
			mag *= math.Abs(float64(alpha))
			if beta != 0 {
				cv := float64(beta) * float64(o.c[i*o.ldc+j])
				want += cv
				mag += math.Abs(cv)
			}
			if d := math.Abs(float64(g) - want); !(d <= 2e-4*mag+1e-30) {
				t.Fatalf("%s: C[%d,%d] = %v, want %v (|terms| %g)", what, i, j, g, want, mag)
			}
		}
	}
}

// run calls Sgemm on a copy of C (NaN-filled when beta is 0) and returns it.
func (o *operands) run(alpha, beta float32) []float32 {
	c := append([]float32(nil), o.c...)
	if beta == 0 {
		for i := range c {
			c[i] = float32(math.NaN())
		}
	}
	o.threads.Sgemm(o.tA, o.tB, o.m, o.n, o.k, alpha, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
	return c
}

// withKernels runs f once with each kernel set this build and CPU can run.
func withKernels(t *testing.T, f func(t *testing.T)) {
	saved := kernels
	defer func() { kernels = saved }()
	for _, ks := range kernelSets() {
		kernels = ks
		t.Run(ks.name, f)
	}
}

// edgeSizes are sizes around multiples of a kernel set's tile sides.
func edgeSizes(ks *kernelSet) []int {
	set := map[int]bool{1: true, 2: true}
	for _, u := range []int{ks.mr, ks.vec, ks.nr(), 2 * ks.nr()} {
		for _, d := range []int{-1, 0, 1} {
			if u+d > 0 {
				set[u+d] = true
			}
		}
	}
	var s []int
	for v := range set {
		s = append(s, v)
	}
	return s
}

// TestSgemmShapes checks the four layouts against float64 over random shapes
// from 1 to 70, edge sizes around the tile sides, and primes, for every kernel
// set, with padded leading dimensions and alpha/beta variants.
func TestSgemmShapes(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		var shapes [][3]int
		for range 60 {
			shapes = append(shapes, [3]int{1 + rng.IntN(70), 1 + rng.IntN(70), 1 + rng.IntN(70)})
		}
		es := edgeSizes(kernels)
		for _, m := range es {
			for _, n := range es {
				shapes = append(shapes, [3]int{m, n, es[rng.IntN(len(es))]})
			}
		}
		shapes = append(shapes, [3]int{1, 1, 1}, [3]int{1, 97, 3}, [3]int{97, 1, 5}, [3]int{13, 17, 1}, [3]int{31, 37, 41})
		abs := [][2]float32{{1, 0}, {1, 1}, {-0.5, 0.25}, {2.5, -1}}
		for si, d := range shapes {
			for li, l := range layouts {
				ab := abs[(si+li)%len(abs)]
				o := newOperands(rng, l[0], l[1], d[0], d[1], d[2], rng.IntN(3))
				o.check(t, fmt.Sprintf("%s %dx%dx%d alpha=%v beta=%v", layoutName(l[0], l[1]), d[0], d[1], d[2], ab[0], ab[1]), ab[0], ab[1], o.run(ab[0], ab[1]))
			}
		}
	})
}

// TestSgemmLarge checks large shapes, the sizes training uses, split over two
// threads, in every layout and kernel set, with K cut into several blocks.
func TestSgemmLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large shapes")
	}
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		shapes := [][3]int{{128, 784, 512}, {512, 784, 128}, {128, 512, 784}, {129, 259, 1100}, {300, 50, 700}}
		for _, d := range shapes {
			for _, l := range layouts {
				o := newOperands(rng, l[0], l[1], d[0], d[1], d[2], 5)
				o.threads = 2
				o.check(t, fmt.Sprintf("%s %dx%dx%d", layoutName(l[0], l[1]), d[0], d[1], d[2]), 0.75, 0.5, o.run(0.75, 0.5))
			}
		}
	})
}

// TestSgemmBeta checks BLAS's beta and alpha semantics: beta = 0 overwrites C
// even where it held NaN or Inf, alpha = 0 only scales C and never reads A or
// B, and k = 0 scales C.
func TestSgemmBeta(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		nan, inf := float32(math.NaN()), float32(math.Inf(1))
		for _, d := range [][3]int{{3, 5, 4}, {9, 50, 7}, {64, 64, 64}} {
			m, n, k := d[0], d[1], d[2]
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			for i := range a {
				a[i] = 1
			}
			for i := range b {
				b[i] = 2
			}
			c := make([]float32, m*n)
			for i := range c {
				c[i] = [2]float32{nan, inf}[i%2]
			}
			Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
			for i, v := range c {
				if v != float32(2*k) {
					t.Fatalf("beta=0 over NaN/Inf: C[%d] = %v, want %v", i, v, 2*k)
				}
			}
			Sgemm(false, false, m, n, k, 1, a, k, b, n, float32(math.Copysign(0, -1)), c, n) // -0 is zero too
			if c[0] != float32(2*k) {
				t.Fatalf("beta=-0: C[0] = %v", c[0])
			}
			// alpha = 0: A and B are not read, C = beta*C.
			an := make([]float32, m*k)
			for i := range an {
				an[i] = nan
			}
			Sgemm(false, false, m, n, k, 0, an, k, b, n, 0.5, c, n)
			if c[0] != float32(k) {
				t.Fatalf("alpha=0: C[0] = %v, want %v", c[0], k)
			}
			// k = 0: C = beta*C, and beta = 0 clears NaN.
			c[1] = nan
			Sgemm(false, false, m, n, 0, 1, nil, 1, nil, n, 0, c, n)
			for i, v := range c {
				if v != 0 {
					t.Fatalf("k=0 beta=0: C[%d] = %v", i, v)
				}
			}
		}
	})
}

// TestSgemmThreadsBitIdentical checks that thread budgets 1 to 4 and several
// GOMAXPROCS give the same bits, in every layout, kernel set and split
// direction (shapes wide in n and tall in m, and 300×200×96, whose rows
// are split although it has columns enough: partition's rowSplitMinM).
func TestSgemmThreadsBitIdentical(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		shapes := [][3]int{{128, 784, 512}, {97, 333, 129}, {1000, 20, 300}, {300, 200, 96}, {64, 1030, 1300}}
		if testing.Short() {
			shapes = shapes[1:4]
		}
		procs := runtime.GOMAXPROCS(0)
		defer runtime.GOMAXPROCS(procs)
		for _, d := range shapes {
			for _, l := range layouts {
				o := newOperands(rng, l[0], l[1], d[0], d[1], d[2], 3)
				var ref []float32
				for _, gmp := range []int{1, 2, 4} {
					runtime.GOMAXPROCS(gmp)
					for th := 1; th <= 4; th++ {
						var got []float32
						o.threads = Threads(th)
						got = o.run(1.25, 0.5)
						if ref == nil {
							ref = got
							continue
						}
						for i := range ref {
							if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
								t.Fatalf("%s %v: GOMAXPROCS=%d threads=%d: C[%d] = %v, threads=1 gave %v", layoutName(l[0], l[1]), d, gmp, th, i, got[i], ref[i])
							}
						}
					}
				}
			}
		}
	})
}

// TestSgemmPartitions checks that every way of cutting C into blocks gives the
// same bits as computing it whole: tile edges never change an element's sum.
func TestSgemmPartitions(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(13, 14))
		ks := kernels
		o := newOperands(rng, false, true, 45, 101, 70, 2)
		g := sgemmArgs{transA: o.tA, transB: o.tB, m: o.m, n: o.n, k: o.k, alpha: 1, beta: 0.5,
			a: o.a, lda: o.lda, b: o.b, ldb: o.ldb, ldc: o.ldc}
		whole := append([]float32(nil), o.c...)
		g.c = whole
		w := new(workspace)
		w.run(ks, &g, 0, o.m, 0, o.n)
		for _, cut := range [][2]int{{1, 1}, {3, 7}, {ks.mr + 1, ks.vec - 1}, {o.m - 1, o.n - 1}} {
			got := append([]float32(nil), o.c...)
			g.c = got
			i, j := cut[0], cut[1]
			w.run(ks, &g, 0, i, 0, j)
			w.run(ks, &g, 0, i, j, o.n)
			w.run(ks, &g, i, o.m, 0, j)
			w.run(ks, &g, i, o.m, j, o.n)
			for x := range whole {
				if math.Float32bits(got[x]) != math.Float32bits(whole[x]) {
					t.Fatalf("cut at (%d,%d): C[%d] = %v, whole gave %v", i, j, x, got[x], whole[x])
				}
			}
		}
	})
}

// TestSgemmNoAllocNoLeak checks that steady-state calls do not allocate, on one
// thread and on two, and that the helper goroutines exit once idle.
func TestSgemmNoAllocNoLeak(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	o := newOperands(rng, false, true, 128, 256, 128, 0)
	c := make([]float32, len(o.c))
	before := runtime.NumGoroutine()
	for _, th := range []int{1, 2} {
		Threads(th).Sgemm(false, true, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0, c, o.ldc)
		allocs := testing.AllocsPerRun(20, func() {
			Threads(th).Sgemm(false, true, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0, c, o.ldc)
		})
		t.Logf("threads=%d: %v allocs per call", th, allocs)
		if allocs > 0 {
			t.Errorf("threads=%d: %v allocs per call, want 0", th, allocs)
		}
	}
	// Helpers exit after helperSpin without work.
	for range 1000 {
		if runtime.NumGoroutine() <= before && par.LiveHelpers() == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Errorf("%d goroutines (%d helpers) a second after the calls, %d before", runtime.NumGoroutine(), par.LiveHelpers(), before)
}

// TestWorkspacesHeldOnce gets and frees workspaces from many goroutines at
// once, through the CPUs' slots and the shared list: no workspace is ever
// held by two at a time.
func TestWorkspacesHeldOnce(t *testing.T) {
	var held sync.Map
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				w := getWorkspace()
				if _, dup := held.LoadOrStore(w, g); dup {
					select {
					case errs <- fmt.Sprintf("goroutine %d, get %d: a held workspace handed out again", g, i):
					default:
					}
				}
				if i%7 == 0 {
					runtime.Gosched() // another may move onto this CPU meanwhile
				}
				held.Delete(w)
				putWorkspace(w)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestWorkspacesFollowCPUs: a workspace is taken back on the CPU that freed
// it, and one freed on another CPU is taken before a new one is made, so a
// goroutine that moves between CPUs does not make workspaces without end.
func TestWorkspacesFollowCPUs(t *testing.T) {
	// Start from no free workspace; give them back at the end.
	wsMu.Lock()
	all := wsFree
	wsFree = nil
	wsMu.Unlock()
	for c := range wsSlot {
		if w := wsSlot[c].Swap(nil); w != nil {
			all = append(all, w)
		}
	}
	a, b := getWorkspaceOn(0), getWorkspaceOn(1)
	putWorkspaceOn(a, 0)
	putWorkspaceOn(b, 1)
	if got := getWorkspaceOn(0); got != a {
		t.Errorf("CPU 0 got another workspace than the one it freed")
	}
	if got := getWorkspaceOn(0); got != b {
		t.Errorf("CPU 0, its slot empty, did not take the workspace CPU 1 freed")
	}
	for _, w := range append(all, a, b) {
		putWorkspaceOn(w, 0)
	}
	if a := testing.AllocsPerRun(100, func() {
		for c := range 3 { // a goroutine that moves: freed on one CPU, taken on the next
			putWorkspaceOn(getWorkspaceOn(c), (c+1)%3)
		}
	}); a > 0 {
		t.Errorf("%v allocations a round of moves, want 0", a)
	}
}

// TestSgemmPanics checks that bad sizes and short slices panic.
func TestSgemmPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"negative m", func() { Sgemm(false, false, -1, 1, 1, 1, nil, 1, nil, 1, 0, nil, 1) }},
		{"short a", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		}},
		{"short c", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
		}},
		{"narrow ldb", func() {
			Sgemm(false, true, 2, 2, 3, 1, make([]float32, 6), 3, make([]float32, 6), 2, 0, make([]float32, 4), 2)
		}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

// TestPanelPackers checks each kernel set's packers against the portable ones
// over panel widths, depths that are not multiples of the block, and partial
// panels: every destination element written, columns past nn zero.
func TestPanelPackers(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, ks := range kernelSets() {
		for _, pw := range []int{4, 6, 8, 16, 32, 48} {
			for _, kc := range []int{1, 3, 15, 16, 17, 33, 100} {
				for _, nn := range []int{1, pw/2 + 1, pw - 1, pw} {
					if nn < 1 || nn > pw || (pw%ks.vec != 0 && pw != ks.mr) {
						continue
					}
					lds := max(kc, nn) + rng.IntN(4)
					src := make([]float32, max(kc, nn)*lds)
					for i := range src {
						src[i] = rng.Float32()
					}
					for name, f := range map[string][2]panelPacker{
						"copy":  {ks.copyPanel, copyPanelGo},
						"trans": {ks.transPanel, transPanelGo},
					} {
						got := make([]float32, kc*pw+16)
						want := make([]float32, kc*pw+16)
						for i := range got {
							got[i] = float32(math.NaN())
							want[i] = got[i]
						}
						f[0](got, src, lds, kc, nn, pw)
						f[1](want, src, lds, kc, nn, pw)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s %sPanel(kc=%d nn=%d pw=%d)[%d] = %v, want %v", ks.name, name, kc, nn, pw, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestSgemmAVX2MatchesAVX512 checks that the assembly kernel sets give the
// same bits: both sum each element with one FMA per step in the same order
// over the same k blocks, so a result does not depend on the CPU's vector
// width. (The Go kernel rounds differently.)
func TestSgemmAVX2MatchesAVX512(t *testing.T) {
	var sets []*kernelSet
	for _, ks := range kernelSets() {
		if ks.name != "go" {
			sets = append(sets, ks)
		}
	}
	if len(sets) < 2 {
		t.Skip("fewer than two assembly kernel sets on this CPU or build")
	}
	saved := kernels
	defer func() { kernels = saved }()
	rng := rand.New(rand.NewPCG(19, 20))
	for _, d := range [][3]int{{37, 101, 1300}, {128, 200, 64}, {5, 3, 2}} {
		for _, l := range layouts {
			o := newOperands(rng, l[0], l[1], d[0], d[1], d[2], 1)
			var ref []float32
			for _, ks := range sets {
				kernels = ks
				got := o.run(1.5, 0.5)
				if ref == nil {
					ref = got
					continue
				}
				for i := range ref {
					if math.Float32bits(got[i]) != math.Float32bits(ref[i]) && !math.IsNaN(float64(ref[i])) {
						t.Fatalf("%s %v: %s gives C[%d] = %v, %s %v", layoutName(l[0], l[1]), d, ks.name, i, got[i], sets[0].name, ref[i])
					}
				}
			}
		}
	}
}

// kSlice returns op(A)'s columns and op(B)'s rows from step p on, for a call
// over a part of k.
func (o *operands) kSlice(p int) (a, b []float32) {
	a, b = o.a[p:], o.b[p:]
	if o.tA {
		a = o.a[p*o.lda:]
	}
	if !o.tB {
		b = o.b[p*o.ldb:]
	}
	return a, b
}

// TestSgemmChunkedSplits checks what SgemmChunked is for: one call over k
// gives the bits of calls over parts of k cut at multiples of KChunk, made in
// order with beta = 1 after the first, for every layout, kernel set, thread
// budget and tile edge, with k in one block and in several; and it stays
// within float32 accuracy of the float64 product.
func TestSgemmChunkedSplits(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, c := range []struct {
			m, n, k int
			splits  [][]int // part lengths
		}{
			{37, 101, 256, [][]int{{64, 64, 64, 64}, {32, 32, 32, 32, 32, 32, 32, 32}, {96, 160}, {224, 32}}},
			{128, 200, 256, [][]int{{128, 128}, {32, 224}}},
			{9, 13, 45, [][]int{{32, 13}}},
			{30, 400, 1100, [][]int{{544, 556}, {1024, 76}}},
			{288, 200, 128, [][]int{{64, 64}, {32, 96}}}, // split in rows on several threads (partition)
		} {
			for _, l := range layouts {
				o := newOperands(rng, l[0], l[1], c.m, c.n, c.k, 2)
				name := fmt.Sprintf("%s %dx%dx%d", layoutName(l[0], l[1]), c.m, c.n, c.k)
				var whole []float32
				func(th Threads) {
					whole = append([]float32(nil), o.c...)
					th.SgemmChunked(o.tA, o.tB, o.m, o.n, o.k, 1.5, o.a, o.lda, o.b, o.ldb, 0.5, whole, o.ldc)
				}(Threads(1))
				o.check(t, name, 1.5, 0.5, whole)
				for th := 1; th <= 3; th++ {
					func(th Threads) {
						for _, parts := range append(c.splits, []int{c.k}) {
							got := append([]float32(nil), o.c...)
							beta, p := float32(0.5), 0
							for _, kk := range parts {
								a, b := o.kSlice(p)
								th.SgemmChunked(o.tA, o.tB, o.m, o.n, kk, 1.5, a, o.lda, b, o.ldb, beta, got, o.ldc)
								beta, p = 1, p+kk
							}
							for i := range whole {
								if math.Float32bits(got[i]) != math.Float32bits(whole[i]) && !math.IsNaN(float64(whole[i])) {
									t.Fatalf("%s threads=%d parts %v: got C[%d] = %v, want %v (one call)", name, th, parts, i, got[i], whole[i])
								}
							}
						}
					}(Threads(th))
				}
			}
		}
	})
}

// TestDgemmChunkedSplits is TestSgemmChunkedSplits for DgemmChunked.
func TestDgemmChunkedSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const m, n, k = 17, 29, 256
	for _, l := range layouts {
		tA, tB := l[0], l[1]
		a, b, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for _, s := range [][]float64{a, b, c} {
			for i := range s {
				s[i] = rng.Float64()*2 - 1
			}
		}
		lda, ldb := k, n
		if tA {
			lda = m
		}
		if tB {
			ldb = k
		}
		whole := append([]float64(nil), c...)
		DgemmChunked(tA, tB, m, n, k, 1.5, a, lda, b, ldb, 0.5, whole, n)
		want := append([]float64(nil), c...)
		naive(tA, tB, m, n, k, 1.5, a, lda, b, ldb, 0.5, want, n)
		for _, parts := range [][]int{{64, 192}, {32, 32, 192}} {
			got := append([]float64(nil), c...)
			beta, p := 0.5, 0
			for _, kk := range parts {
				ap, bp := a[p:], b[p:]
				if tA {
					ap = a[p*lda:]
				}
				if !tB {
					bp = b[p*ldb:]
				}
				DgemmChunked(tA, tB, m, n, kk, 1.5, ap, lda, bp, ldb, beta, got, n)
				beta, p = 1, p+kk
			}
			for i := range whole {
				if math.Float64bits(got[i]) != math.Float64bits(whole[i]) {
					t.Fatalf("%s parts %v: got C[%d] = %v, want %v (one call)", layoutName(tA, tB), parts, i, got[i], whole[i])
				}
				if math.Abs(whole[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
					t.Fatalf("%s: got C[%d] = %v, want %v (float64 reference)", layoutName(tA, tB), i, whole[i], want[i])
				}
			}
		}
	}
}
