package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// The compile-time proof that every layer satisfies the contract.
var (
	_ nn.Layer = (*nn.Linear)(nil)
	_ nn.Layer = (*nn.Activation)(nil)
	_ nn.Layer = (*nn.PReLU)(nil)
	_ nn.Layer = (*nn.Dropout)(nil)
	_ nn.Layer = (*nn.LayerNorm)(nil)
	_ nn.Layer = (*nn.Conv2d)(nil)
	_ nn.Layer = (*nn.MaxPool2d)(nil)
	_ nn.Layer = (*nn.AvgPool2d)(nil)
	_ nn.Layer = (*nn.BatchNorm)(nil)
	_ nn.Layer = (*nn.Flatten)(nil)
	_ nn.Layer = (*nanBackward)(nil)
)

type tt = tensor.Tensor

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e6e5eed)) }

// randN draws N(0, std²) elements of dtype dt.
func randN(rng *rand.Rand, dt tensor.DType, std float64, shape ...int) *tt {
	return tensor.RandNormal(rng, dt, 0, std, shape...)
}

// randAway draws float64 N(0, std²) elements at least margin away from 0, the
// kink of ReLU, LeakyReLU and PReLU.
func randAway(rng *rand.Rand, std, margin float64, shape ...int) *tt {
	t := tensor.Zeros(tensor.Float64, shape...)
	d := t.Data64()
	for i := range d {
		v := std * rng.NormFloat64()
		for math.Abs(v) < margin {
			v = std * rng.NormFloat64()
		}
		d[i] = v
	}
	return t
}

// mustLinear builds a Linear layer or fails the test.
func mustLinear(t testing.TB, dt tensor.DType, in, out int, init nn.Init, seed uint64) *nn.Linear {
	t.Helper()
	l, err := nn.NewLinear(dt, in, out, init, newRNG(seed))
	if err != nil {
		t.Fatalf("NewLinear(%v, %d, %d, %s): %v", dt, in, out, init, err)
	}
	return l
}

// mustDropout builds a Dropout layer or fails the test.
func mustDropout(t testing.TB, p float64, seed uint64, index int) *nn.Dropout {
	t.Helper()
	d, err := nn.NewDropout(p, seed, index)
	if err != nil {
		t.Fatalf("NewDropout(%v, %d, %d): %v", p, seed, index, err)
	}
	return d
}

// maxDiff returns the largest |a-b| over two tensors of one shape, +Inf when
// the shapes differ or a value is NaN.
func maxDiff(a, b *tt) float64 {
	if !tensor.EqualShapes(a.Shape(), b.Shape()) {
		return math.Inf(1)
	}
	av, bv := a.Float64s(), b.Float64s()
	m := 0.0
	for i := range av {
		d := math.Abs(av[i] - bv[i])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = max(m, d)
	}
	return m
}

var sameBits = opstest.SameBits

// cloneGrads returns copies of a layer's (or model's) gradients.
func cloneGrads(ps []nn.Param) []*tt {
	gs := make([]*tt, len(ps))
	for i, p := range ps {
		gs[i] = p.Grad.Clone()
	}
	return gs
}

// panicText runs f and returns the text of what it panicked with, or "" and
// false when it did not panic.
func panicText(f func()) (msg string, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			if err, ok := r.(error); ok {
				msg = err.Error()
			} else {
				msg = "non-error panic value"
			}
		}
	}()
	f()
	return "", false
}

// nanBackward is an identity layer whose backward returns NaN, to test how
// Sequential reports a non-finite input gradient. It also shows that a Layer
// can be written outside the package.
type nanBackward struct{ n map[int]bool }

func (l *nanBackward) Kind() string       { return "nan_backward" }
func (l *nanBackward) Params() []nn.Param { return nil }
func (l *nanBackward) ZeroGrad()          {}
func (l *nanBackward) InFlight() int      { return len(l.n) }
func (l *nanBackward) Reset()             { clear(l.n) }
func (l *nanBackward) Forward(p nn.Pass, x *tt) *tt {
	if p.Train {
		l.n[p.Micro] = true
	}
	return x.Clone()
}
func (l *nanBackward) Backward(p nn.Pass, dy *tt, needDX bool) *tt {
	delete(l.n, p.Micro)
	return tensor.Full(dy.DType(), math.NaN(), dy.Shape()...)
}

// mustConv2d builds a Conv2d layer with XavierUniform weights or fails the test.
func mustConv2d(t testing.TB, dt tensor.DType, c, f, kh, kw, stride, padding int, seed uint64) *nn.Conv2d {
	t.Helper()
	l, err := nn.NewConv2d(dt, c, f, kh, kw, stride, padding, nn.XavierUniform, newRNG(seed))
	if err != nil {
		t.Fatalf("NewConv2d(%v, c=%d, f=%d, %d×%d, stride %d, padding %d): %v", dt, c, f, kh, kw, stride, padding, err)
	}
	return l
}

// mustMaxPool2d builds a MaxPool2d layer or fails the test.
func mustMaxPool2d(t testing.TB, kernel, stride int) *nn.MaxPool2d {
	t.Helper()
	l, err := nn.NewMaxPool2d(kernel, stride)
	if err != nil {
		t.Fatalf("NewMaxPool2d(%d, %d): %v", kernel, stride, err)
	}
	return l
}

// mustAvgPool2d builds an AvgPool2d layer or fails the test.
func mustAvgPool2d(t testing.TB, kernel, stride int) *nn.AvgPool2d {
	t.Helper()
	l, err := nn.NewAvgPool2d(kernel, stride)
	if err != nil {
		t.Fatalf("NewAvgPool2d(%d, %d): %v", kernel, stride, err)
	}
	return l
}

// mustBatchNorm builds a BatchNorm layer or fails the test.
func mustBatchNorm(t testing.TB, dt tensor.DType, c int) *nn.BatchNorm {
	t.Helper()
	l, err := nn.NewBatchNorm(dt, c)
	if err != nil {
		t.Fatalf("NewBatchNorm(%v, %d): %v", dt, c, err)
	}
	return l
}
