package nn_test

// Tests of the Layer contract: gradients accumulate until ZeroGrad, several
// micro-batches may be in flight, a backward without its forward panics, and
// Reset drops every cache. Plus forward values checked against PyTorch's
// definitions, and float32 against float64.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// layerCase builds one fresh, deterministic layer of each kind, for inputs of
// width feat, or of samples shaped in when in is set; out is the output
// sample's shape when it is neither the input's nor a Linear's.
type layerCase struct {
	name    string
	feat    int
	make    func(t testing.TB, dt tensor.DType) nn.Layer
	in, out []int
}

// inShape returns the shape of an input of rows samples.
func (c layerCase) inShape(rows int) []int {
	if c.in == nil {
		return []int{rows, c.feat}
	}
	return append([]int{rows}, c.in...)
}

// outShape returns the shape of l's output for an input of rows samples.
func (c layerCase) outShape(l nn.Layer, rows int) []int {
	if lin, ok := l.(*nn.Linear); ok {
		return []int{rows, lin.Out}
	}
	if c.out != nil {
		return append([]int{rows}, c.out...)
	}
	return c.inShape(rows)
}

func layerCases() []layerCase {
	return []layerCase{
		{name: "linear", feat: 5, make: func(t testing.TB, dt tensor.DType) nn.Layer {
			l := mustLinear(t, dt, 5, 4, nn.HeUniform, 21)
			l.B.CopyFrom(randN(newRNG(22), dt, 1, 4))
			return l
		}},
		{name: "relu", feat: 5, make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewReLU() }},
		{name: "leaky_relu", feat: 5, make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewLeakyReLU(0.1) }},
		{name: "prelu", feat: 5, make: func(_ testing.TB, dt tensor.DType) nn.Layer { return nn.NewPReLU(dt) }},
		{name: "sigmoid", feat: 5, make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewSigmoid() }},
		{name: "tanh", feat: 5, make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewTanh() }},
		{name: "gelu", feat: 5, make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewGELU(false) }},
		{name: "gelu", feat: 5, make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewGELU(true) }},
		{name: "softmax", feat: 5, make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewSoftmax() }},
		{name: "dropout", feat: 5, make: func(t testing.TB, _ tensor.DType) nn.Layer { return mustDropout(t, 0.4, 3, 1) }},
		{name: "layernorm", feat: 5, make: func(_ testing.TB, dt tensor.DType) nn.Layer {
			l := nn.NewLayerNorm(dt, 5)
			l.Gain.CopyFrom(tensor.RandUniform(newRNG(23), dt, 0.5, 1.5, 5))
			l.Bias.CopyFrom(randN(newRNG(24), dt, 1, 5))
			return l
		}},
		{name: "conv2d", make: func(t testing.TB, dt tensor.DType) nn.Layer {
			l := mustConv2d(t, dt, 2, 3, 3, 2, 2, 1, 25)
			l.B.CopyFrom(randN(newRNG(26), dt, 1, 3))
			return l
		}, in: []int{2, 5, 4}, out: []int{3, 3, 3}},
		{name: "maxpool2d", make: func(t testing.TB, _ tensor.DType) nn.Layer { return mustMaxPool2d(t, 2, 1) }, in: []int{2, 3, 4}, out: []int{2, 2, 3}},
		{name: "avgpool2d", make: func(t testing.TB, _ tensor.DType) nn.Layer { return mustAvgPool2d(t, 2, 0) }, in: []int{2, 4, 5}, out: []int{2, 2, 2}},
		{name: "batchnorm", make: func(t testing.TB, dt tensor.DType) nn.Layer {
			l := mustBatchNorm(t, dt, 3)
			l.Gamma.CopyFrom(tensor.RandUniform(newRNG(27), dt, 0.5, 1.5, 3))
			l.Beta.CopyFrom(randN(newRNG(28), dt, 1, 3))
			return l
		}, in: []int{3, 2, 2}},
		{name: "batchnorm", feat: 4, make: func(t testing.TB, dt tensor.DType) nn.Layer { return mustBatchNorm(t, dt, 4) }},
		{name: "flatten", make: func(testing.TB, tensor.DType) nn.Layer { return nn.NewFlatten() }, in: []int{2, 3, 2}, out: []int{12}},
	}
}

