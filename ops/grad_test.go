package ops_test

// Finite-difference checks of every backward kernel the ops package doc
// lists, in float64, through ops/opstest. Inputs are kept
// away from kinks and ties; those get exact table tests in edge_test.go.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// gradTol is the combined tolerance |analytic-numeric| <= gradTol*max(1, |numeric|)
// for central differences with step 1e-6 in float64.
const gradTol = 1e-6

type tt = tensor.Tensor

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x0b5e55ed)) }

func in(ts ...*tt) []*tt { return ts }

// randN draws float64 N(0, std²) elements.
func randN(rng *rand.Rand, std float64, shape ...int) *tt {
	return tensor.RandNormal(rng, tensor.Float64, 0, std, shape...)
}

// randU draws float64 U[lo, hi) elements.
func randU(rng *rand.Rand, lo, hi float64, shape ...int) *tt {
	return tensor.RandUniform(rng, tensor.Float64, lo, hi, shape...)
}

// randSignedU draws magnitudes from U[lo, hi) with random signs.
func randSignedU(rng *rand.Rand, lo, hi float64, shape ...int) *tt {
	t := randU(rng, lo, hi, shape...)
	d := t.Data64()
	for i := range d {
		if rng.IntN(2) == 0 {
			d[i] = -d[i]
		}
	}
	return t
}

// randAway draws N(0, std²) elements at least margin away from every kink.
func randAway(rng *rand.Rand, std, margin float64, kinks []float64, shape ...int) *tt {
	t := tensor.Zeros(tensor.Float64, shape...)
	d := t.Data64()
	for i := range d {
	draw:
		for {
			v := std * rng.NormFloat64()
			for _, k := range kinks {
				if math.Abs(v-k) < margin {
					continue draw
				}
			}
			d[i] = v
			break
		}
	}
	return t
}

// randDistinct returns elements in random order whose pairwise gaps are at
// least 0.25, so that Max and Min have no ties, even under a 1e-6 step.
func randDistinct(rng *rand.Rand, shape ...int) *tt {
	n := tensor.SizeOf(shape)
	v := make([]float64, n)
	for i, p := range rng.Perm(n) {
		v[i] = float64(p)*0.37 - float64(n)*0.18 + 0.1*rng.Float64()
	}
	return tensor.FromFloat64s(tensor.Float64, v, shape...)
}

// randLabels draws n labels in [0, c).
func randLabels(rng *rand.Rand, n, c int) []int {
	l := make([]int, n)
	for i := range l {
		l[i] = rng.IntN(c)
	}
	return l
}

// gradName names a check: the op and its parameters, separated by spaces.
func gradName(op string, parts ...any) string {
	s := op
	for _, p := range parts {
		s += " " + fmt.Sprint(p)
	}
	return s
}

// broadcastPairs are operand shapes that broadcast in every direction:
// equal, prepended axes on either side, size-1 axes on either side or both,
// 0-D against N-D, and empty.
var broadcastPairs = [][2][]int{
	{{3, 4}, {3, 4}},
	{{3, 4}, {4}},
	{{4}, {3, 4}},
	{{3, 1}, {1, 4}},
	{{1, 4}, {3, 1}},
	{{3, 4}, {3, 1}},
	{{1}, {3, 4}},
	{{}, {2, 3}},
	{{2, 3}, {}},
	{{}, {}},
	{{2, 1, 3}, {4, 1}},
	{{4, 1}, {2, 1, 3}},
	{{2, 1, 3, 1}, {3, 1, 2}},
	{{1, 1, 5}, {2, 3, 1}},
	{{0, 3}, {3}},
	{{2, 0}, {1, 1}},
}

