package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// clipParams returns gradients (3, 4) and (12), of global norm 13, in dtype dt, and a
// parameter without a gradient.
func clipParams(dt tensor.DType) []Param {
	a := newParam("a", dt, 0, 0)
	b := newParam("b", dt, 0)
	a.Grad.CopyFrom(tensor.FromFloat64s(dt, []float64{3, 4}, 2))
	b.Grad.Fill(12)
	return []Param{a, {Name: "frozen", Value: tensor.Zeros(dt, 1)}, b}
}

func grads(ps []Param) []float64 {
	var out []float64
	for _, p := range ps {
		if p.Grad != nil {
			out = append(out, p.Grad.Float64s()...)
		}
	}
	return out
}

func TestGradNorm(t *testing.T) {
	for _, dt := range dtypes {
		if got := GradNorm(clipParams(dt)); got != 13 {
			t.Errorf("GradNorm(%v grads [3 4], [12]): got %v, want 13", dt, got)
		}
	}
	mixed := []Param{clipParams(tensor.Float32)[0], clipParams(tensor.Float64)[2]}
	if got := GradNorm(mixed); got != 13 {
		t.Errorf("GradNorm(float32 [3 4], float64 [12]): got %v, want 13", got)
	}
	if got := GradNorm(nil); got != 0 {
		t.Errorf("GradNorm(nil): got %v, want 0", got)
	}
	// 0.1 is not exact in float32: the norm is of the float32 values, in float64.
	p := newParam("p", tensor.Float32, 0)
	p.Grad.Fill(0.1)
	if got, want := GradNorm([]Param{p}), float64(float32(0.1)); got != want {
		t.Errorf("GradNorm(float32 [0.1]): got %v, want %v", got, want)
	}
}

func TestClipGradNorm(t *testing.T) {
	cases := []struct {
		maxNorm float64
		want    []float64 // gradients after clipping
	}{
		// 6.5/(13+1e-6) is just under 1/2: about 1.5, 2, 6.
		{6.5, []float64{3 * 6.5 / (13 + 1e-6), 4 * 6.5 / (13 + 1e-6), 12 * 6.5 / (13 + 1e-6)}},
		{1, []float64{3 / (13 + 1e-6), 4 / (13 + 1e-6), 12 / (13 + 1e-6)}},
		// At exactly the norm PyTorch still scales by 13/(13+1e-6) < 1.
		{13, []float64{3 * 13 / (13 + 1e-6), 4 * 13 / (13 + 1e-6), 12 * 13 / (13 + 1e-6)}},
		{13.00001, []float64{3, 4, 12}},
		{100, []float64{3, 4, 12}},
		{0, []float64{0, 0, 0}},
	}
	for _, c := range cases {
		for _, dt := range dtypes {
			inputs := fmt.Sprintf("ClipGradNorm(%v grads [3 4], [12], maxNorm=%v)", dt, c.maxNorm)
			ps := clipParams(dt)
			if total := ClipGradNorm(ps, c.maxNorm); total != 13 {
				t.Errorf("%s: got norm %v, want 13", inputs, total)
			}
			got := grads(ps)
			for i := range c.want {
				if !near(got[i], c.want[i], tol(dt)) {
					t.Errorf("%s: grad %d: got %v, want %v", inputs, i, got[i], c.want[i])
				}
			}
		}
	}
	// The hand value: clipping (3, 4), (12) to norm 6.5 halves them, to within 1e-7.
	ps := clipParams(tensor.Float64)
	ClipGradNorm(ps, 6.5)
	for i, want := range []float64{1.5, 2, 6} {
		if got := grads(ps)[i]; math.Abs(got-want) > 1e-6 {
			t.Errorf("ClipGradNorm(float64 [3 4], [12], 6.5): grad %d: got %v, want %v", i, got, want)
		}
	}
}