func TestKind(t *testing.T) {
	for _, c := range layerCases() {
		if got := c.make(t, tensor.Float64).Kind(); got != c.name {
			t.Errorf("Kind() = %q, want %q", got, c.name)
		}
	}
}

func TestGradientsAccumulate(t *testing.T) {
	for _, c := range layerCases() {
		l := c.make(t, tensor.Float64)
		if len(l.Params()) == 0 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			rng := newRNG(31)
			x := randAway(rng, 1, 0.05, c.inShape(4)...)
			dy := randN(rng, tensor.Float64, 1, c.outShape(l, 4)...)
			p := nn.Pass{Step: 1, Train: true}

			l.Forward(p, x)
			dx1 := l.Backward(p, dy, true)
			once := cloneGrads(l.Params())

			l.Forward(p, x)
			dx2 := l.Backward(p, dy, false)
			if dx2 != nil {
				t.Errorf("Backward(needDX=false) = %v, want nil", dx2)
			}
			for i, pr := range l.Params() {
				want := once[i].Clone()
				d := want.Data64()
				for j := range d {
					d[j] *= 2
				}
				if diff := maxDiff(pr.Grad, want); diff > 1e-12 {
					t.Errorf("%s grad after two backwards: got %v, want twice %v (max diff %g)", pr.Name, pr.Grad, once[i], diff)
				}
				if !tensor.EqualShapes(pr.Grad.Shape(), pr.Value.Shape()) || pr.Grad.DType() != pr.Value.DType() {
					t.Errorf("%s grad is %v %v, value %v %v", pr.Name, pr.Grad.DType(), pr.Grad.Shape(), pr.Value.DType(), pr.Value.Shape())
				}
			}

			l.ZeroGrad()
			for _, pr := range l.Params() {
				if z := tensor.Zeros(tensor.Float64, pr.Grad.Shape()...); !sameBits(pr.Grad, z) {
					t.Errorf("%s grad after ZeroGrad: got %v, want zeros", pr.Name, pr.Grad)
				}
			}

			// The input gradient does not depend on accumulated state.
			l.Forward(p, x)
			if dx3 := l.Backward(p, dy, true); !sameBits(dx3, dx1) {
				t.Errorf("dx after ZeroGrad: got %v, want %v", dx3, dx1)
			}
			if l.InFlight() != 0 {
				t.Errorf("InFlight() = %d after every backward, want 0", l.InFlight())
			}
		})
	}
}