// binaryGrad checks a binary op over broadcastPairs with inputs drawn by gen.
func binaryGrad(t *testing.T, op string, seed uint64, gen func(rng *rand.Rand, a, b []int) (*tt, *tt),
	f func(a, b *tt) *tt, back func(g, a, b *tt) (*tt, *tt)) {
	t.Helper()
	rng := newRNG(seed)
	for _, p := range broadcastPairs {
		a, b := gen(rng, p[0], p[1])
		opstest.CheckGrad(t, gradName(op, p[0], p[1]), in(a, b),
			func(x []*tt) *tt { return f(x[0], x[1]) },
			func(g *tt, x []*tt, _ *tt) []*tt { ga, gb := back(g, x[0], x[1]); return in(ga, gb) },
			gradTol)
	}
}

func TestGradAdd(t *testing.T) {
	binaryGrad(t, "Add", 1, func(rng *rand.Rand, a, b []int) (*tt, *tt) { return randN(rng, 1, a...), randN(rng, 1, b...) },
		ops.Add, func(g, a, b *tt) (*tt, *tt) { return ops.AddBackward(g, a.Shape(), b.Shape()) })
}

func TestGradSub(t *testing.T) {
	binaryGrad(t, "Sub", 2, func(rng *rand.Rand, a, b []int) (*tt, *tt) { return randN(rng, 1, a...), randN(rng, 1, b...) },
		ops.Sub, func(g, a, b *tt) (*tt, *tt) { return ops.SubBackward(g, a.Shape(), b.Shape()) })
}

func TestGradMul(t *testing.T) {
	binaryGrad(t, "Mul", 3, func(rng *rand.Rand, a, b []int) (*tt, *tt) { return randN(rng, 1, a...), randN(rng, 1, b...) },
		ops.Mul, ops.MulBackward)
}

func TestGradDiv(t *testing.T) {
	binaryGrad(t, "Div", 4, func(rng *rand.Rand, a, b []int) (*tt, *tt) {
		return randN(rng, 1, a...), randSignedU(rng, 0.5, 2, b...)
	}, ops.Div, ops.DivBackward)
}

func TestGradPow(t *testing.T) {
	// Positive bases, real exponents of both signs: both gradients.
	binaryGrad(t, "Pow", 5, func(rng *rand.Rand, a, b []int) (*tt, *tt) {
		return randU(rng, 0.5, 2, a...), randU(rng, -2, 2.5, b...)
	}, ops.Pow, ops.PowBackward)

	// Negative bases with integer exponents: the base gradient is real
	// (the exponent gradient, a^b·ln a, is NaN there and is not checked).
	rng := newRNG(55)
	for _, e := range []float64{2, 3, -1, -2} {
		a := randSignedU(rng, 0.5, 2, 2, 3)
		b := tensor.Full(tensor.Float64, e)
		opstest.CheckGrad(t, gradName("Pow negative base ^", e), in(a),
			func(x []*tt) *tt { return ops.Pow(x[0], b) },
			func(g *tt, x []*tt, _ *tt) []*tt { ga, _ := ops.PowBackward(g, x[0], b); return in(ga) },
			gradTol)
	}
}

func TestGradMatMul(t *testing.T) {
	rng := newRNG(6)
	for _, p := range [][2][]int{
		{{3}, {3}},                // 1-D @ 1-D -> 0-D
		{{2, 3}, {3}},             // 2-D @ 1-D -> [2]
		{{3}, {3, 4}},             // 1-D @ 2-D -> [4]
		{{2, 3}, {3, 4}},          // 2-D @ 2-D
		{{1, 3}, {3, 1}},          //
		{{2, 3, 4}, {4, 5}},       // batched @ 2-D
		{{3, 4}, {2, 4, 5}},       // 2-D @ batched
		{{2, 3, 4}, {2, 4, 5}},    // equal batches
		{{2, 1, 3, 4}, {5, 4, 2}}, // broadcast batch dims both ways
		{{1, 3, 4}, {2, 1, 4, 2}}, //
		{{3}, {2, 3, 4}},          // 1-D @ batched
		{{2, 3, 4}, {4}},          // batched @ 1-D
		{{2, 0}, {0, 3}},          // empty inner dimension
		{{0, 3}, {3, 2}},          // empty rows
	} {
		a, b := randN(rng, 1, p[0]...), randN(rng, 1, p[1]...)
		opstest.CheckGrad(t, gradName("MatMul", p[0], p[1]), in(a, b),
			func(x []*tt) *tt { return ops.MatMul(x[0], x[1]) },
			func(g *tt, x []*tt, _ *tt) []*tt { ga, gb := ops.MatMulBackward(g, x[0], x[1]); return in(ga, gb) },
			gradTol)
	}
}