// TestClipGradNormComposition checks that ClipGradNorm is GradNorm, ClipCoef and
// ScaleGrads, bit for bit, as an actor doing them separately relies on.
func TestClipGradNormComposition(t *testing.T) {
	for _, dt := range dtypes {
		a := twoParams(dt, dt)
		setGrads(a, 7)
		b := cloneParams(a)
		total := ClipGradNorm(a, 0.3)
		norm := GradNorm(b)
		c := ClipCoef(norm, 0.3)
		ScaleGrads(b, c)
		if math.Float64bits(total) != math.Float64bits(norm) {
			t.Errorf("%v: ClipGradNorm returned %v, GradNorm %v", dt, total, norm)
		}
		if c >= 1 {
			t.Errorf("%v: ClipCoef(%v, 0.3): got %v, want < 1", dt, norm, c)
		}
		for i := range a {
			if !sameBits(a[i].Grad, b[i].Grad) {
				t.Errorf("%v: %s: ClipGradNorm gave %v, the composition %v", dt, a[i].Name, a[i].Grad, b[i].Grad)
			}
		}
	}
}

func TestClipCoef(t *testing.T) {
	one, eps := 1.0, 1e-6 // variables: a constant expression would be exact, not float64
	cases := []struct{ total, maxNorm, want float64 }{
		{13, 100, 1},
		{0, 1, 1},
		{1, 0.5, 0.5 / (one + eps)},
		{math.Inf(1), 1, 0},
		{math.NaN(), 1, math.NaN()},
	}
	for _, c := range cases {
		got := ClipCoef(c.total, c.maxNorm)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("ClipCoef(%v, %v): got %v, want %v", c.total, c.maxNorm, got, c.want)
		}
	}
}

// TestClipGradNormNonFinite checks PyTorch's behaviour: a NaN norm makes every
// gradient NaN; an infinite one zeroes the finite gradients.
func TestClipGradNormNonFinite(t *testing.T) {
	for _, dt := range dtypes {
		ps := clipParams(dt)
		ps[2].Grad.Fill(math.NaN())
		if total := ClipGradNorm(ps, 1); !math.IsNaN(total) {
			t.Errorf("%v: norm with a NaN grad: got %v, want NaN", dt, total)
		}
		for i, g := range grads(ps) {
			if !math.IsNaN(g) {
				t.Errorf("%v: grad %d after a NaN norm: got %v, want NaN", dt, i, g)
			}
		}
		ps = clipParams(dt)
		ps[2].Grad.Fill(math.Inf(1))
		if total := ClipGradNorm(ps, 1); !math.IsInf(total, 1) {
			t.Errorf("%v: norm with an Inf grad: got %v, want +Inf", dt, total)
		}
		if got := grads(ps)[:2]; got[0] != 0 || got[1] != 0 {
			t.Errorf("%v: finite grads after an Inf norm: got %v, want [0 0]", dt, got)
		}
	}
}

func TestScaleGrads(t *testing.T) {
	for _, dt := range dtypes {
		ps := clipParams(dt)
		ScaleGrads(ps, 0.1)
		want := make([]float64, 3)
		if dt == tensor.Float32 {
			for i, g := range []float32{3, 4, 12} {
				want[i] = float64(g * float32(0.1))
			}
		} else {
			c := 0.1
			want = []float64{3 * c, 4 * c, 12 * c} // rounded products: 0.30000000000000004, ...
		}
		for i, g := range grads(ps) {
			if g != want[i] {
				t.Errorf("ScaleGrads(%v [3 4], [12], 0.1): grad %d: got %v, want %v", dt, i, g, want[i])
			}
		}
	}
}

func TestClipGradValue(t *testing.T) {
	cases := []struct {
		clip float64
		in   []float64
		want []float64
	}{
		{1, []float64{-3, 0.5, 2, -0.25, 1, -1}, []float64{-1, 0.5, 1, -0.25, 1, -1}},
		{0.5, []float64{math.Inf(-1), math.Inf(1), 0}, []float64{-0.5, 0.5, 0}},
		{0, []float64{-3, 2}, []float64{0, 0}},
		{10, []float64{-3, 2}, []float64{-3, 2}},
	}
	for _, c := range cases {
		for _, dt := range dtypes {
			p := newParam("p", dt, make([]float64, len(c.in))...)
			p.Grad.CopyFrom(tensor.FromFloat64s(dt, c.in, len(c.in)))
			ClipGradValue([]Param{p, {Name: "frozen"}}, c.clip)
			for i, g := range p.Grad.Float64s() {
				if g != c.want[i] {
					t.Errorf("ClipGradValue(%v %v, %v): element %d: got %v, want %v", dt, c.in, c.clip, i, g, c.want[i])
				}
			}
		}
	}
	// The bound is rounded to the gradient's dtype; NaN stays NaN.
	p := newParam("p", tensor.Float32, 0, 0, 0)
	p.Grad.CopyFrom(tensor.FromFloat64s(tensor.Float32, []float64{1, -1, math.NaN()}, 3))
	ClipGradValue([]Param{p}, 0.1)
	got := p.Grad.Data32()
	if got[0] != float32(0.1) || got[1] != -float32(0.1) || !math.IsNaN(float64(got[2])) {
		t.Errorf("ClipGradValue(float32 [1 -1 NaN], 0.1): got %v, want [%v %v NaN]", got, float32(0.1), -float32(0.1))
	}
}