// TestMicroBatchesInFlight runs three micro-batches all forward then all
// backward (GPipe), interleaved (sequential), and backward out of order, and
// wants the same input gradients and parameter gradients from each.
func TestMicroBatchesInFlight(t *testing.T) {
	const micros = 3
	for _, c := range layerCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := newRNG(41)
			var xs, dys []*tt
			for m := range micros {
				rows := m + 2 // micro-batches of different sizes
				xs = append(xs, randAway(rng, 1, 0.05, c.inShape(rows)...))
				dys = append(dys, randN(rng, tensor.Float64, 1, c.outShape(c.make(t, tensor.Float64), rows)...))
			}
			pass := func(m int) nn.Pass { return nn.Pass{Step: 7, Micro: m, Train: true} }

			// Interleaved: F0 B0 F1 B1 F2 B2.
			seq := c.make(t, tensor.Float64)
			seqDX := make([]*tt, micros)
			for m := range micros {
				seq.Forward(pass(m), xs[m])
				if got := seq.InFlight(); got != 1 {
					t.Errorf("interleaved: InFlight() after forward %d = %d, want 1", m, got)
				}
				seqDX[m] = seq.Backward(pass(m), dys[m], true)
				if got := seq.InFlight(); got != 0 {
					t.Errorf("interleaved: InFlight() after backward %d = %d, want 0", m, got)
				}
			}

			// All forward, then all backward in order: F0 F1 F2 B0 B1 B2.
			pipe := c.make(t, tensor.Float64)
			outs := make([]*tt, micros)
			for m := range micros {
				outs[m] = pipe.Forward(pass(m), xs[m])
				if got := pipe.InFlight(); got != m+1 {
					t.Errorf("forward micro %d: InFlight() = %d, want %d", m, got, m+1)
				}
			}
			for m := range micros {
				dx := pipe.Backward(pass(m), dys[m], true)
				if got, want := pipe.InFlight(), micros-m-1; got != want {
					t.Errorf("backward micro %d: InFlight() = %d, want %d", m, got, want)
				}
				if !sameBits(dx, seqDX[m]) {
					t.Errorf("micro %d dx: got %v, want %v (interleaved)", m, dx, seqDX[m])
				}
			}
			want := cloneGrads(seq.Params())
			for i, pr := range pipe.Params() {
				if !sameBits(pr.Grad, want[i]) {
					t.Errorf("%s grad: got %v, want %v (interleaved)", pr.Name, pr.Grad, want[i])
				}
			}

			// Backward out of order: F0 F1 F2 B2 B0 B1. Same dx; the grads
			// are summed in another order, so equal to rounding.
			ooo := c.make(t, tensor.Float64)
			for m := range micros {
				ooo.Forward(pass(m), xs[m])
			}
			for _, m := range []int{2, 0, 1} {
				if dx := ooo.Backward(pass(m), dys[m], true); !sameBits(dx, seqDX[m]) {
					t.Errorf("out of order micro %d dx: got %v, want %v", m, dx, seqDX[m])
				}
			}
			for i, pr := range ooo.Params() {
				if d := maxDiff(pr.Grad, want[i]); d > 1e-12 {
					t.Errorf("out of order %s grad: got %v, want %v (max diff %g)", pr.Name, pr.Grad, want[i], d)
				}
			}
		})
	}
}

func TestBackwardWithoutForwardPanics(t *testing.T) {
	for _, c := range layerCases() {
		t.Run(c.name, func(t *testing.T) {
			l := c.make(t, tensor.Float64)
			x := randAway(newRNG(51), 1, 0.05, c.inShape(2)...)
			dy := randN(newRNG(52), tensor.Float64, 1, c.outShape(l, 2)...)

			// Never forwarded.
			p := nn.Pass{Step: 4, Micro: 5, Train: true}
			msg, ok := panicText(func() { l.Backward(p, dy, true) })
			if !ok {
				t.Fatalf("Backward(%+v) without Forward did not panic", p)
			}
			if !strings.Contains(msg, "micro-batch 5") || !strings.Contains(msg, "step 4") {
				t.Errorf("Backward(%+v) without Forward panicked with %q, want it to name micro-batch 5 and step 4", p, msg)
			}

			// Forwarded as another micro-batch.
			l.Forward(nn.Pass{Step: 4, Micro: 0, Train: true}, x)
			if _, ok := panicText(func() { l.Backward(p, dy, true) }); !ok {
				t.Errorf("Backward(%+v) after a Forward of micro-batch 0 did not panic", p)
			}

			// Twice after one forward: the first consumed the cache.
			l.Forward(p, x)
			l.Backward(p, dy, true)
			if msg, ok := panicText(func() { l.Backward(p, dy, true) }); !ok || !strings.Contains(msg, "micro-batch 5") {
				t.Errorf("second Backward(%+v): panicked %v with %q, want a panic naming micro-batch 5", p, ok, msg)
			}

			// An evaluation forward caches nothing.
			l.Reset()
			ev := nn.Pass{Step: 4, Micro: 5}
			l.Forward(ev, x)
			if got := l.InFlight(); got != 0 {
				t.Errorf("InFlight() after an evaluation Forward = %d, want 0", got)
			}
			if _, ok := panicText(func() { l.Backward(ev, dy, true) }); !ok {
				t.Errorf("Backward after an evaluation Forward did not panic")
			}
		})
	}
}