func TestGradTranspose(t *testing.T) {
	rng := newRNG(7)
	for _, s := range [][]int{{}, {4}, {2, 3}, {2, 3, 4}, {1, 2, 3, 2}, {0, 3}} {
		opstest.CheckGrad(t, gradName("Transpose", s), in(randN(rng, 1, s...)),
			func(x []*tt) *tt { return ops.Transpose(x[0]) },
			func(g *tt, _ []*tt, _ *tt) []*tt { return in(ops.TransposeBackward(g)) },
			gradTol)
	}
}

func TestGradReshape(t *testing.T) {
	rng := newRNG(8)
	for _, c := range []struct{ from, to []int }{
		{[]int{2, 3, 4}, []int{4, -1}},
		{[]int{2, 3, 4}, []int{-1}},
		{[]int{2, 3, 4}, []int{2, 12}},
		{[]int{2, 3, 4}, []int{3, 2, -1, 2}},
		{[]int{6}, []int{1, 6, 1}},
		{[]int{}, []int{1}},
		{[]int{1, 1}, []int{}},
		{[]int{0, 3}, []int{3, 0}},
	} {
		opstest.CheckGrad(t, gradName("Reshape", c.from, "to", c.to), in(randN(rng, 1, c.from...)),
			func(x []*tt) *tt { return ops.Reshape(x[0], c.to...) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.ReshapeBackward(g, x[0].Shape())) },
			gradTol)
	}
}

func TestGradConcat(t *testing.T) {
	rng := newRNG(9)
	for _, c := range []struct {
		axis   int
		shapes [][]int
	}{
		{0, [][]int{{1, 3}, {2, 3}}},
		{-2, [][]int{{1, 3}, {2, 3}, {3, 3}}},
		{1, [][]int{{2, 3}, {2, 1}, {2, 4}}},
		{-1, [][]int{{2, 3}, {2, 1}, {2, 4}}},
		{0, [][]int{{5}}},
		{0, [][]int{{2}, {3}}},
		{-1, [][]int{{2}, {3}}},
		{0, [][]int{{1, 2, 3}, {2, 2, 3}}},
		{1, [][]int{{2, 3, 4}, {2, 1, 4}}},
		{-2, [][]int{{2, 3, 4}, {2, 1, 4}}},
		{2, [][]int{{2, 3, 1}, {2, 3, 2}}},
		{-1, [][]int{{2, 3, 1}, {2, 3, 2}}},
		{-3, [][]int{{2, 3, 1}, {1, 3, 1}}},
		{1, [][]int{{2, 0}, {2, 3}, {2, 0}}},
	} {
		xs := make([]*tt, len(c.shapes))
		for i, s := range c.shapes {
			xs[i] = randN(rng, 1, s...)
		}
		opstest.CheckGrad(t, gradName("Concat axis", c.axis, c.shapes), xs,
			func(x []*tt) *tt { return ops.Concat(c.axis, x...) },
			func(g *tt, x []*tt, _ *tt) []*tt { return ops.ConcatBackward(g, c.axis, c.shapes...) },
			gradTol)
	}
}