func TestClipPanics(t *testing.T) {
	ps := clipParams(tensor.Float32)
	mustPanic(t, "ClipGradValue(clip=-1)", func() { ClipGradValue(ps, -1) })
	mustPanic(t, "ClipGradValue(clip=NaN)", func() { ClipGradValue(ps, math.NaN()) })
	mustPanic(t, "ClipGradNorm(maxNorm=-1)", func() { ClipGradNorm(ps, -1) })
	mustPanic(t, "ClipCoef(maxNorm=NaN)", func() { ClipCoef(1, math.NaN()) })
}

// gptShapes are the parameters of the recipe GPT (4 blocks of width 128, 65
// characters, 64 positions), about 0.8M: a stage's sums of squares.
func gptShapes() [][]int {
	shapes := [][]int{{65, 128}, {64, 128}}
	for range 4 {
		shapes = append(shapes, []int{128}, []int{128}, []int{128, 384}, []int{384}, []int{128, 128}, []int{128},
			[]int{128}, []int{128}, []int{128, 512}, []int{512}, []int{512, 128}, []int{128})
	}
	return append(shapes, []int{128}, []int{128}, []int{128, 65}, []int{65})
}

// TestSumsOfSquares holds SumsOfSquares to SumSquares bit for bit, over
// lists of gradients of every length from none to thousands, float32 and
// float64, missing ones, and the non-finite.
func TestSumsOfSquares(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var lists [][]Param
	for k := range 40 {
		var ps []Param
		for range k % 13 {
			dt := tensor.Float32
			if r.IntN(8) == 0 {
				dt = tensor.Float64
			}
			n := []int{0, 1, 7, 100, 1000, 5000}[r.IntN(6)] + r.IntN(3)
			p := Param{Name: "p", Value: tensor.Zeros(dt, n), Grad: randTensor(dt, r, 1, n)}
			switch r.IntN(10) {
			case 0:
				p.Grad = nil
			case 1:
				p.Grad.Set(math.Inf(1), 0)
			case 2:
				p.Grad.Set(math.NaN(), n/2)
			}
			ps = append(ps, p)
		}
		lists = append(lists, ps)
	}
	var gpt []Param
	for _, s := range gptShapes() {
		gpt = append(gpt, Param{Name: "p", Value: tensor.Zeros(tensor.Float32, s...), Grad: randTensor(tensor.Float32, r, 1e-2, s...)})
	}
	lists = append(lists, gpt)
	for k, ps := range lists {
		got := make([]float64, len(ps))
		SumsOfSquares(got, ps)
		for i, p := range ps {
			if want := SumSquares(p); math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Errorf("list %d: parameter %d of %d: %v, want %v", k, i, len(ps), got[i], want)
			}
		}
	}
}

// BenchmarkSumsOfSquares times the recipe GPT's sums of squares, one
// gradient after another (SumSquares) and side by side.
func BenchmarkSumsOfSquares(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	var ps []Param
	for _, s := range gptShapes() {
		ps = append(ps, Param{Name: "p", Value: tensor.Zeros(tensor.Float32, s...), Grad: randTensor(tensor.Float32, r, 1e-2, s...)})
	}
	sums := make([]float64, len(ps))
	b.Run("one", func(b *testing.B) {
		for b.Loop() {
			for i, p := range ps {
				sums[i] = SumSquares(p)
			}
		}
	})
	b.Run("lanes", func(b *testing.B) {
		for b.Loop() {
			SumsOfSquares(sums, ps)
		}
	})
}