func TestReset(t *testing.T) {
	for _, c := range layerCases() {
		t.Run(c.name, func(t *testing.T) {
			l := c.make(t, tensor.Float64)
			x := randAway(newRNG(61), 1, 0.05, c.inShape(3)...)
			dy := randN(newRNG(62), tensor.Float64, 1, c.outShape(l, 3)...)
			for m := range 3 {
				l.Forward(nn.Pass{Step: 1, Micro: m, Train: true}, x)
			}
			if got := l.InFlight(); got != 3 {
				t.Fatalf("InFlight() = %d after three forwards, want 3", got)
			}
			l.Reset()
			if got := l.InFlight(); got != 0 {
				t.Errorf("InFlight() = %d after Reset, want 0", got)
			}
			for m := range 3 {
				if _, ok := panicText(func() { l.Backward(nn.Pass{Step: 1, Micro: m, Train: true}, dy, true) }); !ok {
					t.Errorf("Backward of micro-batch %d after Reset did not panic", m)
				}
			}
			// The layer works again after Reset.
			p := nn.Pass{Step: 2, Micro: 0, Train: true}
			l.Forward(p, x)
			if dx := l.Backward(p, dy, true); dx == nil || !dx.IsFinite() {
				t.Errorf("Backward after Reset and Forward: got %v, want a finite dx", dx)
			}
		})
	}
}

// TestFloat32MatchesFloat64 runs every layer in float32 and float64 on the same
// values; outputs, dx and parameter gradients agree to float32 rounding.
func TestFloat32MatchesFloat64(t *testing.T) {
	for _, c := range layerCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := newRNG(71)
			x := randAway(rng, 1, 0.05, c.inShape(6)...)
			l64, l32 := c.make(t, tensor.Float64), c.make(t, tensor.Float32)
			for i, p := range l32.Params() {
				p.Value.CopyFrom(l64.Params()[i].Value.As(tensor.Float32))
			}
			dy := randN(rng, tensor.Float64, 1, c.outShape(l64, 6)...)
			p := nn.Pass{Step: 1, Train: true}
			y64 := l64.Forward(p, x)
			y32 := l32.Forward(p, x.As(tensor.Float32))
			if y32.DType() != tensor.Float32 {
				t.Fatalf("float32 forward returned %v", y32.DType())
			}
			const tol = 1e-5
			if d := maxDiff(y32, y64); d > tol {
				t.Errorf("y: float32 %v, float64 %v (max diff %g)", y32, y64, d)
			}
			dx64 := l64.Backward(p, dy, true)
			dx32 := l32.Backward(p, dy.As(tensor.Float32), true)
			if dx32.DType() != tensor.Float32 {
				t.Errorf("float32 backward returned %v", dx32.DType())
			}
			if d := maxDiff(dx32, dx64); d > tol {
				t.Errorf("dx: float32 %v, float64 %v (max diff %g)", dx32, dx64, d)
			}
			for i, pr := range l32.Params() {
				want := l64.Params()[i].Grad
				if d := maxDiff(pr.Grad, want); d > tol {
					t.Errorf("%s grad: float32 %v, float64 %v (max diff %g)", pr.Name, pr.Grad, want, d)
				}
			}
		})
	}
}

func TestLinearForward(t *testing.T) {
	// y = x·Wᵀ + b with W in PyTorch's [out, in] layout.
	w := tensor.FromFloat64s(tensor.Float64, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	b := tensor.FromFloat64s(tensor.Float64, []float64{0.5, -1}, 2)
	for _, c := range []struct {
		x    []float64
		rows int
		want []float64
	}{
		{[]float64{1, 0, 0}, 1, []float64{1.5, 3}},
		{[]float64{0, 0, 1}, 1, []float64{3.5, 5}},
		{[]float64{1, 1, 1, -1, 2, 0}, 2, []float64{6.5, 14, 3.5, 5}},
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			l := nn.LinearFrom(w.As(dt), b.As(dt))
			x := tensor.FromFloat64s(dt, c.x, c.rows, 3)
			got := l.Forward(nn.Pass{}, x)
			want := tensor.FromFloat64s(dt, c.want, c.rows, 2)
			if !sameBits(got, want) {
				t.Errorf("%v Linear(W=%v, b=%v).Forward(%v): got %v, want %v", dt, w, b, x, got, want)
			}
		}
	}
	if l := nn.LinearFrom(w, b); l.In != 3 || l.Out != 2 {
		t.Errorf("LinearFrom(%v): In, Out = %d, %d, want 3, 2", w.Shape(), l.In, l.Out)
	}
}