// reductionCases are input shapes with axis lists: every axis, negative
// axes, several axes in any order, all axes, size-1 and empty axes.
var reductionCases = []struct {
	shape []int
	axes  []int
}{
	{[]int{2, 3, 4}, nil},
	{[]int{2, 3, 4}, []int{0}},
	{[]int{2, 3, 4}, []int{1}},
	{[]int{2, 3, 4}, []int{2}},
	{[]int{2, 3, 4}, []int{-1}},
	{[]int{2, 3, 4}, []int{-2}},
	{[]int{2, 3, 4}, []int{-3}},
	{[]int{2, 3, 4}, []int{0, 2}},
	{[]int{2, 3, 4}, []int{2, 0}},
	{[]int{2, 3, 4}, []int{-1, 0}},
	{[]int{2, 3, 4}, []int{1, -1}},
	{[]int{2, 3, 4}, []int{0, 1, 2}},
	{[]int{3, 4}, []int{0}},
	{[]int{3, 4}, []int{1}},
	{[]int{3, 4}, []int{-2}},
	{[]int{3, 1}, []int{1}},
	{[]int{5}, nil},
	{[]int{5}, []int{0}},
	{[]int{}, nil},
}

func TestGradSum(t *testing.T) {
	rng := newRNG(10)
	for _, c := range append(reductionCases, struct {
		shape []int
		axes  []int
	}{[]int{0, 3}, []int{0}}) {
		opstest.CheckGrad(t, gradName("Sum", c.shape, "axes", c.axes), in(randN(rng, 1, c.shape...)),
			func(x []*tt) *tt { return ops.Sum(x[0], c.axes...) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.SumBackward(g, x[0].Shape(), c.axes...)) },
			gradTol)
	}
}

func TestGradMean(t *testing.T) {
	rng := newRNG(11)
	for _, c := range append(reductionCases, struct {
		shape []int
		axes  []int
	}{[]int{0, 3}, []int{1}}) {
		opstest.CheckGrad(t, gradName("Mean", c.shape, "axes", c.axes), in(randN(rng, 1, c.shape...)),
			func(x []*tt) *tt { return ops.Mean(x[0], c.axes...) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.MeanBackward(g, x[0].Shape(), c.axes...)) },
			gradTol)
	}
}

func TestGradMax(t *testing.T) {
	rng := newRNG(12)
	for _, c := range reductionCases {
		opstest.CheckGrad(t, gradName("Max", c.shape, "axes", c.axes), in(randDistinct(rng, c.shape...)),
			func(x []*tt) *tt { return ops.Max(x[0], c.axes...) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.MaxBackward(g, x[0], c.axes...)) },
			gradTol)
	}
}

func TestGradMin(t *testing.T) {
	rng := newRNG(13)
	for _, c := range reductionCases {
		opstest.CheckGrad(t, gradName("Min", c.shape, "axes", c.axes), in(randDistinct(rng, c.shape...)),
			func(x []*tt) *tt { return ops.Min(x[0], c.axes...) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.MinBackward(g, x[0], c.axes...)) },
			gradTol)
	}
}

// unaryShapes covers 0-D, 1-D, 2-D, 3-D and empty inputs.
var unaryShapes = [][]int{{}, {5}, {2, 3}, {2, 3, 4}, {0, 2}}

// unaryGrad checks an elementwise op whose backward takes x.
func unaryGrad(t *testing.T, op string, seed uint64, gen func(rng *rand.Rand, shape ...int) *tt,
	f func(x *tt) *tt, back func(g, x *tt) *tt) {
	t.Helper()
	rng := newRNG(seed)
	for _, s := range unaryShapes {
		opstest.CheckGrad(t, gradName(op, s), in(gen(rng, s...)),
			func(x []*tt) *tt { return f(x[0]) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(back(g, x[0])) },
			gradTol)
	}
}

// unaryOutGrad checks an elementwise op whose backward takes the forward output.
func unaryOutGrad(t *testing.T, op string, seed uint64, gen func(rng *rand.Rand, shape ...int) *tt,
	f func(x *tt) *tt, back func(g, out *tt) *tt) {
	t.Helper()
	rng := newRNG(seed)
	for _, s := range unaryShapes {
		opstest.CheckGrad(t, gradName(op, s), in(gen(rng, s...)),
			func(x []*tt) *tt { return f(x[0]) },
			func(g *tt, _ []*tt, out *tt) []*tt { return in(back(g, out)) },
			gradTol)
	}
}

func normal(std float64) func(*rand.Rand, ...int) *tt {
	return func(rng *rand.Rand, shape ...int) *tt { return randN(rng, std, shape...) }
}

func uniform(lo, hi float64) func(*rand.Rand, ...int) *tt {
	return func(rng *rand.Rand, shape ...int) *tt { return randU(rng, lo, hi, shape...) }
}

func awayFrom(std float64, kinks ...float64) func(*rand.Rand, ...int) *tt {
	return func(rng *rand.Rand, shape ...int) *tt { return randAway(rng, std, 0.01, kinks, shape...) }
}

func TestGradExp(t *testing.T) { unaryOutGrad(t, "Exp", 14, normal(1), ops.Exp, ops.ExpBackward) }
func TestGradLog(t *testing.T) { unaryGrad(t, "Log", 15, uniform(0.2, 4), ops.Log, ops.LogBackward) }
func TestGradLog2(t *testing.T) {
	unaryGrad(t, "Log2", 16, uniform(0.2, 4), ops.Log2, ops.Log2Backward)
}
func TestGradLog10(t *testing.T) {
	unaryGrad(t, "Log10", 17, uniform(0.2, 4), ops.Log10, ops.Log10Backward)
}
func TestGradSqrt(t *testing.T) {
	unaryOutGrad(t, "Sqrt", 18, uniform(0.2, 4), ops.Sqrt, ops.SqrtBackward)
}
func TestGradAbs(t *testing.T) { unaryGrad(t, "Abs", 19, awayFrom(1, 0), ops.Abs, ops.AbsBackward) }
func TestGradSin(t *testing.T) { unaryGrad(t, "Sin", 20, normal(2), ops.Sin, ops.SinBackward) }
func TestGradCos(t *testing.T) { unaryGrad(t, "Cos", 21, normal(2), ops.Cos, ops.CosBackward) }

func TestGradClip(t *testing.T) {
	for _, b := range [][2]float64{{-0.5, 0.7}, {0, 1}, {-1, -0.2}} {
		lo, hi := b[0], b[1]
		unaryGrad(t, fmt.Sprintf("Clip[%v,%v]", lo, hi), 22, awayFrom(1, lo, hi),
			func(x *tt) *tt { return ops.Clip(x, lo, hi) },
			func(g, x *tt) *tt { return ops.ClipBackward(g, x, lo, hi) })
	}
}

func TestGradReLU(t *testing.T) { unaryGrad(t, "ReLU", 23, awayFrom(1, 0), ops.ReLU, ops.ReLUBackward) }

func TestGradLeakyReLU(t *testing.T) {
	for _, alpha := range []float64{0.01, 0.2, 0, -0.3, 1.5} {
		unaryGrad(t, fmt.Sprintf("LeakyReLU(%v)", alpha), 24, awayFrom(1, 0),
			func(x *tt) *tt { return ops.LeakyReLU(x, alpha) },
			func(g, x *tt) *tt { return ops.LeakyReLUBackward(g, x, alpha) })
	}
}

func TestGradSoftplus(t *testing.T) {
	for _, c := range [][2]float64{{1, 20}, {2, 20}, {0.5, 1}} {
		beta, threshold := c[0], c[1]
		unaryGrad(t, fmt.Sprintf("Softplus(%v, %v)", beta, threshold), 26, awayFrom(1, threshold/beta),
			func(x *tt) *tt { return ops.Softplus(x, beta, threshold) },
			func(g, x *tt) *tt { return ops.SoftplusBackward(g, x, beta, threshold) })
	}
}