func TestLinearFromCopies(t *testing.T) {
	w := tensor.FromFloat64s(tensor.Float64, []float64{1, 2}, 1, 2)
	b := tensor.FromFloat64s(tensor.Float64, []float64{3}, 1)
	l := nn.LinearFrom(w, b)
	w.Fill(0)
	b.Fill(0)
	if l.W.At(0, 1) != 2 || l.B.At(0) != 3 {
		t.Errorf("LinearFrom shares storage with its arguments: W %v, B %v", l.W, l.B)
	}
}

func TestLinearMisfitPanics(t *testing.T) {
	f64 := tensor.Float64
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"LinearFrom bias too long", func() { nn.LinearFrom(tensor.Zeros(f64, 2, 3), tensor.Zeros(f64, 3)) }},
		{"LinearFrom 1-D weight", func() { nn.LinearFrom(tensor.Zeros(f64, 3), tensor.Zeros(f64, 3)) }},
		{"LinearFrom mixed dtypes", func() { nn.LinearFrom(tensor.Zeros(f64, 2, 3), tensor.Zeros(tensor.Float32, 2)) }},
		{"Forward wrong width", func() {
			nn.LinearFrom(tensor.Zeros(f64, 2, 3), tensor.Zeros(f64, 2)).Forward(nn.Pass{}, tensor.Zeros(f64, 4, 2))
		}},
		{"Forward wrong dtype", func() {
			nn.LinearFrom(tensor.Zeros(f64, 2, 3), tensor.Zeros(f64, 2)).Forward(nn.Pass{}, tensor.Zeros(tensor.Float32, 4, 3))
		}},
		{"Backward wrong dy", func() {
			l := nn.LinearFrom(tensor.Zeros(f64, 2, 3), tensor.Zeros(f64, 2))
			p := nn.Pass{Train: true}
			l.Forward(p, tensor.Zeros(f64, 4, 3))
			l.Backward(p, tensor.Zeros(f64, 4, 3), true)
		}},
	} {
		if msg, ok := panicText(c.f); !ok || !strings.Contains(msg, "nn.") {
			t.Errorf("%s: panicked %v with %q, want a panic naming the nn function", c.name, ok, msg)
		}
	}
	for _, c := range []struct{ in, out int }{{0, 3}, {3, 0}, {-1, 2}} {
		if _, err := nn.NewLinear(f64, c.in, c.out, nn.HeNormal, newRNG(1)); err == nil {
			t.Errorf("NewLinear(in=%d, out=%d): got nil error, want one", c.in, c.out)
		}
	}
}