func TestGradPReLU(t *testing.T) {
	rng := newRNG(25)
	for _, p := range [][2][]int{
		{{2, 3, 4}, {}},
		{{2, 3, 4}, {1}},
		{{2, 3, 4}, {4}},
		{{2, 3, 4}, {3, 1}},
		{{2, 3, 4}, {2, 3, 4}},
		{{5, 3}, {3}},
		{{5, 3}, {1, 3}},
		{{5}, {5}},
		{{}, {}},
		{{0, 3}, {3}},
	} {
		x := randAway(rng, 1, 0.01, []float64{0}, p[0]...)
		alpha := randSignedU(rng, 0.05, 0.5, p[1]...)
		// Both gradients, gx and galpha.
		opstest.CheckGrad(t, gradName("PReLU", p[0], p[1]), in(x, alpha),
			func(x []*tt) *tt { return ops.PReLU(x[0], x[1]) },
			func(g *tt, x []*tt, _ *tt) []*tt { gx, ga := ops.PReLUBackward(g, x[0], x[1]); return in(gx, ga) },
			gradTol)
	}
}

func TestGradSigmoid(t *testing.T) {
	unaryOutGrad(t, "Sigmoid", 26, normal(3), ops.Sigmoid, ops.SigmoidBackward)
}
func TestGradTanh(t *testing.T) { unaryOutGrad(t, "Tanh", 27, normal(2), ops.Tanh, ops.TanhBackward) }

func TestGradGELU(t *testing.T) {
	for _, approximate := range []bool{false, true} {
		unaryGrad(t, fmt.Sprintf("GELU(approximate=%v)", approximate), 28, normal(2),
			func(x *tt) *tt { return ops.GELU(x, approximate) },
			func(g, x *tt) *tt { return ops.GELUBackward(g, x, approximate) })
		// Points of interest: 0, the minimum near -0.75, the tails.
		x := tensor.FromFloat64s(tensor.Float64, []float64{0, -0.75, -0.7517915, 1, -3, 3, -6, 6, 0.3}, 9)
		opstest.CheckGrad(t, fmt.Sprintf("GELU(approximate=%v) at %v", approximate, x.Float64s()), in(x),
			func(x []*tt) *tt { return ops.GELU(x[0], approximate) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.GELUBackward(g, x[0], approximate)) },
			gradTol)
	}
}

// softmaxCases lists shapes with every axis, positive and negative.
var softmaxCases = []struct {
	shape []int
	axis  int
}{
	{[]int{5}, 0},
	{[]int{5}, -1},
	{[]int{3, 4}, 0},
	{[]int{3, 4}, 1},
	{[]int{3, 4}, -1},
	{[]int{3, 4}, -2},
	{[]int{2, 3, 4}, 0},
	{[]int{2, 3, 4}, 1},
	{[]int{2, 3, 4}, 2},
	{[]int{2, 3, 4}, -1},
	{[]int{2, 3, 4}, -2},
	{[]int{2, 3, 4}, -3},
	{[]int{3, 1}, 1},
	{[]int{1, 3}, 0},
	{[]int{0, 3}, 1},
}

func TestGradSoftmax(t *testing.T) {
	rng := newRNG(29)
	for _, c := range softmaxCases {
		opstest.CheckGrad(t, gradName("Softmax", c.shape, "axis", c.axis), in(randN(rng, 2, c.shape...)),
			func(x []*tt) *tt { return ops.Softmax(x[0], c.axis) },
			func(g *tt, _ []*tt, out *tt) []*tt { return in(ops.SoftmaxBackward(g, out, c.axis)) },
			gradTol)
	}
}

func TestGradLogSoftmax(t *testing.T) {
	rng := newRNG(30)
	for _, c := range softmaxCases {
		opstest.CheckGrad(t, gradName("LogSoftmax", c.shape, "axis", c.axis), in(randN(rng, 2, c.shape...)),
			func(x []*tt) *tt { return ops.LogSoftmax(x[0], c.axis) },
			func(g *tt, _ []*tt, out *tt) []*tt { return in(ops.LogSoftmaxBackward(g, out, c.axis)) },
			gradTol)
	}
}

func TestGradCrossEntropy(t *testing.T) {
	rng := newRNG(31)
	for _, c := range []struct {
		n, c  int
		scale float64
	}{{1, 1, 1}, {1, 2, 1}, {4, 3, 1}, {5, 7, 2}, {3, 4, 10}, {8, 10, 0.1}} {
		logits := randN(rng, c.scale, c.n, c.c)
		labels := randLabels(rng, c.n, c.c)
		opstest.CheckGrad(t, gradName("CrossEntropy", logits.Shape(), "labels", labels), in(logits),
			func(x []*tt) *tt { return ops.CrossEntropy(x[0], labels) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.CrossEntropyBackward(g, x[0], labels)) },
			gradTol)
	}
}

// lossShapes covers 0-D, 1-D, 2-D and 3-D predictions.
var lossShapes = [][]int{{}, {1}, {4}, {3, 5}, {2, 3, 4}}

func TestGradMSE(t *testing.T) {
	rng := newRNG(32)
	for _, s := range lossShapes {
		target := randN(rng, 1, s...)
		opstest.CheckGrad(t, gradName("MSE", s), in(randN(rng, 1, s...)),
			func(x []*tt) *tt { return ops.MSE(x[0], target) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.MSEBackward(g, x[0], target)) },
			gradTol)
	}
}

func TestGradBCE(t *testing.T) {
	rng := newRNG(33)
	for _, s := range lossShapes {
		for _, soft := range []bool{false, true} {
			var target *tt
			if soft {
				target = randU(rng, 0, 1, s...)
			} else {
				target = tensor.Zeros(tensor.Float64, s...)
				for i := range target.Data64() {
					target.Data64()[i] = float64(rng.IntN(2))
				}
			}
			// The true derivative (p-y)/(p(1-p))/N; a kernel returning p-y fails here.
			opstest.CheckGrad(t, gradName("BCE", s, "soft targets", soft), in(randU(rng, 0.05, 0.95, s...)),
				func(x []*tt) *tt { return ops.BCE(x[0], target) },
				func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.BCEBackward(g, x[0], target)) },
				gradTol)
		}
	}
}

func TestGradBCEWithLogits(t *testing.T) {
	rng := newRNG(34)
	for _, s := range lossShapes {
		target := randU(rng, 0, 1, s...)
		opstest.CheckGrad(t, gradName("BCEWithLogits", s), in(randN(rng, 3, s...)),
			func(x []*tt) *tt { return ops.BCEWithLogits(x[0], target) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.BCEWithLogitsBackward(g, x[0], target)) },
			gradTol)
	}
}

// TestGradChain checks a small network end to end, each backward feeding the
// next: L = CrossEntropy(GELU(x@W1 + b1)@W2, y), gradients for x, W1, b1, W2.
func TestGradChain(t *testing.T) {
	rng := newRNG(35)
	x, w1, b1, w2 := randN(rng, 1, 4, 3), randN(rng, 1, 3, 5), randN(rng, 1, 5), randN(rng, 1, 5, 2)
	labels := []int{0, 1, 1, 0}
	type fwd struct{ h, a, z, logits *tt }
	forward := func(p []*tt) fwd {
		h := ops.MatMul(p[0], p[1])
		z := ops.Add(h, p[2])
		a := ops.GELU(z, false)
		return fwd{h, a, z, ops.MatMul(a, p[3])}
	}
	opstest.CheckGrad(t, "chain MatMul+Add+GELU+MatMul+CrossEntropy", in(x, w1, b1, w2),
		func(p []*tt) *tt { return ops.CrossEntropy(forward(p).logits, labels) },
		func(g *tt, p []*tt, _ *tt) []*tt {
			f := forward(p)
			gl := ops.CrossEntropyBackward(g, f.logits, labels)
			ga, gw2 := ops.MatMulBackward(gl, f.a, p[3])
			gz := ops.GELUBackward(ga, f.z, false)
			gh, gb1 := ops.AddBackward(gz, f.h.Shape(), p[2].Shape())
			gx, gw1 := ops.MatMulBackward(gh, p[0], p[1])
			return in(gx, gw1, gb1, gw2)
		}, gradTol)
}