func TestActivationForward(t *testing.T) {
	x := []float64{-2, -0.5, 0, 0.5, 1, 3}
	gelu := func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }
	geluTanh := func(v float64) float64 {
		return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
	}
	for _, c := range []struct {
		name  string
		layer nn.Layer
		f     func(float64) float64
	}{
		{"relu", nn.NewReLU(), func(v float64) float64 { return max(v, 0) }},
		{"leaky_relu(0.1)", nn.NewLeakyReLU(0.1), func(v float64) float64 { return math.Max(v, 0.1*v) }},
		{"prelu(0.25)", nn.NewPReLU(tensor.Float64), func(v float64) float64 { return math.Max(v, 0.25*v) }},
		{"sigmoid", nn.NewSigmoid(), func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }},
		{"tanh", nn.NewTanh(), math.Tanh},
		{"gelu", nn.NewGELU(false), gelu},
		{"gelu(tanh)", nn.NewGELU(true), geluTanh},
	} {
		in := tensor.FromFloat64s(tensor.Float64, x, 2, 3)
		got := c.layer.Forward(nn.Pass{}, in).Float64s()
		for i, v := range x {
			if want := c.f(v); math.Abs(got[i]-want) > 1e-15 {
				t.Errorf("%s(%v) = %v, want %v", c.name, v, got[i], want)
			}
		}
		if !sameBits(in, tensor.FromFloat64s(tensor.Float64, x, 2, 3)) {
			t.Errorf("%s modified its input", c.name)
		}
	}
	// Softmax over the last axis: each row sums to 1 and is shift-invariant.
	in := tensor.FromFloat64s(tensor.Float64, []float64{1, 2, 3, 1001, 1002, 1003}, 2, 3)
	got := nn.NewSoftmax().Forward(nn.Pass{}, in)
	for j := range 3 {
		if a, b := got.At(0, j), got.At(1, j); math.Abs(a-b) > 1e-15 {
			t.Errorf("softmax(%v) column %d: rows %v and %v differ", in, j, a, b)
		}
	}
	if s := got.At(0, 0) + got.At(0, 1) + got.At(0, 2); math.Abs(s-1) > 1e-15 {
		t.Errorf("softmax(%v) row 0 sums to %v, want 1", in, s)
	}
}

func TestPReLUInit(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		l := nn.NewPReLU(dt)
		ps := l.Params()
		if len(ps) != 1 || ps[0].Name != "alpha" || ps[0].Value.Size() != 1 || ps[0].Value.Item() != 0.25 || ps[0].Value.DType() != dt {
			t.Errorf("NewPReLU(%v).Params() = %+v, want one %v alpha = 0.25", dt, ps, dt)
		}
	}
}

func TestLayerNormForward(t *testing.T) {
	// torch.nn.LayerNorm(3)(torch.tensor([[1., 2., 3.], [-4., 0., 4.]])), eps 1e-5.
	in := tensor.FromFloat64s(tensor.Float64, []float64{1, 2, 3, -4, 0, 4}, 2, 3)
	l := nn.NewLayerNorm(tensor.Float64, 3)
	got := l.Forward(nn.Pass{}, in)
	r0 := 1 / math.Sqrt(2.0/3+1e-5)
	r1 := 4 / math.Sqrt(32.0/3+1e-5)
	want := tensor.FromFloat64s(tensor.Float64, []float64{-r0, 0, r0, -r1, 0, r1}, 2, 3)
	if d := maxDiff(got, want); d > 1e-14 {
		t.Errorf("LayerNorm(%v) = %v, want %v", in, got, want)
	}
	// Gain and bias apply per feature.
	l.Gain.CopyFrom(tensor.FromFloat64s(tensor.Float64, []float64{2, 3, 4}, 3))
	l.Bias.CopyFrom(tensor.FromFloat64s(tensor.Float64, []float64{1, -1, 0.5}, 3))
	got = l.Forward(nn.Pass{}, in)
	want = tensor.FromFloat64s(tensor.Float64, []float64{1 - 2*r0, -1, 0.5 + 4*r0, 1 - 2*r1, -1, 0.5 + 4*r1}, 2, 3)
	if d := maxDiff(got, want); d > 1e-14 {
		t.Errorf("LayerNorm(gain %v, bias %v)(%v) = %v, want %v", l.Gain, l.Bias, in, got, want)
	}
	for _, c := range []struct {
		name string
		x    *tt
	}{
		{"wrong width", tensor.Zeros(tensor.Float64, 2, 4)},
		{"1-D", tensor.Zeros(tensor.Float64, 3)},
		{"wrong dtype", tensor.Zeros(tensor.Float32, 2, 3)},
	} {
		if _, ok := panicText(func() { l.Forward(nn.Pass{}, c.x) }); !ok {
			t.Errorf("LayerNorm(3).Forward(%s %v %v) did not panic", c.name, c.x.DType(), c.x.Shape())
		}
	}
}

func TestParamNames(t *testing.T) {
	model := &nn.Sequential{Layers: []nn.Layer{
		mustLinear(t, tensor.Float32, 2, 3, nn.HeNormal, 1),
		nn.NewReLU(),
		nn.NewPReLU(tensor.Float32),
		nn.NewLayerNorm(tensor.Float32, 3),
	}}
	var got []string
	for _, p := range model.Params() {
		got = append(got, fmt.Sprintf("%s%v", p.Name, p.Value.Shape()))
	}
	want := []string{"0.weight[3 2]", "0.bias[3]", "2.alpha[1]", "3.weight[3]", "3.bias[3]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Params() names: got %v, want %v", got, want)
	}
}

// TestLinearPackedWeights: passes that name a weights version use the weights
// packed once for that version, with the bits of the unpacked path, and a new
// version sees changed weights.
func TestLinearPackedWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	l, err := nn.NewLinear(tensor.Float32, 70, 50, nn.XavierUniform, rng)
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, 9, 70)
	dy := tensor.RandNormal(rng, tensor.Float32, 0, 1, 9, 50)
	run := func(version uint64) (y, dx []float32) {
		p := nn.Pass{Step: 1, Train: true, Weights: version, Micros: 3}
		y = l.Forward(p, x).Float32s()
		dx = l.Backward(p, dy, true).Float32s()
		return y, dx
	}
	for _, version := range []uint64{1, 2} {
		wantY, wantDX := run(0)
		// the first call packs the weights for the version, the others reuse them
		for call := 1; call <= 3; call++ {
			gotY, gotDX := run(version)
			if !slices.Equal(gotY, wantY) || !slices.Equal(gotDX, wantDX) {
				t.Errorf("weights version %d, call %d: forward or dX differs from the unpacked path", version, call)
			}
		}
		l.W.FillUniform(rng, -1, 1) // the next version's weights
	}
}

// TestLinearWithoutBias: bias = false builds a layer whose only parameter is
// its weight (drawn as with a bias) and which gives the bits of the same
// layer with a zero bias: forward, dX and dW, packed weights or not.
func TestLinearWithoutBias(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		specs := []nn.Spec{{Type: "linear", Units: 50, Init: nn.TorchDefault, Bias: new(false)}}
		ls, err := nn.Build(specs, 70, 5, dt, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		l := ls[0].(*nn.Linear)
		if ps := l.Params(); len(ps) != 1 || ps[0].Name != "weight" {
			t.Fatalf("%v: bias = false: params %v, want the weight alone", dt, ps)
		}
		specs[0].Bias = nil
		ls, _ = nn.Build(specs, 70, 5, dt, 0, 1)
		ref := ls[0].(*nn.Linear)
		if !slices.Equal(ref.W.Float64s(), l.W.Float64s()) {
			t.Fatalf("%v: the weights differ from those drawn with a bias", dt)
		}
		ref.B.Zero()
		rng := rand.New(rand.NewPCG(4, 4))
		x := tensor.RandNormal(rng, dt, 0, 1, 9, 70)
		dy := tensor.RandNormal(rng, dt, 0, 1, 9, 50)
		for _, micros := range []int{1, 3} { // 3: the float32 weights packed once
			p := nn.Pass{Step: 1, Train: true, Weights: 1, Micros: micros}
			run := func(l *nn.Linear) (y, dx, dw []float64) {
				l.ZeroGrad()
				y = l.Forward(p, x).Float64s()
				dx = l.Backward(p, dy, true).Float64s()
				return y, dx, l.GW.Float64s()
			}
			y, dx, dw := run(l)
			wy, wdx, wdw := run(ref)
			if !slices.Equal(y, wy) || !slices.Equal(dx, wdx) || !slices.Equal(dw, wdw) {
				t.Errorf("%v, %d micro-batches: forward, dX or dW differ from a zero bias's", dt, micros)
			}
		}
	}
}
