package ops_test

// Table tests of PyTorch's edge semantics (the ops package doc): kinks and
// ties, extreme logits, IEEE results with no hidden epsilons, the losses'
// clamps, shapes (broadcast, MatMul, empty, 0-D), errors, input immutability
// and float32/float64 agreement. Expected values are worked out by hand from
// PyTorch's documented behaviour and its autograd formulas.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// ---- helpers ----

var (
	inf  = math.Inf(1)
	ninf = math.Inf(-1)
	nan  = math.NaN()
)

// mk returns a float64 tensor of the given shape holding v.
func mk(shape []int, v ...float64) *tt {
	if v == nil {
		v = []float64{}
	}
	return tensor.FromFloat64s(tensor.Float64, v, shape...)
}

// vec returns a 1-D float64 tensor.
func vec(v ...float64) *tt { return mk([]int{len(v)}, v...) }

// sc returns a 0-D float64 tensor.
func sc(v float64) *tt { return mk(nil, v) }

// sh is shorthand for a shape.
func sh(d ...int) []int {
	if d == nil {
		return []int{}
	}
	return d
}

// arange returns 1, 2, ..., n in the given shape.
func arange(shape ...int) *tt {
	n := tensor.SizeOf(shape)
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i + 1)
	}
	return mk(shape, v...)
}

func negated(v []float64) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = -x
	}
	return r
}

func repeat(v float64, n int) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = v
	}
	return r
}

// closeTo reports whether got matches want: NaN matches NaN, infinities must
// be equal, tol 0 asks for equality, and otherwise |got-want| <= tol*max(1, |want|).
func closeTo(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0) || tol == 0:
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// checkT reports unless got has shape wantShape and values want within tol.
func checkT(t *testing.T, desc string, got *tt, wantShape []int, want []float64, tol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: got nil, want %v %v", desc, wantShape, want)
		return
	}
	gs, gv := got.Shape(), got.Float64s()
	ok := tensor.EqualShapes(gs, wantShape) && len(gv) == len(want)
	for i := 0; ok && i < len(gv); i++ {
		ok = closeTo(gv[i], want[i], tol)
	}
	if !ok {
		t.Errorf("%s: got %v %v, want %v %v", desc, gs, gv, wantShape, want)
	}
}

// safely runs fn, turning a panic into a test error.
func safely(t *testing.T, desc string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: unexpected panic: %v", desc, r)
		}
	}()
	fn()
}

// expectError checks that fn panics with an error value (not a runtime
// error) whose text starts with prefix and contains every one of mentions.
func expectError(t *testing.T, desc, prefix string, mentions []string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic, want an error starting with %q naming %q", desc, prefix, mentions)
			return
		}
		if re, ok := r.(runtime.Error); ok {
			t.Errorf("%s: runtime panic %q, want an error starting with %q", desc, re.Error(), prefix)
			return
		}
		err, ok := r.(error)
		if !ok {
			t.Errorf("%s: panic with %T %v, want an error value", desc, r, r)
			return
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, prefix) {
			t.Errorf("%s: error %q, want it to start with %q", desc, msg, prefix)
		}
		for _, m := range mentions {
			if !strings.Contains(msg, m) {
				t.Errorf("%s: error %q does not name %q", desc, msg, m)
			}
		}
	}()
	fn()
}

// ---- broadcasting ----

func TestEdgeBroadcastGradientsSumBack(t *testing.T) {
	g24 := arange(2, 3, 4) // g[i,j,k] = 12i + 4j + k + 1
	ones23 := mk(sh(2, 3), repeat(1, 6)...)
	cases := []struct {
		desc   string
		run    func() (*tt, *tt)
		wa, wb []int
		va, vb []float64
	}{
		{"AddBackward(grad 1..24 [2 3 4], [3 1], [2 1 4])",
			func() (*tt, *tt) { return ops.AddBackward(g24, sh(3, 1), sh(2, 1, 4)) },
			sh(3, 1), sh(2, 1, 4), []float64{68, 100, 132}, []float64{15, 18, 21, 24, 51, 54, 57, 60}},
		{"SubBackward(grad 1..24 [2 3 4], [3 1], [2 1 4])",
			func() (*tt, *tt) { return ops.SubBackward(g24, sh(3, 1), sh(2, 1, 4)) },
			sh(3, 1), sh(2, 1, 4), []float64{68, 100, 132}, []float64{-15, -18, -21, -24, -51, -54, -57, -60}},
		{"AddBackward(grad 1..24 [2 3 4], [2 3 4], [4])",
			func() (*tt, *tt) { return ops.AddBackward(g24, sh(2, 3, 4), sh(4)) },
			sh(2, 3, 4), sh(4), g24.Float64s(), []float64{66, 72, 78, 84}},
		{"SubBackward(grad 1..24 [2 3 4], [4], [2 3 4])",
			func() (*tt, *tt) { return ops.SubBackward(g24, sh(4), sh(2, 3, 4)) },
			sh(4), sh(2, 3, 4), []float64{66, 72, 78, 84}, negated(g24.Float64s())},
		{"AddBackward(grad 1..24 [2 3 4], [2 3 4], [1 1 1])",
			func() (*tt, *tt) { return ops.AddBackward(g24, sh(2, 3, 4), sh(1, 1, 1)) },
			sh(2, 3, 4), sh(1, 1, 1), g24.Float64s(), []float64{300}},
		{"AddBackward(grad 1..6 [2 3], [], [2 3])",
			func() (*tt, *tt) { return ops.AddBackward(arange(2, 3), sh(), sh(2, 3)) },
			sh(), sh(2, 3), []float64{21}, []float64{1, 2, 3, 4, 5, 6}},
		{"AddBackward(grad 1..6 [2 3], [2 1], [1 3])",
			func() (*tt, *tt) { return ops.AddBackward(arange(2, 3), sh(2, 1), sh(1, 3)) },
			sh(2, 1), sh(1, 3), []float64{6, 15}, []float64{5, 7, 9}},
		{"AddBackward(grad 1..6 [2 3], [1 1], [2 3])",
			func() (*tt, *tt) { return ops.AddBackward(arange(2, 3), sh(1, 1), sh(2, 3)) },
			sh(1, 1), sh(2, 3), []float64{21}, []float64{1, 2, 3, 4, 5, 6}},
		{"SubBackward(grad 1..6 [2 3], [2 1], [3])",
			func() (*tt, *tt) { return ops.SubBackward(arange(2, 3), sh(2, 1), sh(3)) },
			sh(2, 1), sh(3), []float64{6, 15}, []float64{-5, -7, -9}},
		{"SubBackward(grad 1..6 [2 3], [2 3], [])",
			func() (*tt, *tt) { return ops.SubBackward(arange(2, 3), sh(2, 3), sh()) },
			sh(2, 3), sh(), []float64{1, 2, 3, 4, 5, 6}, []float64{-21}},
		{"MulBackward(grad ones [2 3], a [[1] [2]], b [1 2 3])",
			func() (*tt, *tt) { return ops.MulBackward(ones23, mk(sh(2, 1), 1, 2), vec(1, 2, 3)) },
			sh(2, 1), sh(3), []float64{6, 6}, []float64{3, 3, 3}},
		{"MulBackward(grad 1..6 [2 3], a 2 (0-D), b ones [2 3])",
			func() (*tt, *tt) { return ops.MulBackward(arange(2, 3), sc(2), ones23) },
			sh(), sh(2, 3), []float64{21}, []float64{2, 4, 6, 8, 10, 12}},
		{"DivBackward(grad ones [2 2], a [1 2 3 4] [2 2], b 2 (0-D))",
			func() (*tt, *tt) { return ops.DivBackward(mk(sh(2, 2), 1, 1, 1, 1), arange(2, 2), sc(2)) },
			sh(2, 2), sh(), []float64{0.5, 0.5, 0.5, 0.5}, []float64{-2.5}},
		{"PowBackward(grad ones [3], a [1 2 3], b 2 (0-D))",
			func() (*tt, *tt) { return ops.PowBackward(vec(1, 1, 1), vec(1, 2, 3), sc(2)) },
			sh(3), sh(), []float64{2, 4, 6}, []float64{4*math.Ln2 + 9*math.Log(3)}},
		{"PReLUBackward(grad ones [2 3], x [[-1 2 -3] [4 -5 -6]], alpha [0.1 0.2 0.3])",
			func() (*tt, *tt) {
				return ops.PReLUBackward(ones23, mk(sh(2, 3), -1, 2, -3, 4, -5, -6), vec(0.1, 0.2, 0.3))
			},
			sh(2, 3), sh(3), []float64{0.1, 1, 0.3, 1, 0.2, 0.3}, []float64{-1, -5, -9}},
		{"MatMulBackward(grad ones [3 2 1], a [[1 2] [3 4]] [1 2 2], b 1..6 [3 2 1])",
			func() (*tt, *tt) {
				return ops.MatMulBackward(mk(sh(3, 2, 1), repeat(1, 6)...), arange(1, 2, 2), arange(3, 2, 1))
			},
			sh(1, 2, 2), sh(3, 2, 1), []float64{9, 12, 9, 12}, []float64{4, 6, 4, 6, 4, 6}},
	}
	for _, c := range cases {
		safely(t, c.desc, func() {
			ga, gb := c.run()
			checkT(t, c.desc+" ga", ga, c.wa, c.va, 1e-14)
			checkT(t, c.desc+" gb", gb, c.wb, c.vb, 1e-14)
		})
	}
}

// ---- Max and Min: ties share the gradient equally (torch.amax / amin) ----

func TestEdgeMaxMinTies(t *testing.T) {
	x2 := mk(sh(2, 3), 1, 5, 5, 7, 7, 7)
	cases := []struct {
		desc      string
		fwd, back func() *tt
		wantF     []int
		valF      []float64
		wantB     []int
		valB      []float64
	}{
		{"Max([1 3 3]), grad 1",
			func() *tt { return ops.Max(vec(1, 3, 3)) },
			func() *tt { return ops.MaxBackward(sc(1), vec(1, 3, 3)) },
			sh(), []float64{3}, sh(3), []float64{0, 0.5, 0.5}},
		{"Min([1 3 1]), grad 1",
			func() *tt { return ops.Min(vec(1, 3, 1)) },
			func() *tt { return ops.MinBackward(sc(1), vec(1, 3, 1)) },
			sh(), []float64{1}, sh(3), []float64{0.5, 0, 0.5}},
		{"Max([2 2 2 2]), grad 2",
			func() *tt { return ops.Max(vec(2, 2, 2, 2)) },
			func() *tt { return ops.MaxBackward(sc(2), vec(2, 2, 2, 2)) },
			sh(), []float64{2}, sh(4), []float64{0.5, 0.5, 0.5, 0.5}},
		{"Max([3 1 3], axis 0), grad 1",
			func() *tt { return ops.Max(vec(3, 1, 3), 0) },
			func() *tt { return ops.MaxBackward(sc(1), vec(3, 1, 3), 0) },
			sh(), []float64{3}, sh(3), []float64{0.5, 0, 0.5}},
		{"Max([[1 5 5] [7 7 7]], axis 1), grad [1 3]",
			func() *tt { return ops.Max(x2, 1) },
			func() *tt { return ops.MaxBackward(vec(1, 3), x2, 1) },
			sh(2), []float64{5, 7}, sh(2, 3), []float64{0, 0.5, 0.5, 1, 1, 1}},
		{"Max([[1 5 5] [7 7 7]], axis -1), grad [1 3]",
			func() *tt { return ops.Max(x2, -1) },
			func() *tt { return ops.MaxBackward(vec(1, 3), x2, -1) },
			sh(2), []float64{5, 7}, sh(2, 3), []float64{0, 0.5, 0.5, 1, 1, 1}},
		{"Min([[1 5 5] [7 7 7]], axis 1), grad [1 3]",
			func() *tt { return ops.Min(x2, 1) },
			func() *tt { return ops.MinBackward(vec(1, 3), x2, 1) },
			sh(2), []float64{1, 7}, sh(2, 3), []float64{1, 0, 0, 1, 1, 1}},
		{"Max([[1 5] [1 2]], axis 0), grad [2 4]",
			func() *tt { return ops.Max(mk(sh(2, 2), 1, 5, 1, 2), 0) },
			func() *tt { return ops.MaxBackward(vec(2, 4), mk(sh(2, 2), 1, 5, 1, 2), 0) },
			sh(2), []float64{1, 5}, sh(2, 2), []float64{1, 4, 1, 0}},
		{"Min([[1 5] [1 2]], axis -2), grad [2 4]",
			func() *tt { return ops.Min(mk(sh(2, 2), 1, 5, 1, 2), -2) },
			func() *tt { return ops.MinBackward(vec(2, 4), mk(sh(2, 2), 1, 5, 1, 2), -2) },
			sh(2), []float64{1, 2}, sh(2, 2), []float64{1, 0, 1, 4}},
		{"Max([[3 1] [2 3]], axes 0 1), grad 1",
			func() *tt { return ops.Max(mk(sh(2, 2), 3, 1, 2, 3), 0, 1) },
			func() *tt { return ops.MaxBackward(sc(1), mk(sh(2, 2), 3, 1, 2, 3), 0, 1) },
			sh(), []float64{3}, sh(2, 2), []float64{0.5, 0, 0, 0.5}},
		{"Max([[3 1] [2 3]], axes -1 -2), grad 1",
			func() *tt { return ops.Max(mk(sh(2, 2), 3, 1, 2, 3), -1, -2) },
			func() *tt { return ops.MaxBackward(sc(1), mk(sh(2, 2), 3, 1, 2, 3), -1, -2) },
			sh(), []float64{3}, sh(2, 2), []float64{0.5, 0, 0, 0.5}},
		{"Max of [2 2 2] with three 9s over axes 0 2, grad [1 6]",
			func() *tt { return ops.Max(mk(sh(2, 2, 2), 9, 9, 1, 5, 2, 9, 5, 3), 0, 2) },
			func() *tt { return ops.MaxBackward(vec(1, 6), mk(sh(2, 2, 2), 9, 9, 1, 5, 2, 9, 5, 3), 0, 2) },
			sh(2), []float64{9, 5}, sh(2, 2, 2), []float64{1.0 / 3, 1.0 / 3, 0, 3, 0, 1.0 / 3, 3, 0}},
		{"Max([-Inf -Inf]), grad 1",
			func() *tt { return ops.Max(vec(ninf, ninf)) },
			func() *tt { return ops.MaxBackward(sc(1), vec(ninf, ninf)) },
			sh(), []float64{ninf}, sh(2), []float64{0.5, 0.5}},
		{"Max(4 (0-D)), grad 2",
			func() *tt { return ops.Max(sc(4)) },
			func() *tt { return ops.MaxBackward(sc(2), sc(4)) },
			sh(), []float64{4}, sh(), []float64{2}},
		{"Min(4 (0-D)), grad 2",
			func() *tt { return ops.Min(sc(4)) },
			func() *tt { return ops.MinBackward(sc(2), sc(4)) },
			sh(), []float64{4}, sh(), []float64{2}},
	}
	for _, c := range cases {
		safely(t, c.desc+" forward", func() { checkT(t, c.desc+" forward", c.fwd(), c.wantF, c.valF, 1e-15) })
		safely(t, c.desc+" backward", func() { checkT(t, c.desc+" backward", c.back(), c.wantB, c.valB, 1e-15) })
	}
}

// torch.amax and torch.amin propagate NaN (unlike a bare "v > m" loop).
func TestEdgeMaxMinPropagateNaN(t *testing.T) {
	x := vec(1, nan, 3)
	safely(t, "Max([1 NaN 3])", func() { checkT(t, "Max([1 NaN 3])", ops.Max(x), sh(), []float64{nan}, 0) })
	safely(t, "Min([1 NaN 3])", func() { checkT(t, "Min([1 NaN 3])", ops.Min(x), sh(), []float64{nan}, 0) })
	x2 := mk(sh(2, 2), nan, 1, 2, 3)
	safely(t, "Max([[NaN 1] [2 3]], axis 1)", func() {
		checkT(t, "Max([[NaN 1] [2 3]], axis 1)", ops.Max(x2, 1), sh(2), []float64{nan, 3}, 0)
	})
	safely(t, "Min([[NaN 1] [2 3]], axis 0)", func() {
		checkT(t, "Min([[NaN 1] [2 3]], axis 0)", ops.Min(x2, 0), sh(2), []float64{nan, 1}, 0)
	})
}

// ---- kinks ----

func TestEdgeKinks(t *testing.T) {
	cases := []struct {
		desc  string
		run   func() *tt
		shape []int
		want  []float64
	}{
		{"ReLU([-1 0 2])", func() *tt { return ops.ReLU(vec(-1, 0, 2)) }, sh(3), []float64{0, 0, 2}},
		{"ReLUBackward(grad 5, x [-1 0 2])", func() *tt { return ops.ReLUBackward(vec(5, 5, 5), vec(-1, 0, 2)) },
			sh(3), []float64{0, 0, 5}},
		{"Abs([-2 0 3])", func() *tt { return ops.Abs(vec(-2, 0, 3)) }, sh(3), []float64{2, 0, 3}},
		{"AbsBackward(grad 5, x [-2 0 3 -0])", func() *tt { return ops.AbsBackward(vec(5, 5, 5, 5), vec(-2, 0, 3, math.Copysign(0, -1))) },
			sh(4), []float64{-5, 0, 5, 0}},
		{"Clip([-2 -1 -0.5 0 0.5 1 2], -1, 1)", func() *tt { return ops.Clip(vec(-2, -1, -0.5, 0, 0.5, 1, 2), -1, 1) },
			sh(7), []float64{-1, -1, -0.5, 0, 0.5, 1, 1}},
		{"ClipBackward(grad 1..7, x [-2 -1 -0.5 0 0.5 1 2], -1, 1)",
			func() *tt { return ops.ClipBackward(arange(7), vec(-2, -1, -0.5, 0, 0.5, 1, 2), -1, 1) },
			sh(7), []float64{0, 2, 3, 4, 5, 6, 0}},
		{"ClipBackward(grad 1..4, x [0.25 0.5 0.75 1], 0.5, 0.75)",
			func() *tt { return ops.ClipBackward(arange(4), vec(0.25, 0.5, 0.75, 1), 0.5, 0.75) },
			sh(4), []float64{0, 2, 3, 0}},
		// torch.nn.functional.softplus: x itself above the threshold
		{"Softplus([-1 0 2 30], 1, 20)", func() *tt { return ops.Softplus(vec(-1, 0, 2, 30), 1, 20) }, sh(4),
			[]float64{0.31326168751822286, 0.6931471805599453, 2.1269280110429727, 30}},
		{"Softplus([-1 15], 2, 20)", func() *tt { return ops.Softplus(vec(-1, 15), 2, 20) }, sh(2), []float64{0.06346400552148625, 15}},
		{"SoftplusBackward(grad 1, x [-1 0 2 30], 1, 20)", func() *tt { return ops.SoftplusBackward(vec(1, 1, 1, 1), vec(-1, 0, 2, 30), 1, 20) },
			sh(4), []float64{0.2689414213699951, 0.5, 0.8807970779778823, 1}},
		// PyTorch's leaky_relu_backward: x > 0 ? grad : grad*alpha, so alpha at 0.
		{"LeakyReLU([-1 0 2], 0.1)", func() *tt { return ops.LeakyReLU(vec(-1, 0, 2), 0.1) }, sh(3), []float64{-0.1, 0, 2}},
		{"LeakyReLUBackward(grad 1, x [-1 0 2], 0.1)", func() *tt { return ops.LeakyReLUBackward(vec(1, 1, 1), vec(-1, 0, 2), 0.1) },
			sh(3), []float64{0.1, 0.1, 1}},
		// PyTorch's prelu backward: x > 0 ? grad : alpha*grad; galpha = x > 0 ? 0 : x*grad.
		{"PReLUBackward(grad 1, x [-1 0 2], alpha 0.25) gx", func() *tt { gx, _ := ops.PReLUBackward(vec(1, 1, 1), vec(-1, 0, 2), sc(0.25)); return gx },
			sh(3), []float64{0.25, 0.25, 1}},
		{"PReLUBackward(grad 1, x [-1 0 2], alpha 0.25) galpha", func() *tt { _, ga := ops.PReLUBackward(vec(1, 1, 1), vec(-1, 0, 2), sc(0.25)); return ga },
			sh(), []float64{-1}},
	}
	for _, c := range cases {
		safely(t, c.desc, func() { checkT(t, c.desc, c.run(), c.shape, c.want, 1e-15) })
	}
}

// ---- Softmax and LogSoftmax with huge logits ----

// refSoftmax computes softmax and log-softmax along axis of x (shape) in
// float64, shifted by each fibre's maximum.
func refSoftmax(x []float64, shape []int, axis int) (sm, lsm []float64) {
	if axis < 0 {
		axis += len(shape)
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	n := shape[axis]
	outer := len(x) / max(1, n*inner)
	sm, lsm = make([]float64, len(x)), make([]float64, len(x))
	for o := range outer {
		for i := range inner {
			idx := func(k int) int { return (o*n+k)*inner + i }
			m := ninf
			for k := range n {
				m = math.Max(m, x[idx(k)])
			}
			var s float64
			for k := range n {
				s += math.Exp(x[idx(k)] - m)
			}
			for k := range n {
				sm[idx(k)] = math.Exp(x[idx(k)]-m) / s
				lsm[idx(k)] = x[idx(k)] - m - math.Log(s)
			}
		}
	}
	return sm, lsm
}

func TestEdgeSoftmaxHugeLogits(t *testing.T) {
	third, ln2 := 1.0/3, math.Ln2
	fixed := []struct {
		x      *tt
		axis   int
		sm, ls []float64
	}{
		{vec(1000, 1000, 1000), 0, []float64{third, third, third}, []float64{-math.Log(3), -math.Log(3), -math.Log(3)}},
		{vec(1000, 1000, 1000), -1, []float64{third, third, third}, []float64{-math.Log(3), -math.Log(3), -math.Log(3)}},
		{vec(1000, 0), 0, []float64{1, 0}, []float64{0, -1000}},
		{vec(-1000, 1000), -1, []float64{0, 1}, []float64{-2000, 0}},
		{vec(-1000, -1000), 0, []float64{0.5, 0.5}, []float64{-ln2, -ln2}},
		{mk(sh(2, 2), 1000, -1000, 1000, 1000), 0, []float64{0.5, 0, 0.5, 1}, []float64{-ln2, -2000, -ln2, 0}},
		{mk(sh(2, 2), 1000, -1000, 1000, 1000), -2, []float64{0.5, 0, 0.5, 1}, []float64{-ln2, -2000, -ln2, 0}},
		{mk(sh(2, 2), 1000, -1000, 1000, 1000), 1, []float64{1, 0, 0.5, 0.5}, []float64{0, -2000, -ln2, -ln2}},
	}
	for _, c := range fixed {
		desc := fmt.Sprintf("Softmax(%v %v, axis %d)", c.x.Shape(), c.x.Float64s(), c.axis)
		safely(t, desc, func() { checkT(t, desc, ops.Softmax(c.x, c.axis), c.x.Shape(), c.sm, 1e-15) })
		desc = "Log" + desc
		safely(t, desc, func() { checkT(t, desc, ops.LogSoftmax(c.x, c.axis), c.x.Shape(), c.ls, 1e-15) })
	}

	// Every axis of 2-D and 3-D inputs around ±1000, against the reference.
	rng := newRNG(100)
	for _, s := range [][]int{{2, 3}, {2, 3, 4}} {
		x := randN(rng, 3, s...)
		for i, v := range x.Data64() {
			x.Data64()[i] = v + []float64{1000, -1000}[i%2]
		}
		for axis := -len(s); axis < len(s); axis++ {
			sm, ls := refSoftmax(x.Float64s(), s, axis)
			desc := fmt.Sprintf("Softmax(logits ±1000 %v, axis %d)", s, axis)
			safely(t, desc, func() {
				out := ops.Softmax(x, axis)
				checkT(t, desc, out, s, sm, 1e-12)
				if !out.IsFinite() {
					t.Errorf("%s: got %v, want finite values", desc, out.Float64s())
				}
				g := randN(rng, 1, s...)
				if gb := ops.SoftmaxBackward(g, out, axis); !gb.IsFinite() {
					t.Errorf("%s: SoftmaxBackward got %v, want finite values", desc, gb.Float64s())
				}
			})
			desc = "Log" + desc
			safely(t, desc, func() {
				out := ops.LogSoftmax(x, axis)
				checkT(t, desc, out, s, ls, 1e-12)
				if !out.IsFinite() {
					t.Errorf("%s: got %v, want finite values", desc, out.Float64s())
				}
				g := randN(rng, 1, s...)
				if gb := ops.LogSoftmaxBackward(g, out, axis); !gb.IsFinite() {
					t.Errorf("%s: LogSoftmaxBackward got %v, want finite values", desc, gb.Float64s())
				}
			})
		}
	}

	// Backward at saturated outputs: SoftmaxBackward(ones) = 0, and
	// LogSoftmaxBackward(g, out) = g - exp(out)*sum(g).
	safely(t, "SoftmaxBackward(ones, Softmax([1000 0]))", func() {
		checkT(t, "SoftmaxBackward(ones, Softmax([1000 0]))", ops.SoftmaxBackward(vec(1, 1), ops.Softmax(vec(1000, 0), 0), 0), sh(2), []float64{0, 0}, 1e-15)
	})
	safely(t, "LogSoftmaxBackward([1 2], LogSoftmax([1000 0]))", func() {
		checkT(t, "LogSoftmaxBackward([1 2], LogSoftmax([1000 0]))", ops.LogSoftmaxBackward(vec(1, 2), ops.LogSoftmax(vec(1000, 0), 0), 0), sh(2), []float64{-2, 2}, 1e-15)
	})
}

// ---- GELU, Sigmoid, Tanh: values and extremes ----

func geluRef(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

func geluTanhRef(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func geluGradRef(x float64) float64 {
	return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
}

func geluTanhGradRef(x float64) float64 {
	k := math.Sqrt(2 / math.Pi)
	u := k * (x + 0.044715*x*x*x)
	th := math.Tanh(u)
	return 0.5*(1+th) + 0.5*x*(1-th*th)*k*(1+3*0.044715*x*x)
}

func TestEdgeGELUValues(t *testing.T) {
	// The two PyTorch values quoted in the brief, then the reference formulas.
	safely(t, "GELU(1)", func() {
		checkT(t, "GELU(1, exact)", ops.GELU(vec(1), false), sh(1), []float64{0.8413447460685429}, 1e-15)
		checkT(t, "GELU(1, tanh)", ops.GELU(vec(1), true), sh(1), []float64{0.8411919906082768}, 1e-15)
	})
	xs := []float64{-3, -1, -0.5, 0, 0.5, 1, 2, 3, 5}
	for _, approximate := range []bool{false, true} {
		ref, gref := geluRef, geluGradRef
		if approximate {
			ref, gref = geluTanhRef, geluTanhGradRef
		}
		want, gwant := make([]float64, len(xs)), make([]float64, len(xs))
		for i, x := range xs {
			want[i], gwant[i] = ref(x), gref(x)
		}
		desc := fmt.Sprintf("GELU(%v, approximate=%v)", xs, approximate)
		safely(t, desc, func() {
			checkT(t, desc, ops.GELU(vec(xs...), approximate), sh(len(xs)), want, 1e-14)
			checkT(t, "GELUBackward(grad 1, "+desc[5:], ops.GELUBackward(vec(repeat(1, len(xs))...), vec(xs...), approximate), sh(len(xs)), gwant, 1e-13)
		})
	}
}

func TestEdgeExtremesStayFinite(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		x := tensor.FromFloat64s(dt, []float64{1e4, -1e4, 1e3, -1e3}, 4)
		g := tensor.FromFloat64s(dt, []float64{1, 1, 1, 1}, 4)
		for _, approximate := range []bool{false, true} {
			desc := fmt.Sprintf("GELU(%v [1e4 -1e4 1e3 -1e3], approximate=%v)", dt, approximate)
			safely(t, desc, func() {
				checkT(t, desc, ops.GELU(x, approximate), sh(4), []float64{1e4, 0, 1e3, 0}, 0)
				checkT(t, "GELUBackward(grad 1, "+desc[5:], ops.GELUBackward(g, x, approximate), sh(4), []float64{1, 0, 1, 0}, 0)
			})
		}
		desc := fmt.Sprintf("Sigmoid(%v [1e4 -1e4 1e3 -1e3])", dt)
		safely(t, desc, func() {
			out := ops.Sigmoid(x)
			checkT(t, desc, out, sh(4), []float64{1, 0, 1, 0}, 0)
			checkT(t, "SigmoidBackward(grad 1, "+desc+")", ops.SigmoidBackward(g, out), sh(4), []float64{0, 0, 0, 0}, 0)
		})
		desc = fmt.Sprintf("Tanh(%v [1e4 -1e4 1e3 -1e3])", dt)
		safely(t, desc, func() {
			out := ops.Tanh(x)
			checkT(t, desc, out, sh(4), []float64{1, -1, 1, -1}, 0)
			checkT(t, "TanhBackward(grad 1, "+desc+")", ops.TanhBackward(g, out), sh(4), []float64{0, 0, 0, 0}, 0)
		})
	}
	safely(t, "Sigmoid(0)", func() { checkT(t, "Sigmoid(0)", ops.Sigmoid(sc(0)), sh(), []float64{0.5}, 0) })
	safely(t, "SigmoidBackward(grad 1, out 0.5)", func() {
		checkT(t, "SigmoidBackward(grad 1, out 0.5)", ops.SigmoidBackward(sc(1), sc(0.5)), sh(), []float64{0.25}, 0)
	})
}

// ---- no hidden epsilons: IEEE results ----

func TestEdgeNoHiddenEpsilons(t *testing.T) {
	cases := []struct {
		desc  string
		run   func() *tt
		shape []int
		want  []float64
	}{
		{"Log([0 -1 1])", func() *tt { return ops.Log(vec(0, -1, 1)) }, sh(3), []float64{ninf, nan, 0}},
		{"Log2([0 8])", func() *tt { return ops.Log2(vec(0, 8)) }, sh(2), []float64{ninf, 3}},
		{"Log10([0 1000])", func() *tt { return ops.Log10(vec(0, 1000)) }, sh(2), []float64{ninf, 3}},
		{"LogBackward(grad 1, x 0)", func() *tt { return ops.LogBackward(vec(1), vec(0)) }, sh(1), []float64{inf}},
		{"Log2Backward(grad 1, x 0)", func() *tt { return ops.Log2Backward(vec(1), vec(0)) }, sh(1), []float64{inf}},
		{"Log10Backward(grad 1, x 0)", func() *tt { return ops.Log10Backward(vec(1), vec(0)) }, sh(1), []float64{inf}},
		{"Sqrt([0 -1 4])", func() *tt { return ops.Sqrt(vec(0, -1, 4)) }, sh(3), []float64{0, nan, 2}},
		{"SqrtBackward(grad 1, out 0)", func() *tt { return ops.SqrtBackward(vec(1), vec(0)) }, sh(1), []float64{inf}},
		{"Div([1 0 -1], [0 0 0])", func() *tt { return ops.Div(vec(1, 0, -1), vec(0, 0, 0)) }, sh(3), []float64{inf, nan, ninf}},
		{"DivBackward(grad 1, [1 0 -1], [0 0 0]) ga", func() *tt { ga, _ := ops.DivBackward(vec(1, 1, 1), vec(1, 0, -1), vec(0, 0, 0)); return ga },
			sh(3), []float64{inf, inf, inf}},
		{"DivBackward(grad 1, [1 0 -1], [0 0 0]) gb", func() *tt { _, gb := ops.DivBackward(vec(1, 1, 1), vec(1, 0, -1), vec(0, 0, 0)); return gb },
			sh(3), []float64{ninf, nan, inf}},
		{"Exp([1000 -1000])", func() *tt { return ops.Exp(vec(1000, -1000)) }, sh(2), []float64{inf, 0}},
	}
	for _, c := range cases {
		safely(t, c.desc, func() { checkT(t, c.desc, c.run(), c.shape, c.want, 0) })
	}
}

// ---- losses ----

func TestEdgeBCE(t *testing.T) {
	ln := math.Log
	cases := []struct {
		desc  string
		run   func() *tt
		shape []int
		want  []float64
		tol   float64
	}{
		// log clamped at -100, as torch.nn.functional.binary_cross_entropy.
		{"BCE(prob [0], target [1])", func() *tt { return ops.BCE(vec(0), vec(1)) }, sh(), []float64{100}, 0},
		{"BCE(prob [1], target [0])", func() *tt { return ops.BCE(vec(1), vec(0)) }, sh(), []float64{100}, 0},
		{"BCE(prob [0 1], target [1 0])", func() *tt { return ops.BCE(vec(0, 1), vec(1, 0)) }, sh(), []float64{100}, 0},
		{"BCE(prob [0 1], target [0 1])", func() *tt { return ops.BCE(vec(0, 1), vec(0, 1)) }, sh(), []float64{0}, 0},
		{"BCE(prob [1e-50], target [1])", func() *tt { return ops.BCE(vec(1e-50), vec(1)) }, sh(), []float64{100}, 0},
		{"BCE(prob [0.5], target [1])", func() *tt { return ops.BCE(vec(0.5), vec(1)) }, sh(), []float64{math.Ln2}, 1e-15},
		{"BCE(prob [0.2 0.7], target [1 0])", func() *tt { return ops.BCE(vec(0.2, 0.7), vec(1, 0)) }, sh(),
			[]float64{(-ln(0.2) - ln(0.3)) / 2}, 1e-15},
		{"BCE(prob 0.25 (0-D), target 0.5)", func() *tt { return ops.BCE(sc(0.25), sc(0.5)) }, sh(),
			[]float64{-(0.5*ln(0.25) + 0.5*ln(0.75))}, 1e-15},
		// The true derivative (p-y)/max(p(1-p), 1e-12)/N, explicitly not p-y.
		{"BCEBackward(grad 1, prob [0.2 0.7], target [1 0])", func() *tt { return ops.BCEBackward(sc(1), vec(0.2, 0.7), vec(1, 0)) },
			sh(2), []float64{-2.5, 1.0 / 0.3 / 2}, 1e-13},
		{"BCEBackward(grad 3, prob [0.2], target [1])", func() *tt { return ops.BCEBackward(sc(3), vec(0.2), vec(1)) },
			sh(1), []float64{-15}, 1e-13},
		{"BCEBackward(grad 1, prob [0.6], target [0.3])", func() *tt { return ops.BCEBackward(sc(1), vec(0.6), vec(0.3)) },
			sh(1), []float64{1.25}, 1e-13},
		{"BCEBackward(grad 1, prob [0 1 0 1], target [1 0 0 1])", func() *tt { return ops.BCEBackward(sc(1), vec(0, 1, 0, 1), vec(1, 0, 0, 1)) },
			sh(4), []float64{-1e12 / 4, 1e12 / 4, 0, 0}, 1e-12},
	}
	for _, c := range cases {
		safely(t, c.desc, func() { checkT(t, c.desc, c.run(), c.shape, c.want, c.tol) })
	}
	safely(t, "BCEBackward is not p-y", func() {
		got := ops.BCEBackward(sc(1), vec(0.2), vec(1)).Float64s()
		if len(got) == 1 && closeTo(got[0], -0.8, 1e-9) {
			t.Errorf("BCEBackward(grad 1, prob [0.2], target [1]): got %v, the p-y shortcut; want -5", got)
		}
	})
}

func TestEdgeBCEWithLogits(t *testing.T) {
	cases := []struct {
		desc  string
		run   func() *tt
		shape []int
		want  []float64
		tol   float64
	}{
		{"BCEWithLogits([100], [0])", func() *tt { return ops.BCEWithLogits(vec(100), vec(0)) }, sh(), []float64{100}, 1e-15},
		{"BCEWithLogits([-100], [1])", func() *tt { return ops.BCEWithLogits(vec(-100), vec(1)) }, sh(), []float64{100}, 1e-15},
		{"BCEWithLogits([100], [1])", func() *tt { return ops.BCEWithLogits(vec(100), vec(1)) }, sh(), []float64{0}, 1e-15},
		{"BCEWithLogits([-100], [0])", func() *tt { return ops.BCEWithLogits(vec(-100), vec(0)) }, sh(), []float64{0}, 1e-15},
		{"BCEWithLogits([1000 -1000], [0 1])", func() *tt { return ops.BCEWithLogits(vec(1000, -1000), vec(0, 1)) }, sh(), []float64{1000}, 1e-15},
		{"BCEWithLogits(0 (0-D), 0.3)", func() *tt { return ops.BCEWithLogits(sc(0), sc(0.3)) }, sh(), []float64{math.Ln2}, 1e-15},
		{"BCEWithLogits([2 -3], [1 0.25])", func() *tt { return ops.BCEWithLogits(vec(2, -3), vec(1, 0.25)) }, sh(),
			[]float64{(math.Log1p(math.Exp(-2)) + (0.75*-3 + 3 + math.Log1p(math.Exp(-3)))) / 2}, 1e-14},
		// (sigmoid(x) - y) / N.
		{"BCEWithLogitsBackward(grad 1, [100 -100 1000 -1000 0], [0 1 0 1 0.5])",
			func() *tt {
				return ops.BCEWithLogitsBackward(sc(1), vec(100, -100, 1000, -1000, 0), vec(0, 1, 0, 1, 0.5))
			},
			sh(5), []float64{0.2, -0.2, 0.2, -0.2, 0}, 1e-15},
		{"BCEWithLogitsBackward(grad 2, [2], [1])",
			func() *tt { return ops.BCEWithLogitsBackward(sc(2), vec(2), vec(1)) },
			sh(1), []float64{2 * (1/(1+math.Exp(-2)) - 1)}, 1e-14},
	}
	for _, c := range cases {
		safely(t, c.desc, func() { checkT(t, c.desc, c.run(), c.shape, c.want, c.tol) })
	}
}

// refCrossEntropy is mean_i(logsumexp(x_i) - x_i[label_i]) and its gradient.
func refCrossEntropy(x []float64, n, c int, labels []int) (float64, []float64) {
	var loss float64
	g := make([]float64, len(x))
	for i := range n {
		row := x[i*c : (i+1)*c]
		sm, ls := refSoftmax(row, []int{c}, 0)
		loss -= ls[labels[i]]
		for j := range c {
			g[i*c+j] = sm[j] / float64(n)
		}
		g[i*c+labels[i]] -= 1 / float64(n)
	}
	return loss / float64(n), g
}

func TestEdgeCrossEntropy(t *testing.T) {
	rng := newRNG(200)
	for _, c := range []struct {
		n, c  int
		scale float64
	}{{4, 5, 1}, {3, 2, 5}, {1, 1, 1}, {6, 10, 1000}} {
		x := randN(rng, c.scale, c.n, c.c)
		labels := randLabels(rng, c.n, c.c)
		want, gwant := refCrossEntropy(x.Float64s(), c.n, c.c, labels)
		for i := range gwant {
			gwant[i] *= 2
		}
		desc := fmt.Sprintf("CrossEntropy(logits %v scale %v, labels %v)", x.Shape(), c.scale, labels)
		safely(t, desc, func() {
			checkT(t, desc, ops.CrossEntropy(x, labels), sh(), []float64{want}, 1e-13)
			checkT(t, "grad 2 "+desc+" backward", ops.CrossEntropyBackward(sc(2), x, labels), x.Shape(), gwant, 1e-13)
		})
	}
	x := mk(sh(2, 3), 1000, -1000, 0, 0, 1000, -1000)
	for _, c := range []struct {
		labels []int
		loss   float64
		grad   []float64
	}{
		{[]int{0, 0}, 500, []float64{0, 0, 0, -0.5, 0.5, 0}},
		{[]int{1, 2}, 2000, []float64{0.5, -0.5, 0, 0, 0.5, -0.5}},
	} {
		desc := fmt.Sprintf("CrossEntropy(logits [[1000 -1000 0] [0 1000 -1000]], labels %v)", c.labels)
		safely(t, desc, func() {
			checkT(t, desc, ops.CrossEntropy(x, c.labels), sh(), []float64{c.loss}, 1e-15)
			checkT(t, desc+" backward", ops.CrossEntropyBackward(sc(1), x, c.labels), sh(2, 3), c.grad, 1e-15)
		})
	}
	// A label outside [0, C) panics, naming the label and C.
	for _, bad := range []int{3, 7, -1, -100} {
		labels := []int{0, bad}
		lab := regexp.MustCompile(`(^|[^0-9-])` + regexp.QuoteMeta(fmt.Sprint(bad)) + `([^0-9]|$)`)
		for _, f := range []struct {
			name string
			fn   func()
		}{
			{"CrossEntropy", func() { ops.CrossEntropy(mk(sh(2, 3), 1, 2, 3, 4, 5, 6), labels) }},
			{"CrossEntropyBackward", func() { ops.CrossEntropyBackward(sc(1), mk(sh(2, 3), 1, 2, 3, 4, 5, 6), labels) }},
		} {
			desc := fmt.Sprintf("%s(logits [2 3], labels %v)", f.name, labels)
			expectError(t, desc, "ops."+f.name+":", []string{"3"}, f.fn)
			func() {
				defer func() {
					if err, ok := recover().(error); ok && !lab.MatchString(err.Error()) {
						t.Errorf("%s: error %q does not name the label %d", desc, err.Error(), bad)
					}
				}()
				f.fn()
			}()
		}
	}
}

func TestEdgeMSE(t *testing.T) {
	safely(t, "MSE", func() {
		checkT(t, "MSE([1 2 3], [1 0 0])", ops.MSE(vec(1, 2, 3), vec(1, 0, 0)), sh(), []float64{13.0 / 3}, 1e-15)
		checkT(t, "MSEBackward(grad 3, [1 2 3], [1 0 0])", ops.MSEBackward(sc(3), vec(1, 2, 3), vec(1, 0, 0)), sh(3), []float64{0, 4, 6}, 1e-15)
		checkT(t, "MSE(2.5 (0-D), 1)", ops.MSE(sc(2.5), sc(1)), sh(), []float64{2.25}, 0)
		checkT(t, "MSEBackward(grad 1, 2.5 (0-D), 1)", ops.MSEBackward(sc(1), sc(2.5), sc(1)), sh(), []float64{3}, 0)
	})
}

// ---- Pow ----

func TestEdgePow(t *testing.T) {
	cases := []struct {
		desc  string
		run   func() *tt
		shape []int
		want  []float64
		tol   float64
	}{
		{"Pow([4 2 9 2 0 0 -2 -8], [0.5 -1 1.5 0 0 -1 3 1/3])",
			func() *tt { return ops.Pow(vec(4, 2, 9, 2, 0, 0, -2, -8), vec(0.5, -1, 1.5, 0, 0, -1, 3, 1.0/3)) },
			sh(8), []float64{2, 0.5, 27, 1, 1, inf, -8, nan}, 1e-15},
		{"Pow([2 3], 2 (0-D))", func() *tt { return ops.Pow(vec(2, 3), sc(2)) }, sh(2), []float64{4, 9}, 0},
		{"Pow([[2] [3]], [1 2 3])", func() *tt { return ops.Pow(mk(sh(2, 1), 2, 3), vec(1, 2, 3)) },
			sh(2, 3), []float64{2, 4, 8, 3, 9, 27}, 1e-15},
		{"PowBackward(grad 1, [2], [3]) ga", func() *tt { ga, _ := ops.PowBackward(vec(1), vec(2), vec(3)); return ga },
			sh(1), []float64{12}, 1e-15},
		{"PowBackward(grad 1, [2], [3]) gb", func() *tt { _, gb := ops.PowBackward(vec(1), vec(2), vec(3)); return gb },
			sh(1), []float64{8 * math.Ln2}, 1e-15},
		{"PowBackward(grad 2, [4], [0.5]) both", func() *tt {
			ga, gb := ops.PowBackward(vec(2), vec(4), vec(0.5))
			return ops.Concat(0, ga, gb)
		}, sh(2), []float64{0.5, 4 * math.Log(4)}, 1e-15},
		// PyTorch masks: ga = 0 where b == 0; gb = 0 where a == 0 and b >= 0.
		{"PowBackward(grad 1, a [0 0 0 0], b [2 0 0.5 -1]) ga",
			func() *tt { ga, _ := ops.PowBackward(vec(1, 1, 1, 1), vec(0, 0, 0, 0), vec(2, 0, 0.5, -1)); return ga },
			sh(4), []float64{0, 0, inf, ninf}, 0},
		{"PowBackward(grad 1, a [0 0 0 0], b [2 0 0.5 -1]) gb",
			func() *tt { _, gb := ops.PowBackward(vec(1, 1, 1, 1), vec(0, 0, 0, 0), vec(2, 0, 0.5, -1)); return gb },
			sh(4), []float64{0, 0, 0, ninf}, 0},
		{"PowBackward(grad 1, a [3], b [0]) ga", func() *tt { ga, _ := ops.PowBackward(vec(1), vec(3), vec(0)); return ga },
			sh(1), []float64{0}, 0},
		{"PowBackward(grad 1, a [-2], b [3])", func() *tt {
			ga, gb := ops.PowBackward(vec(1), vec(-2), vec(3))
			return ops.Concat(0, ga, gb)
		}, sh(2), []float64{12, nan}, 1e-15},
	}
	for _, c := range cases {
		safely(t, c.desc, func() { checkT(t, c.desc, c.run(), c.shape, c.want, c.tol) })
	}
}

// ---- shapes: MatMul, Transpose, Reshape, Concat ----

// refMatMul2 multiplies row-major a [m,k] and b [k,n].
func refMatMul2(a, b []float64, m, k, n int) []float64 {
	c := make([]float64, m*n)
	for i := range m {
		for j := range n {
			for p := range k {
				c[i*n+j] += a[i*k+p] * b[p*n+j]
			}
		}
	}
	return c
}

func TestEdgeMatMulShapes(t *testing.T) {
	cases := []struct {
		desc  string
		a, b  *tt
		shape []int
		want  []float64
	}{
		{"[1 2 3] @ [4 5 6]", vec(1, 2, 3), vec(4, 5, 6), sh(), []float64{32}},
		{"[[1 2] [3 4]] @ [5 6]", arange(2, 2), vec(5, 6), sh(2), []float64{17, 39}},
		{"[5 6] @ [[1 2] [3 4]]", vec(5, 6), arange(2, 2), sh(2), []float64{23, 34}},
		{"[2 3] @ [3 2]", arange(2, 3), arange(3, 2), sh(2, 2), refMatMul2(arange(2, 3).Float64s(), arange(3, 2).Float64s(), 2, 3, 2)},
		{"[1 1] @ [1 1]", vec(1, 1).Reshape(1, 2), vec(1, 1).Reshape(2, 1), sh(1, 1), []float64{2}},
	}
	for _, c := range cases {
		desc := "MatMul(" + c.desc + ")"
		safely(t, desc, func() { checkT(t, desc, ops.MatMul(c.a, c.b), c.shape, c.want, 0) })
	}

	// Batched with broadcast batch dims: out[i,j] = a[i,0] @ b[j].
	a, b := arange(2, 1, 3, 4), arange(5, 4, 2)
	want := make([]float64, 0, 2*5*3*2)
	av, bv := a.Float64s(), b.Float64s()
	for i := range 2 {
		for j := range 5 {
			want = append(want, refMatMul2(av[i*12:(i+1)*12], bv[j*8:(j+1)*8], 3, 4, 2)...)
		}
	}
	safely(t, "MatMul([2 1 3 4], [5 4 2])", func() {
		checkT(t, "MatMul(1..24 [2 1 3 4], 1..40 [5 4 2])", ops.MatMul(a, b), sh(2, 5, 3, 2), want, 0)
	})

	// 1-D operands against batches: promoted then the added axis removed.
	safely(t, "MatMul([3], [2 3 4])", func() {
		m := arange(2, 3, 4).Float64s()
		w := append(refMatMul2([]float64{1, 2, 3}, m[:12], 1, 3, 4), refMatMul2([]float64{1, 2, 3}, m[12:], 1, 3, 4)...)
		checkT(t, "MatMul([1 2 3], 1..24 [2 3 4])", ops.MatMul(vec(1, 2, 3), arange(2, 3, 4)), sh(2, 4), w, 0)
	})
	safely(t, "MatMul([2 3 4], [4])", func() {
		w := refMatMul2(arange(2, 3, 4).Float64s(), []float64{1, 0, -1, 2}, 6, 4, 1)
		checkT(t, "MatMul(1..24 [2 3 4], [1 0 -1 2])", ops.MatMul(arange(2, 3, 4), vec(1, 0, -1, 2)), sh(2, 3), w, 0)
	})

	// Backward shapes and values.
	back := []struct {
		desc    string
		g, a, b *tt
		wa, wb  []int
		va, vb  []float64
	}{
		{"grad 2, [1 2 3] @ [4 5 6]", sc(2), vec(1, 2, 3), vec(4, 5, 6), sh(3), sh(3), []float64{8, 10, 12}, []float64{2, 4, 6}},
		{"grad [1 1], [[1 2] [3 4]] @ [5 6]", vec(1, 1), arange(2, 2), vec(5, 6), sh(2, 2), sh(2), []float64{5, 6, 5, 6}, []float64{4, 6}},
		{"grad [1 2], [5 6] @ [[1 2] [3 4]]", vec(1, 2), vec(5, 6), arange(2, 2), sh(2), sh(2, 2), []float64{5, 11}, []float64{5, 10, 6, 12}},
	}
	for _, c := range back {
		desc := "MatMulBackward(" + c.desc + ")"
		safely(t, desc, func() {
			ga, gb := ops.MatMulBackward(c.g, c.a, c.b)
			checkT(t, desc+" ga", ga, c.wa, c.va, 0)
			checkT(t, desc+" gb", gb, c.wb, c.vb, 0)
		})
	}
	safely(t, "MatMulBackward shapes for [2 1 3 4] @ [5 4 2]", func() {
		ga, gb := ops.MatMulBackward(mk(sh(2, 5, 3, 2), repeat(1, 60)...), a, b)
		if !tensor.EqualShapes(ga.Shape(), a.Shape()) || !tensor.EqualShapes(gb.Shape(), b.Shape()) {
			t.Errorf("MatMulBackward(grad [2 5 3 2], [2 1 3 4], [5 4 2]): got shapes %v %v, want [2 1 3 4] [5 4 2]", ga.Shape(), gb.Shape())
		}
	})
}

func TestEdgeTransposeReshapeConcat(t *testing.T) {
	x := arange(2, 3, 4)
	safely(t, "Transpose([2 3 4])", func() {
		y := ops.Transpose(x)
		if !tensor.EqualShapes(y.Shape(), sh(4, 3, 2)) {
			t.Fatalf("Transpose(1..24 [2 3 4]): got shape %v, want [4 3 2]", y.Shape())
		}
		for i := range 2 {
			for j := range 3 {
				for k := range 4 {
					if got, want := y.At(k, j, i), x.At(i, j, k); got != want {
						t.Errorf("Transpose(1..24 [2 3 4]) at [%d %d %d]: got %v, want x[%d %d %d] = %v", k, j, i, got, i, j, k, want)
					}
				}
			}
		}
		checkT(t, "TransposeBackward(Transpose(1..24 [2 3 4]))", ops.TransposeBackward(y), sh(2, 3, 4), x.Float64s(), 0)
		checkT(t, "Transpose([[1 2 3] [4 5 6]])", ops.Transpose(arange(2, 3)), sh(3, 2), []float64{1, 4, 2, 5, 3, 6}, 0)
		checkT(t, "Transpose([1 2 3])", ops.Transpose(vec(1, 2, 3)), sh(3), []float64{1, 2, 3}, 0)
		checkT(t, "Transpose(7 (0-D))", ops.Transpose(sc(7)), sh(), []float64{7}, 0)
	})
	safely(t, "Reshape", func() {
		checkT(t, "Reshape(1..24 [2 3 4], -1, 4)", ops.Reshape(x, -1, 4), sh(6, 4), x.Float64s(), 0)
		checkT(t, "Reshape(1..24 [2 3 4], 2, -1)", ops.Reshape(x, 2, -1), sh(2, 12), x.Float64s(), 0)
		checkT(t, "Reshape(1..24 [2 3 4], -1)", ops.Reshape(x, -1), sh(24), x.Float64s(), 0)
		checkT(t, "Reshape(1..24 [2 3 4], 3, -1, 2)", ops.Reshape(x, 3, -1, 2), sh(3, 4, 2), x.Float64s(), 0)
		checkT(t, "ReshapeBackward(grad 1..24 [6 4], [2 3 4])", ops.ReshapeBackward(arange(6, 4), sh(2, 3, 4)), sh(2, 3, 4), x.Float64s(), 0)
	})
	safely(t, "Concat", func() {
		a, b := mk(sh(2, 1), 1, 2), mk(sh(2, 2), 3, 4, 5, 6)
		checkT(t, "Concat(-1, [[1] [2]], [[3 4] [5 6]])", ops.Concat(-1, a, b), sh(2, 3), []float64{1, 3, 4, 2, 5, 6}, 0)
		checkT(t, "Concat(1, [[1] [2]], [[3 4] [5 6]])", ops.Concat(1, a, b), sh(2, 3), []float64{1, 3, 4, 2, 5, 6}, 0)
		checkT(t, "Concat(-2, [[1 2]], [[3 4] [5 6]])", ops.Concat(-2, mk(sh(1, 2), 1, 2), b), sh(3, 2), []float64{1, 2, 3, 4, 5, 6}, 0)
		checkT(t, "Concat(-1, [1 2], [3])", ops.Concat(-1, vec(1, 2), vec(3)), sh(3), []float64{1, 2, 3}, 0)
		gs := ops.ConcatBackward(arange(2, 3), -1, sh(2, 1), sh(2, 2))
		if len(gs) != 2 {
			t.Fatalf("ConcatBackward(grad 1..6 [2 3], -1, [2 1], [2 2]): got %d gradients, want 2", len(gs))
		}
		checkT(t, "ConcatBackward(grad 1..6 [2 3], -1, [2 1], [2 2])[0]", gs[0], sh(2, 1), []float64{1, 4}, 0)
		checkT(t, "ConcatBackward(grad 1..6 [2 3], -1, [2 1], [2 2])[1]", gs[1], sh(2, 2), []float64{2, 3, 5, 6}, 0)
		gs = ops.ConcatBackward(arange(3, 2), -2, sh(1, 2), sh(2, 2))
		checkT(t, "ConcatBackward(grad 1..6 [3 2], -2, [1 2], [2 2])[0]", gs[0], sh(1, 2), []float64{1, 2}, 0)
		checkT(t, "ConcatBackward(grad 1..6 [3 2], -2, [1 2], [2 2])[1]", gs[1], sh(2, 2), []float64{3, 4, 5, 6}, 0)
	})
}

// ---- empty tensors and 0-D scalars through every op ----

func TestEdgeEmptyAndScalar(t *testing.T) {
	e03 := mk(sh(0, 3))
	e30 := mk(sh(3, 0))
	e0 := mk(sh(0))
	s := sc(2.5)
	s2 := sc(0.5)
	v3 := vec(1, 2, 3)
	cases := []struct {
		desc  string
		run   func() *tt
		shape []int
		want  []float64
	}{
		{"Add([0 3], [3])", func() *tt { return ops.Add(e03, v3) }, sh(0, 3), nil},
		{"Add(2.5, 0.5) (0-D)", func() *tt { return ops.Add(s, s2) }, sh(), []float64{3}},
		{"Sub([0 3], [0 3])", func() *tt { return ops.Sub(e03, e03) }, sh(0, 3), nil},
		{"Sub(2.5, 0.5) (0-D)", func() *tt { return ops.Sub(s, s2) }, sh(), []float64{2}},
		{"Mul([0 3], 2.5)", func() *tt { return ops.Mul(e03, s) }, sh(0, 3), nil},
		{"Mul(2.5, 0.5) (0-D)", func() *tt { return ops.Mul(s, s2) }, sh(), []float64{1.25}},
		{"Div(2.5, [0 3])", func() *tt { return ops.Div(s, e03) }, sh(0, 3), nil},
		{"Div(2.5, 0.5) (0-D)", func() *tt { return ops.Div(s, s2) }, sh(), []float64{5}},
		{"Pow([0 3], 2.5)", func() *tt { return ops.Pow(e03, s) }, sh(0, 3), nil},
		{"Pow(2.5, 0.5) (0-D)", func() *tt { return ops.Pow(s, s2) }, sh(), []float64{math.Sqrt(2.5)}},
		{"MatMul([0 3], [3 4])", func() *tt { return ops.MatMul(e03, mk(sh(3, 4), repeat(1, 12)...)) }, sh(0, 4), nil},
		{"MatMul([2 0], [0 3])", func() *tt { return ops.MatMul(mk(sh(2, 0)), e03) }, sh(2, 3), repeat(0, 6)},
		{"MatMul([0], [0])", func() *tt { return ops.MatMul(e0, e0) }, sh(), []float64{0}},
		{"MatMul([3 0], [0])", func() *tt { return ops.MatMul(e30, e0) }, sh(3), []float64{0, 0, 0}},
		{"MatMul([0 2 3], [3 4])", func() *tt { return ops.MatMul(mk(sh(0, 2, 3)), mk(sh(3, 4), repeat(1, 12)...)) }, sh(0, 2, 4), nil},
		{"Transpose([0 3])", func() *tt { return ops.Transpose(e03) }, sh(3, 0), nil},
		{"Transpose(2.5)", func() *tt { return ops.Transpose(s) }, sh(), []float64{2.5}},
		{"Reshape([0 3], -1)", func() *tt { return ops.Reshape(e03, -1) }, sh(0), nil},
		{"Reshape([0 3], 3, 0)", func() *tt { return ops.Reshape(e03, 3, 0) }, sh(3, 0), nil},
		{"Reshape(2.5, 1, 1)", func() *tt { return ops.Reshape(s, 1, 1) }, sh(1, 1), []float64{2.5}},
		{"Reshape([7], ) to 0-D", func() *tt { return ops.Reshape(vec(7)) }, sh(), []float64{7}},
		{"Concat(0, [0 3], [2 3])", func() *tt { return ops.Concat(0, e03, arange(2, 3)) }, sh(2, 3), []float64{1, 2, 3, 4, 5, 6}},
		{"Concat(1, [2 0], [2 0])", func() *tt { return ops.Concat(1, mk(sh(2, 0)), mk(sh(2, 0))) }, sh(2, 0), nil},
		{"Sum([0 3])", func() *tt { return ops.Sum(e03) }, sh(), []float64{0}},
		{"Sum([0 3], 0)", func() *tt { return ops.Sum(e03, 0) }, sh(3), []float64{0, 0, 0}},
		{"Sum([0 3], 1)", func() *tt { return ops.Sum(e03, 1) }, sh(0), nil},
		{"Sum(2.5)", func() *tt { return ops.Sum(s) }, sh(), []float64{2.5}},
		{"Mean([0 3])", func() *tt { return ops.Mean(e03) }, sh(), []float64{nan}},
		{"Mean([0 3], 0)", func() *tt { return ops.Mean(e03, 0) }, sh(3), []float64{nan, nan, nan}},
		{"Mean([0 3], -1)", func() *tt { return ops.Mean(e03, -1) }, sh(0), nil},
		{"Mean(2.5)", func() *tt { return ops.Mean(s) }, sh(), []float64{2.5}},
		{"Max([0 3], 1)", func() *tt { return ops.Max(e03, 1) }, sh(0), nil},
		{"Max(2.5)", func() *tt { return ops.Max(s) }, sh(), []float64{2.5}},
		{"Min([0 3], -1)", func() *tt { return ops.Min(e03, -1) }, sh(0), nil},
		{"Min(2.5)", func() *tt { return ops.Min(s) }, sh(), []float64{2.5}},
		{"PReLU([0 3], alpha [3])", func() *tt { return ops.PReLU(e03, v3) }, sh(0, 3), nil},
		{"PReLU(-2 (0-D), 0.5)", func() *tt { return ops.PReLU(sc(-2), s2) }, sh(), []float64{-1}},
		{"Softmax([0 3], 1)", func() *tt { return ops.Softmax(e03, 1) }, sh(0, 3), nil},
		{"Softmax([0 3], 0)", func() *tt { return ops.Softmax(e03, 0) }, sh(0, 3), nil},
		{"Softmax([3 0], -1)", func() *tt { return ops.Softmax(e30, -1) }, sh(3, 0), nil},
		{"LogSoftmax([0 3], -1)", func() *tt { return ops.LogSoftmax(e03, -1) }, sh(0, 3), nil},
		{"LogSoftmax([3 0], 1)", func() *tt { return ops.LogSoftmax(e30, 1) }, sh(3, 0), nil},
		// torch.softmax accepts dim 0 and -1 on a 0-D tensor and gives 1 (log: 0).
		{"Softmax(2.5 (0-D), 0)", func() *tt { return ops.Softmax(s, 0) }, sh(), []float64{1}},
		{"Softmax(2.5 (0-D), -1)", func() *tt { return ops.Softmax(s, -1) }, sh(), []float64{1}},
		{"LogSoftmax(2.5 (0-D), 0)", func() *tt { return ops.LogSoftmax(s, 0) }, sh(), []float64{0}},
		// Mean over an empty batch is NaN, as PyTorch's reduction="mean".
		{"CrossEntropy([0 3], [])", func() *tt { return ops.CrossEntropy(e03, []int{}) }, sh(), []float64{nan}},
		{"MSE([0 3], [0 3])", func() *tt { return ops.MSE(e03, e03) }, sh(), []float64{nan}},
		{"BCE([0 3], [0 3])", func() *tt { return ops.BCE(e03, e03) }, sh(), []float64{nan}},
		{"BCEWithLogits([0 3], [0 3])", func() *tt { return ops.BCEWithLogits(e03, e03) }, sh(), []float64{nan}},
		{"MSE(2.5, 0.5) (0-D)", func() *tt { return ops.MSE(s, s2) }, sh(), []float64{4}},
		{"BCE(0.5, 1) (0-D)", func() *tt { return ops.BCE(s2, sc(1)) }, sh(), []float64{math.Ln2}},
		{"BCEWithLogits(2.5, 0.5) (0-D)", func() *tt { return ops.BCEWithLogits(s, s2) }, sh(), []float64{0.5*2.5 + math.Log1p(math.Exp(-2.5))}},

		// Backward.
		{"AddBackward(grad [0 3], [0 3], [3]) gb", func() *tt { _, gb := ops.AddBackward(e03, sh(0, 3), sh(3)); return gb }, sh(3), []float64{0, 0, 0}},
		{"AddBackward(grad [0 3], [0 3], [3]) ga", func() *tt { ga, _ := ops.AddBackward(e03, sh(0, 3), sh(3)); return ga }, sh(0, 3), nil},
		{"SubBackward(grad 2.5, [], []) gb", func() *tt { _, gb := ops.SubBackward(s, sh(), sh()); return gb }, sh(), []float64{-2.5}},
		{"MulBackward(grad [0 3], [0 3], [3]) gb", func() *tt { _, gb := ops.MulBackward(e03, e03, v3); return gb }, sh(3), []float64{0, 0, 0}},
		{"MulBackward(grad 2, 2.5, 0.5) ga", func() *tt { ga, _ := ops.MulBackward(sc(2), s, s2); return ga }, sh(), []float64{1}},
		{"DivBackward(grad [0 3], [0 3], [3]) gb", func() *tt { _, gb := ops.DivBackward(e03, e03, v3); return gb }, sh(3), []float64{0, 0, 0}},
		{"PowBackward(grad [0 3], [0 3], [3]) gb", func() *tt { _, gb := ops.PowBackward(e03, e03, v3); return gb }, sh(3), []float64{0, 0, 0}},
		{"PowBackward(grad [0 3], [0 3], [3]) ga", func() *tt { ga, _ := ops.PowBackward(e03, e03, v3); return ga }, sh(0, 3), nil},
		{"MatMulBackward(grad ones [2 3], [2 0], [0 3]) ga", func() *tt { ga, _ := ops.MatMulBackward(mk(sh(2, 3), repeat(1, 6)...), mk(sh(2, 0)), e03); return ga }, sh(2, 0), nil},
		{"MatMulBackward(grad ones [2 3], [2 0], [0 3]) gb", func() *tt { _, gb := ops.MatMulBackward(mk(sh(2, 3), repeat(1, 6)...), mk(sh(2, 0)), e03); return gb }, sh(0, 3), nil},
		{"MatMulBackward(grad [0 4], [0 3], ones [3 4]) gb", func() *tt { _, gb := ops.MatMulBackward(mk(sh(0, 4)), e03, mk(sh(3, 4), repeat(1, 12)...)); return gb }, sh(3, 4), repeat(0, 12)},
		{"MatMulBackward(grad 1, [0], [0]) ga", func() *tt { ga, _ := ops.MatMulBackward(sc(1), e0, e0); return ga }, sh(0), nil},
		{"TransposeBackward(grad [3 0])", func() *tt { return ops.TransposeBackward(e30) }, sh(0, 3), nil},
		{"ReshapeBackward(grad [0], [0 3])", func() *tt { return ops.ReshapeBackward(e0, sh(0, 3)) }, sh(0, 3), nil},
		{"ReshapeBackward(grad [1 1], [])", func() *tt { return ops.ReshapeBackward(mk(sh(1, 1), 4), sh()) }, sh(), []float64{4}},
		{"ConcatBackward(grad 1..6 [2 3], 0, [0 3], [2 3])[0]", func() *tt { return ops.ConcatBackward(arange(2, 3), 0, sh(0, 3), sh(2, 3))[0] }, sh(0, 3), nil},
		{"ConcatBackward(grad 1..6 [2 3], 0, [0 3], [2 3])[1]", func() *tt { return ops.ConcatBackward(arange(2, 3), 0, sh(0, 3), sh(2, 3))[1] }, sh(2, 3), []float64{1, 2, 3, 4, 5, 6}},
		{"SumBackward(grad 1, [0 3])", func() *tt { return ops.SumBackward(sc(1), sh(0, 3)) }, sh(0, 3), nil},
		{"SumBackward(grad [1 2 3], [0 3], 0)", func() *tt { return ops.SumBackward(v3, sh(0, 3), 0) }, sh(0, 3), nil},
		{"SumBackward(grad 2.5, [])", func() *tt { return ops.SumBackward(s, sh()) }, sh(), []float64{2.5}},
		{"MeanBackward(grad 1, [0 3])", func() *tt { return ops.MeanBackward(sc(1), sh(0, 3)) }, sh(0, 3), nil},
		{"MeanBackward(grad [0], [0 3], 1)", func() *tt { return ops.MeanBackward(e0, sh(0, 3), 1) }, sh(0, 3), nil},
		{"MeanBackward(grad 2.5, [])", func() *tt { return ops.MeanBackward(s, sh()) }, sh(), []float64{2.5}},
		{"MaxBackward(grad [0], [0 3], 1)", func() *tt { return ops.MaxBackward(e0, e03, 1) }, sh(0, 3), nil},
		{"MinBackward(grad [0], [0 3], -1)", func() *tt { return ops.MinBackward(e0, e03, -1) }, sh(0, 3), nil},
		{"PReLUBackward(grad [0 3], [0 3], alpha [3]) galpha", func() *tt { _, ga := ops.PReLUBackward(e03, e03, v3); return ga }, sh(3), []float64{0, 0, 0}},
		{"PReLUBackward(grad 1, -2 (0-D), 0.5) galpha", func() *tt { _, ga := ops.PReLUBackward(sc(1), sc(-2), s2); return ga }, sh(), []float64{-2}},
		{"SoftmaxBackward(grad [0 3], out [0 3], 1)", func() *tt { return ops.SoftmaxBackward(e03, e03, 1) }, sh(0, 3), nil},
		{"LogSoftmaxBackward(grad [3 0], out [3 0], -1)", func() *tt { return ops.LogSoftmaxBackward(e30, e30, -1) }, sh(3, 0), nil},
		{"SoftmaxBackward(grad 2, out 1 (0-D), 0)", func() *tt { return ops.SoftmaxBackward(sc(2), sc(1), 0) }, sh(), []float64{0}},
		{"CrossEntropyBackward(grad 1, [0 3], [])", func() *tt { return ops.CrossEntropyBackward(sc(1), e03, []int{}) }, sh(0, 3), nil},
		{"MSEBackward(grad 1, [0 3], [0 3])", func() *tt { return ops.MSEBackward(sc(1), e03, e03) }, sh(0, 3), nil},
		{"BCEBackward(grad 1, [0 3], [0 3])", func() *tt { return ops.BCEBackward(sc(1), e03, e03) }, sh(0, 3), nil},
		{"BCEWithLogitsBackward(grad 1, [0 3], [0 3])", func() *tt { return ops.BCEWithLogitsBackward(sc(1), e03, e03) }, sh(0, 3), nil},
		{"MSEBackward(grad 1, 2.5, 0.5) (0-D)", func() *tt { return ops.MSEBackward(sc(1), s, s2) }, sh(), []float64{4}},
		{"BCEBackward(grad 1, 0.5, 1) (0-D)", func() *tt { return ops.BCEBackward(sc(1), s2, sc(1)) }, sh(), []float64{-2}},
		{"BCEWithLogitsBackward(grad 1, 0, 1) (0-D)", func() *tt { return ops.BCEWithLogitsBackward(sc(1), sc(0), sc(1)) }, sh(), []float64{-0.5}},
	}
	// Elementwise ops on [0 3] and on a 0-D scalar, forward and backward.
	type unary struct {
		name string
		f    func(*tt) *tt
		b    func(g, x *tt) *tt
		ref  func(float64) float64
		dref func(float64) float64
	}
	for _, u := range []unary{
		{"Exp", ops.Exp, func(g, x *tt) *tt { return ops.ExpBackward(g, ops.Exp(x)) }, math.Exp, math.Exp},
		{"Log", ops.Log, ops.LogBackward, math.Log, func(x float64) float64 { return 1 / x }},
		{"Log2", ops.Log2, ops.Log2Backward, math.Log2, func(x float64) float64 { return 1 / (x * math.Ln2) }},
		{"Log10", ops.Log10, ops.Log10Backward, math.Log10, func(x float64) float64 { return 1 / (x * math.Ln10) }},
		{"Sqrt", ops.Sqrt, func(g, x *tt) *tt { return ops.SqrtBackward(g, ops.Sqrt(x)) }, math.Sqrt, func(x float64) float64 { return 0.5 / math.Sqrt(x) }},
		{"Abs", ops.Abs, ops.AbsBackward, math.Abs, func(float64) float64 { return 1 }},
		{"Sin", ops.Sin, ops.SinBackward, math.Sin, math.Cos},
		{"Cos", ops.Cos, ops.CosBackward, math.Cos, func(x float64) float64 { return -math.Sin(x) }},
		{"Clip(0, 2)", func(x *tt) *tt { return ops.Clip(x, 0, 2) }, func(g, x *tt) *tt { return ops.ClipBackward(g, x, 0, 2) },
			func(x float64) float64 { return math.Min(2, math.Max(0, x)) }, func(float64) float64 { return 0 }},
		{"ReLU", ops.ReLU, ops.ReLUBackward, func(x float64) float64 { return x }, func(float64) float64 { return 1 }},
		{"LeakyReLU(0.1)", func(x *tt) *tt { return ops.LeakyReLU(x, 0.1) }, func(g, x *tt) *tt { return ops.LeakyReLUBackward(g, x, 0.1) },
			func(x float64) float64 { return x }, func(float64) float64 { return 1 }},
		{"Sigmoid", ops.Sigmoid, func(g, x *tt) *tt { return ops.SigmoidBackward(g, ops.Sigmoid(x)) },
			func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
			func(x float64) float64 { s := 1 / (1 + math.Exp(-x)); return s * (1 - s) }},
		{"Tanh", ops.Tanh, func(g, x *tt) *tt { return ops.TanhBackward(g, ops.Tanh(x)) }, math.Tanh,
			func(x float64) float64 { return 1 - math.Tanh(x)*math.Tanh(x) }},
		{"GELU(exact)", func(x *tt) *tt { return ops.GELU(x, false) }, func(g, x *tt) *tt { return ops.GELUBackward(g, x, false) }, geluRef, geluGradRef},
		{"GELU(tanh)", func(x *tt) *tt { return ops.GELU(x, true) }, func(g, x *tt) *tt { return ops.GELUBackward(g, x, true) }, geluTanhRef, geluTanhGradRef},
	} {
		cases = append(cases,
			struct {
				desc  string
				run   func() *tt
				shape []int
				want  []float64
			}{u.name + "([0 3])", func() *tt { return u.f(e03) }, sh(0, 3), nil},
			struct {
				desc  string
				run   func() *tt
				shape []int
				want  []float64
			}{u.name + "Backward(grad [0 3], [0 3])", func() *tt { return u.b(e03, e03) }, sh(0, 3), nil},
			struct {
				desc  string
				run   func() *tt
				shape []int
				want  []float64
			}{u.name + "(2.5 (0-D))", func() *tt { return u.f(s) }, sh(), []float64{u.ref(2.5)}},
			struct {
				desc  string
				run   func() *tt
				shape []int
				want  []float64
			}{u.name + "Backward(grad 0.5, x 2.5 (0-D))", func() *tt { return u.b(s2, s) }, sh(), []float64{0.5 * u.dref(2.5)}})
	}
	for _, c := range cases {
		safely(t, c.desc, func() {
			want := c.want
			if want == nil {
				want = []float64{}
			}
			checkT(t, c.desc, c.run(), c.shape, want, 1e-14)
		})
	}
}

// Reductions with nothing to reduce over have no identity: PyTorch's
// amax/amin raise "Expected reduction dim to have non-zero size".
func TestEdgeMaxMinOfNothing(t *testing.T) {
	e03 := mk(sh(0, 3))
	for _, c := range []struct {
		desc, prefix string
		fn           func()
	}{
		{"Max([0 3])", "ops.Max:", func() { ops.Max(e03) }},
		{"Max([0 3], 0)", "ops.Max:", func() { ops.Max(e03, 0) }},
		{"Min([0 3], -2)", "ops.Min:", func() { ops.Min(e03, -2) }},
	} {
		expectError(t, c.desc, c.prefix, []string{"[0 3]"}, c.fn)
	}
}

// ---- errors ----

func TestEdgeErrors(t *testing.T) {
	f32 := func(shape ...int) *tt { return tensor.Zeros(tensor.Float32, shape...) }
	z := func(shape ...int) *tt { return tensor.Zeros(tensor.Float64, shape...) }
	cases := []struct {
		op       string
		desc     string
		mentions []string
		fn       func()
	}{
		// Shapes that do not broadcast or fit.
		{"Add", "Add([2 3], [4])", []string{"[2 3]", "[4]"}, func() { ops.Add(z(2, 3), z(4)) }},
		{"Sub", "Sub([2 3], [3 2])", []string{"[2 3]", "[3 2]"}, func() { ops.Sub(z(2, 3), z(3, 2)) }},
		{"Mul", "Mul([0], [2])", []string{"[0]", "[2]"}, func() { ops.Mul(z(0), z(2)) }},
		{"Div", "Div([2 3], [2])", []string{"[2 3]", "[2]"}, func() { ops.Div(z(2, 3), z(2)) }},
		{"Pow", "Pow([3], [2])", []string{"[3]", "[2]"}, func() { ops.Pow(z(3), z(2)) }},
		{"MatMul", "MatMul([3 4], [5 2])", []string{"[3 4]", "[5 2]"}, func() { ops.MatMul(z(3, 4), z(5, 2)) }},
		{"MatMul", "MatMul([3], [4])", []string{"[3]", "[4]"}, func() { ops.MatMul(z(3), z(4)) }},
		{"MatMul", "MatMul([2 3], [4])", []string{"[2 3]", "[4]"}, func() { ops.MatMul(z(2, 3), z(4)) }},
		{"MatMul", "MatMul([4], [3 2])", []string{"[4]", "[3 2]"}, func() { ops.MatMul(z(4), z(3, 2)) }},
		{"MatMul", "MatMul([2 3 4], [3 4 5])", []string{"[2 3 4]", "[3 4 5]"}, func() { ops.MatMul(z(2, 3, 4), z(3, 4, 5)) }},
		{"MatMul", "MatMul([], [3])", []string{"[]", "[3]"}, func() { ops.MatMul(z(), z(3)) }},
		{"MatMul", "MatMul([3], [])", []string{"[3]", "[]"}, func() { ops.MatMul(z(3), z()) }},
		{"Reshape", "Reshape([2 3], 4, 2)", []string{"[2 3]", "[4 2]"}, func() { ops.Reshape(z(2, 3), 4, 2) }},
		{"Reshape", "Reshape([2 3], -1, -1)", []string{"[2 3]", "[-1 -1]"}, func() { ops.Reshape(z(2, 3), -1, -1) }},
		{"Reshape", "Reshape([2 3], 4, -1)", []string{"[2 3]", "[4 -1]"}, func() { ops.Reshape(z(2, 3), 4, -1) }},
		{"Concat", "Concat(0, [2 3], [2 4])", []string{"[2 3]", "[2 4]"}, func() { ops.Concat(0, z(2, 3), z(2, 4)) }},
		{"Concat", "Concat(0, [2 3], [3])", []string{"[2 3]", "[3]"}, func() { ops.Concat(0, z(2, 3), z(3)) }},
		{"Concat", "Concat(2, [2 3], [2 3])", []string{"[2 3]"}, func() { ops.Concat(2, z(2, 3), z(2, 3)) }},
		{"Concat", "Concat(-3, [2 3], [2 3])", []string{"[2 3]"}, func() { ops.Concat(-3, z(2, 3), z(2, 3)) }},
		{"Concat", "Concat(0, [], [])", []string{"[]"}, func() { ops.Concat(0, z(), z()) }},
		{"Concat", "Concat(0)", nil, func() { ops.Concat(0) }},
		{"Sum", "Sum([2 3], 2)", []string{"[2 3]"}, func() { ops.Sum(z(2, 3), 2) }},
		{"Sum", "Sum([2 3], -3)", []string{"[2 3]"}, func() { ops.Sum(z(2, 3), -3) }},
		{"Sum", "Sum([2 3], 0, -2) (repeated axis)", []string{"[2 3]"}, func() { ops.Sum(z(2, 3), 0, -2) }},
		{"Sum", "Sum(0-D, 1)", []string{"[]"}, func() { ops.Sum(z(), 1) }},
		{"Mean", "Mean([2 3], 5)", []string{"[2 3]"}, func() { ops.Mean(z(2, 3), 5) }},
		{"Max", "Max([2 3], 2)", []string{"[2 3]"}, func() { ops.Max(z(2, 3), 2) }},
		{"Min", "Min([2 3], -3)", []string{"[2 3]"}, func() { ops.Min(z(2, 3), -3) }},
		{"Softmax", "Softmax([2 3], 2)", []string{"[2 3]"}, func() { ops.Softmax(z(2, 3), 2) }},
		{"LogSoftmax", "LogSoftmax([2 3], -3)", []string{"[2 3]"}, func() { ops.LogSoftmax(z(2, 3), -3) }},
		{"PReLU", "PReLU([2 3], alpha [2])", []string{"[2 3]", "[2]"}, func() { ops.PReLU(z(2, 3), z(2)) }},
		{"CrossEntropy", "CrossEntropy([2 3 4], 2 labels)", []string{"[2 3 4]"}, func() { ops.CrossEntropy(z(2, 3, 4), []int{0, 1}) }},
		{"CrossEntropy", "CrossEntropy([], 1 label)", []string{"[]"}, func() { ops.CrossEntropy(z(), []int{0}) }},
		{"CrossEntropy", "CrossEntropy([2 3], 3 labels)", []string{"[2 3]", "3"}, func() { ops.CrossEntropy(z(2, 3), []int{0, 1, 2}) }},
		{"MSE", "MSE([3], [4])", []string{"[3]", "[4]"}, func() { ops.MSE(z(3), z(4)) }},
		{"BCE", "BCE([3], [2 3])", []string{"[3]", "[2 3]"}, func() { ops.BCE(z(3), z(2, 3)) }},
		{"BCE", "BCE([2 2], [4])", []string{"[2 2]", "[4]"}, func() { ops.BCE(z(2, 2), z(4)) }},
		{"BCEWithLogits", "BCEWithLogits([3], [2 3])", []string{"[3]", "[2 3]"}, func() { ops.BCEWithLogits(z(3), z(2, 3)) }},

		// Backward kernels given gradients or inputs that do not fit.
		{"AddBackward", "AddBackward(grad [2 3], [2 2], [3])", []string{"[2 3]", "[2 2]", "[3]"}, func() { ops.AddBackward(z(2, 3), sh(2, 2), sh(3)) }},
		{"SubBackward", "SubBackward(grad [3], [2 3], [3])", []string{"[3]", "[2 3]"}, func() { ops.SubBackward(z(3), sh(2, 3), sh(3)) }},
		{"MulBackward", "MulBackward(grad [2 2], [2 3], [3])", []string{"[2 2]", "[2 3]", "[3]"}, func() { ops.MulBackward(z(2, 2), z(2, 3), z(3)) }},
		{"DivBackward", "DivBackward(grad [3], [2], [2])", []string{"[3]", "[2]"}, func() { ops.DivBackward(z(3), z(2), z(2)) }},
		{"PowBackward", "PowBackward(grad [2], [2], [3])", []string{"[2]", "[3]"}, func() { ops.PowBackward(z(2), z(2), z(3)) }},
		{"MatMulBackward", "MatMulBackward(grad [2 2], [2 3], [3 4])", []string{"[2 2]", "[2 3]", "[3 4]"}, func() { ops.MatMulBackward(z(2, 2), z(2, 3), z(3, 4)) }},
		{"MatMulBackward", "MatMulBackward(grad [2 4], [2 3], [4 4])", []string{"[2 3]", "[4 4]"}, func() { ops.MatMulBackward(z(2, 4), z(2, 3), z(4, 4)) }},
		{"ReshapeBackward", "ReshapeBackward(grad [6], [4])", []string{"[6]", "[4]"}, func() { ops.ReshapeBackward(z(6), sh(4)) }},
		{"ConcatBackward", "ConcatBackward(grad [2 3], 1, [2 1], [2 1])", []string{"[2 3]", "[2 1]"}, func() { ops.ConcatBackward(z(2, 3), 1, sh(2, 1), sh(2, 1)) }},
		{"ConcatBackward", "ConcatBackward(grad [2 3], 2, [2 1], [2 2])", []string{"[2 1]", "[2 2]"}, func() { ops.ConcatBackward(z(2, 3), 2, sh(2, 1), sh(2, 2)) }},
		{"SumBackward", "SumBackward(grad [4], [2 3], 0)", []string{"[4]", "[2 3]"}, func() { ops.SumBackward(z(4), sh(2, 3), 0) }},
		{"SumBackward", "SumBackward(grad [3], [2 3], 2)", []string{"[2 3]"}, func() { ops.SumBackward(z(3), sh(2, 3), 2) }},
		{"MeanBackward", "MeanBackward(grad [2], [2 3])", []string{"[2]", "[2 3]"}, func() { ops.MeanBackward(z(2), sh(2, 3)) }},
		{"MaxBackward", "MaxBackward(grad [3], [2 3], 1)", []string{"[3]", "[2 3]"}, func() { ops.MaxBackward(z(3), z(2, 3), 1) }},
		{"MinBackward", "MinBackward(grad [2], [2 3], 0)", []string{"[2]", "[2 3]"}, func() { ops.MinBackward(z(2), z(2, 3), 0) }},
		{"ExpBackward", "ExpBackward(grad [2], out [3])", []string{"[2]", "[3]"}, func() { ops.ExpBackward(z(2), z(3)) }},
		{"LogBackward", "LogBackward(grad [2 3], [3 2])", []string{"[2 3]", "[3 2]"}, func() { ops.LogBackward(z(2, 3), z(3, 2)) }},
		{"Log2Backward", "Log2Backward(grad [2], [3])", []string{"[2]", "[3]"}, func() { ops.Log2Backward(z(2), z(3)) }},
		{"Log10Backward", "Log10Backward(grad [2], [3])", []string{"[2]", "[3]"}, func() { ops.Log10Backward(z(2), z(3)) }},
		{"SqrtBackward", "SqrtBackward(grad [2], out [3])", []string{"[2]", "[3]"}, func() { ops.SqrtBackward(z(2), z(3)) }},
		{"AbsBackward", "AbsBackward(grad [2], [3])", []string{"[2]", "[3]"}, func() { ops.AbsBackward(z(2), z(3)) }},
		{"SinBackward", "SinBackward(grad [2], [3])", []string{"[2]", "[3]"}, func() { ops.SinBackward(z(2), z(3)) }},
		{"CosBackward", "CosBackward(grad [2], [3])", []string{"[2]", "[3]"}, func() { ops.CosBackward(z(2), z(3)) }},
		{"ClipBackward", "ClipBackward(grad [2], [3], 0, 1)", []string{"[2]", "[3]"}, func() { ops.ClipBackward(z(2), z(3), 0, 1) }},
		{"ReLUBackward", "ReLUBackward(grad [2 3], [3 2])", []string{"[2 3]", "[3 2]"}, func() { ops.ReLUBackward(z(2, 3), z(3, 2)) }},
		{"LeakyReLUBackward", "LeakyReLUBackward(grad [2], [3], 0.1)", []string{"[2]", "[3]"}, func() { ops.LeakyReLUBackward(z(2), z(3), 0.1) }},
		{"PReLUBackward", "PReLUBackward(grad [2 3], [2 3], alpha [2])", []string{"[2 3]", "[2]"}, func() { ops.PReLUBackward(z(2, 3), z(2, 3), z(2)) }},
		{"PReLUBackward", "PReLUBackward(grad [3 2], [2 3], alpha [3])", []string{"[3 2]", "[2 3]"}, func() { ops.PReLUBackward(z(3, 2), z(2, 3), z(3)) }},
		{"SigmoidBackward", "SigmoidBackward(grad [2], out [3])", []string{"[2]", "[3]"}, func() { ops.SigmoidBackward(z(2), z(3)) }},
		{"TanhBackward", "TanhBackward(grad [2], out [3])", []string{"[2]", "[3]"}, func() { ops.TanhBackward(z(2), z(3)) }},
		{"GELUBackward", "GELUBackward(grad [2], [3], false)", []string{"[2]", "[3]"}, func() { ops.GELUBackward(z(2), z(3), false) }},
		{"SoftmaxBackward", "SoftmaxBackward(grad [2 3], out [3 2], 1)", []string{"[2 3]", "[3 2]"}, func() { ops.SoftmaxBackward(z(2, 3), z(3, 2), 1) }},
		{"SoftmaxBackward", "SoftmaxBackward(grad [2 3], out [2 3], 2)", []string{"[2 3]"}, func() { ops.SoftmaxBackward(z(2, 3), z(2, 3), 2) }},
		{"LogSoftmaxBackward", "LogSoftmaxBackward(grad [2 3], out [3 2], -1)", []string{"[2 3]", "[3 2]"}, func() { ops.LogSoftmaxBackward(z(2, 3), z(3, 2), -1) }},
		{"MSEBackward", "MSEBackward(grad 1, [3], [4])", []string{"[3]", "[4]"}, func() { ops.MSEBackward(sc(1), z(3), z(4)) }},
		{"BCEBackward", "BCEBackward(grad 1, [3], [2])", []string{"[3]", "[2]"}, func() { ops.BCEBackward(sc(1), z(3), z(2)) }},
		{"BCEWithLogitsBackward", "BCEWithLogitsBackward(grad 1, [3], [2])", []string{"[3]", "[2]"}, func() { ops.BCEWithLogitsBackward(sc(1), z(3), z(2)) }},
		{"CrossEntropyBackward", "CrossEntropyBackward(grad 1, [2 3], 1 label)", []string{"[2 3]"}, func() { ops.CrossEntropyBackward(sc(1), z(2, 3), []int{0}) }},

		// Mixed dtypes.
		{"Add", "Add(float32 [2], float64 [2])", []string{"[2]"}, func() { ops.Add(f32(2), z(2)) }},
		{"Sub", "Sub(float64 [2 3], float32 [3])", []string{"[2 3]", "[3]"}, func() { ops.Sub(z(2, 3), f32(3)) }},
		{"Mul", "Mul(float32 [2], float64 [])", []string{"[2]", "[]"}, func() { ops.Mul(f32(2), z()) }},
		{"Div", "Div(float32 [2], float64 [2])", []string{"[2]"}, func() { ops.Div(f32(2), z(2)) }},
		{"Pow", "Pow(float64 [2], float32 [])", []string{"[2]", "[]"}, func() { ops.Pow(z(2), f32()) }},
		{"MatMul", "MatMul(float32 [2 3], float64 [3 4])", []string{"[2 3]", "[3 4]"}, func() { ops.MatMul(f32(2, 3), z(3, 4)) }},
		{"Concat", "Concat(0, float32 [2], float64 [3])", []string{"[2]", "[3]"}, func() { ops.Concat(0, f32(2), z(3)) }},
		{"PReLU", "PReLU(float32 [2 3], float64 alpha [3])", []string{"[2 3]", "[3]"}, func() { ops.PReLU(f32(2, 3), z(3)) }},
		{"MSE", "MSE(float32 [3], float64 [3])", []string{"[3]"}, func() { ops.MSE(f32(3), z(3)) }},
		{"BCE", "BCE(float64 [3], float32 [3])", []string{"[3]"}, func() { ops.BCE(z(3), f32(3)) }},
		{"BCEWithLogits", "BCEWithLogits(float32 [3], float64 [3])", []string{"[3]"}, func() { ops.BCEWithLogits(f32(3), z(3)) }},
		{"MulBackward", "MulBackward(float32 grad [2], float64 [2], float64 [2])", []string{"[2]"}, func() { ops.MulBackward(f32(2), z(2), z(2)) }},
		{"DivBackward", "DivBackward(float64 grad [2], float64 [2], float32 [2])", []string{"[2]"}, func() { ops.DivBackward(z(2), z(2), f32(2)) }},
		{"MatMulBackward", "MatMulBackward(float32 grad [2 4], float64 [2 3], float64 [3 4])", []string{"[2 4]", "[2 3]", "[3 4]"}, func() { ops.MatMulBackward(f32(2, 4), z(2, 3), z(3, 4)) }},
		{"MaxBackward", "MaxBackward(float32 grad [], float64 [3])", []string{"[]", "[3]"}, func() { ops.MaxBackward(f32(), z(3)) }},
		{"ExpBackward", "ExpBackward(float32 grad [3], float64 out [3])", []string{"[3]"}, func() { ops.ExpBackward(f32(3), z(3)) }},
		{"ReLUBackward", "ReLUBackward(float32 grad [3], float64 [3])", []string{"[3]"}, func() { ops.ReLUBackward(f32(3), z(3)) }},
		{"PReLUBackward", "PReLUBackward(float64 grad [3], float64 [3], float32 alpha [])", []string{"[3]", "[]"}, func() { ops.PReLUBackward(z(3), z(3), f32()) }},
		{"GELUBackward", "GELUBackward(float32 grad [3], float64 [3], true)", []string{"[3]"}, func() { ops.GELUBackward(f32(3), z(3), true) }},
		{"SoftmaxBackward", "SoftmaxBackward(float32 grad [2 3], float64 out [2 3], 1)", []string{"[2 3]"}, func() { ops.SoftmaxBackward(f32(2, 3), z(2, 3), 1) }},
		{"CrossEntropyBackward", "CrossEntropyBackward(float32 grad [], float64 [2 3])", []string{"[]", "[2 3]"}, func() { ops.CrossEntropyBackward(f32(), z(2, 3), []int{0, 1}) }},
		{"MSEBackward", "MSEBackward(float32 grad [], float64 [3], float64 [3])", []string{"[]", "[3]"}, func() { ops.MSEBackward(f32(), z(3), z(3)) }},
		{"BCEBackward", "BCEBackward(float64 grad [], float32 [3], float64 [3])", []string{"[3]"}, func() { ops.BCEBackward(sc(1), f32(3), z(3)) }},
		{"BCEWithLogitsBackward", "BCEWithLogitsBackward(float64 grad [], float64 [3], float32 [3])", []string{"[3]"}, func() { ops.BCEWithLogitsBackward(sc(1), z(3), f32(3)) }},
	}
	for _, c := range cases {
		expectError(t, c.desc, "ops."+c.op+":", c.mentions, c.fn)
	}
}

// ---- every op: inputs never modified; float32 agrees with float64 ----

// opCase runs one op's forward and backward on inputs drawn by gen
// (float64, in the op's domain) and returns every result.
type opCase struct {
	name string
	gen  func(rng *rand.Rand) []*tt
	run  func(in []*tt) []*tt
}

func binaryCase(name string, genA, genB func(*rand.Rand, ...int) *tt, f func(a, b *tt) *tt, back func(g, a, b *tt) (*tt, *tt)) opCase {
	return opCase{name,
		func(rng *rand.Rand) []*tt { return in(genA(rng, 2, 3, 4), genB(rng, 3, 1), randN(rng, 1, 2, 3, 4)) },
		func(x []*tt) []*tt { ga, gb := back(x[2], x[0], x[1]); return in(f(x[0], x[1]), ga, gb) }}
}

func unaryCase(name string, gen func(*rand.Rand, ...int) *tt, f func(x *tt) *tt, back func(g, x *tt) *tt) opCase {
	return opCase{name,
		func(rng *rand.Rand) []*tt { return in(gen(rng, 3, 4), randN(rng, 1, 3, 4)) },
		func(x []*tt) []*tt { return in(f(x[0]), back(x[1], x[0])) }}
}

// unaryOutCase passes the forward output, computed in gen, to backward.
func unaryOutCase(name string, gen func(*rand.Rand, ...int) *tt, f func(x *tt) *tt, back func(g, out *tt) *tt) opCase {
	return opCase{name,
		func(rng *rand.Rand) []*tt { x := gen(rng, 3, 4); return in(x, randN(rng, 1, 3, 4), f(x)) },
		func(x []*tt) []*tt { return in(f(x[0]), back(x[1], x[2])) }}
}

func allOpCases() []opCase {
	pos := uniform(0.2, 4)
	labels := []int{2, 0, 1, 2}
	cases := []opCase{
		binaryCase("Add", normal(1), normal(1), ops.Add, func(g, a, b *tt) (*tt, *tt) { return ops.AddBackward(g, a.Shape(), b.Shape()) }),
		binaryCase("Sub", normal(1), normal(1), ops.Sub, func(g, a, b *tt) (*tt, *tt) { return ops.SubBackward(g, a.Shape(), b.Shape()) }),
		binaryCase("Mul", normal(1), normal(1), ops.Mul, ops.MulBackward),
		binaryCase("Div", normal(1), func(rng *rand.Rand, s ...int) *tt { return randSignedU(rng, 0.5, 2, s...) }, ops.Div, ops.DivBackward),
		binaryCase("Pow", uniform(0.5, 2), uniform(-2, 2.5), ops.Pow, ops.PowBackward),
		{"MatMul",
			func(rng *rand.Rand) []*tt {
				return in(randN(rng, 1, 2, 1, 3, 4), randN(rng, 1, 5, 4, 2), randN(rng, 1, 2, 5, 3, 2))
			},
			func(x []*tt) []*tt {
				ga, gb := ops.MatMulBackward(x[2], x[0], x[1])
				return in(ops.MatMul(x[0], x[1]), ga, gb)
			}},
		{"MatMul 2-D",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 7, 33), randN(rng, 1, 33, 9), randN(rng, 1, 7, 9)) },
			func(x []*tt) []*tt {
				ga, gb := ops.MatMulBackward(x[2], x[0], x[1])
				return in(ops.MatMul(x[0], x[1]), ga, gb)
			}},
		{"Transpose",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 2, 3, 4), randN(rng, 1, 4, 3, 2)) },
			func(x []*tt) []*tt { return in(ops.Transpose(x[0]), ops.TransposeBackward(x[1])) }},
		{"Reshape",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 2, 3, 4), randN(rng, 1, 4, 6)) },
			func(x []*tt) []*tt { return in(ops.Reshape(x[0], 4, -1), ops.ReshapeBackward(x[1], x[0].Shape())) }},
		{"Concat",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 2, 3), randN(rng, 1, 2, 2), randN(rng, 1, 2, 5)) },
			func(x []*tt) []*tt {
				return append(in(ops.Concat(-1, x[0], x[1])), ops.ConcatBackward(x[2], -1, x[0].Shape(), x[1].Shape())...)
			}},
		{"Sum",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 2, 3, 4), randN(rng, 1, 3)) },
			func(x []*tt) []*tt { return in(ops.Sum(x[0], 0, -1), ops.SumBackward(x[1], x[0].Shape(), 0, -1)) }},
		{"Mean",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 2, 3, 4), randN(rng, 1, 3)) },
			func(x []*tt) []*tt { return in(ops.Mean(x[0], 0, -1), ops.MeanBackward(x[1], x[0].Shape(), 0, -1)) }},
		{"Max",
			func(rng *rand.Rand) []*tt { return in(randDistinct(rng, 2, 3, 4), randN(rng, 1, 2, 4)) },
			func(x []*tt) []*tt { return in(ops.Max(x[0], 1), ops.MaxBackward(x[1], x[0], 1)) }},
		{"Min",
			func(rng *rand.Rand) []*tt { return in(randDistinct(rng, 2, 3, 4), randN(rng, 1, 3, 4)) },
			func(x []*tt) []*tt { return in(ops.Min(x[0], -3), ops.MinBackward(x[1], x[0], -3)) }},
		unaryOutCase("Exp", normal(1), ops.Exp, ops.ExpBackward),
		unaryCase("Log", pos, ops.Log, ops.LogBackward),
		unaryCase("Log2", pos, ops.Log2, ops.Log2Backward),
		unaryCase("Log10", pos, ops.Log10, ops.Log10Backward),
		unaryOutCase("Sqrt", pos, ops.Sqrt, ops.SqrtBackward),
		unaryCase("Abs", awayFrom(1, 0), ops.Abs, ops.AbsBackward),
		unaryCase("Sin", normal(2), ops.Sin, ops.SinBackward),
		unaryCase("Cos", normal(2), ops.Cos, ops.CosBackward),
		unaryCase("Clip", awayFrom(1, -0.5, 0.5), func(x *tt) *tt { return ops.Clip(x, -0.5, 0.5) },
			func(g, x *tt) *tt { return ops.ClipBackward(g, x, -0.5, 0.5) }),
		unaryCase("ReLU", awayFrom(1, 0), ops.ReLU, ops.ReLUBackward),
		unaryCase("LeakyReLU", awayFrom(1, 0), func(x *tt) *tt { return ops.LeakyReLU(x, 0.1) },
			func(g, x *tt) *tt { return ops.LeakyReLUBackward(g, x, 0.1) }),
		{"PReLU",
			func(rng *rand.Rand) []*tt {
				return in(randAway(rng, 1, 0.01, []float64{0}, 4, 3), randU(rng, 0.05, 0.5, 3), randN(rng, 1, 4, 3))
			},
			func(x []*tt) []*tt {
				gx, ga := ops.PReLUBackward(x[2], x[0], x[1])
				return in(ops.PReLU(x[0], x[1]), gx, ga)
			}},
		unaryOutCase("Sigmoid", normal(3), ops.Sigmoid, ops.SigmoidBackward),
		unaryOutCase("Tanh", normal(2), ops.Tanh, ops.TanhBackward),
		unaryCase("GELU exact", normal(2), func(x *tt) *tt { return ops.GELU(x, false) },
			func(g, x *tt) *tt { return ops.GELUBackward(g, x, false) }),
		unaryCase("GELU tanh", normal(2), func(x *tt) *tt { return ops.GELU(x, true) },
			func(g, x *tt) *tt { return ops.GELUBackward(g, x, true) }),
		{"Softmax",
			func(rng *rand.Rand) []*tt {
				x := randN(rng, 2, 2, 3, 4)
				return in(x, randN(rng, 1, 2, 3, 4), ops.Softmax(x, 1))
			},
			func(x []*tt) []*tt { return in(ops.Softmax(x[0], 1), ops.SoftmaxBackward(x[1], x[2], 1)) }},
		{"LogSoftmax",
			func(rng *rand.Rand) []*tt {
				x := randN(rng, 2, 2, 3, 4)
				return in(x, randN(rng, 1, 2, 3, 4), ops.LogSoftmax(x, -1))
			},
			func(x []*tt) []*tt { return in(ops.LogSoftmax(x[0], -1), ops.LogSoftmaxBackward(x[1], x[2], -1)) }},
		{"CrossEntropy",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 2, 4, 3), randU(rng, 0.5, 2)) },
			func(x []*tt) []*tt {
				return in(ops.CrossEntropy(x[0], labels), ops.CrossEntropyBackward(x[1], x[0], labels))
			}},
		{"MSE",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 3, 4), randN(rng, 1, 3, 4), randU(rng, 0.5, 2)) },
			func(x []*tt) []*tt { return in(ops.MSE(x[0], x[1]), ops.MSEBackward(x[2], x[0], x[1])) }},
		{"BCE",
			func(rng *rand.Rand) []*tt {
				return in(randU(rng, 0.05, 0.95, 3, 4), randU(rng, 0, 1, 3, 4), randU(rng, 0.5, 2))
			},
			func(x []*tt) []*tt { return in(ops.BCE(x[0], x[1]), ops.BCEBackward(x[2], x[0], x[1])) }},
		{"BCEWithLogits",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 3, 3, 4), randU(rng, 0, 1, 3, 4), randU(rng, 0.5, 2)) },
			func(x []*tt) []*tt {
				return in(ops.BCEWithLogits(x[0], x[1]), ops.BCEWithLogitsBackward(x[2], x[0], x[1]))
			}},
		// max pooling on distinct values: no ties for rounding to move the argmax
		{"MaxPool2d",
			func(rng *rand.Rand) []*tt { return in(randDistinct(rng, 2, 3, 5, 6), randN(rng, 1, 2, 3, 2, 3)) },
			func(x []*tt) []*tt { return in(ops.MaxPool2d(x[0], 2, 2), ops.MaxPool2dBackward(x[1], x[0], 2, 2)) }},
		{"MaxPool2d overlapping",
			func(rng *rand.Rand) []*tt { return in(randDistinct(rng, 2, 2, 5, 4), randN(rng, 1, 2, 2, 3, 2)) },
			func(x []*tt) []*tt { return in(ops.MaxPool2d(x[0], 3, 1), ops.MaxPool2dBackward(x[1], x[0], 3, 1)) }},
		{"AvgPool2d",
			func(rng *rand.Rand) []*tt { return in(randN(rng, 1, 2, 3, 5, 6), randN(rng, 1, 2, 3, 3, 4)) },
			func(x []*tt) []*tt {
				return in(ops.AvgPool2d(x[0], 3, 1), ops.AvgPool2dBackward(x[1], x[0].Shape(), 3, 1))
			}},
		{"BatchNorm [N C H W]",
			func(rng *rand.Rand) []*tt {
				return in(randN(rng, 2, 3, 4, 5, 6), randSignedU(rng, 0.5, 2, 4), randN(rng, 1, 4), randN(rng, 1, 3, 4, 5, 6))
			},
			func(x []*tt) []*tt {
				out, mean, invstd := ops.BatchNorm(x[0], x[1], x[2], 1e-5)
				gx, gg, gb := ops.BatchNormBackward(x[3], x[0], x[1], mean, invstd)
				return in(out, mean, invstd, gx, gg, gb)
			}},
		{"BatchNorm [N C]",
			func(rng *rand.Rand) []*tt {
				return in(randN(rng, 2, 16, 3), randSignedU(rng, 0.5, 2, 3), randN(rng, 1, 3), randN(rng, 1, 16, 3))
			},
			func(x []*tt) []*tt {
				out, mean, invstd := ops.BatchNorm(x[0], x[1], x[2], 1e-5)
				gx, gg, gb := ops.BatchNormBackward(x[3], x[0], x[1], mean, invstd)
				return in(out, mean, invstd, gx, gg, gb)
			}},
	}
	return cases
}

var sameBits = opstest.SameBits

func TestEdgeInputsNeverModified(t *testing.T) {
	for i, c := range allOpCases() {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			var inputs []*tt
			for _, x := range c.gen(newRNG(uint64(300 + i))) {
				inputs = append(inputs, x.As(dt))
			}
			snap := make([]*tt, len(inputs))
			for j, x := range inputs {
				snap[j] = x.Clone()
			}
			desc := fmt.Sprintf("%s (%v)", c.name, dt)
			safely(t, desc, func() {
				c.run(inputs)
				for j := range inputs {
					if !sameBits(inputs[j], snap[j]) {
						t.Errorf("%s: argument %d %v changed: got %v, want %v", desc, j, snap[j].Shape(), inputs[j].Float64s(), snap[j].Float64s())
					}
				}
			})
		}
	}
}

func TestEdgeFloat32MatchesFloat64(t *testing.T) {
	const rtol, atol = 2e-4, 1e-6
	for i, c := range allOpCases() {
		var in32, in64 []*tt
		for _, x := range c.gen(newRNG(uint64(400 + i))) {
			x32 := x.As(tensor.Float32)
			in32 = append(in32, x32)
			in64 = append(in64, x32.As(tensor.Float64)) // the same values, exactly
		}
		safely(t, c.name, func() {
			out32, out64 := c.run(in32), c.run(in64)
			if len(out32) != len(out64) {
				t.Fatalf("%s: %d float32 results, %d float64 results", c.name, len(out32), len(out64))
			}
			for k := range out32 {
				desc := fmt.Sprintf("%s result %d", c.name, k)
				if out32[k].DType() != tensor.Float32 || out64[k].DType() != tensor.Float64 {
					t.Errorf("%s: got dtypes %v and %v, want float32 and float64", desc, out32[k].DType(), out64[k].DType())
				}
				if !tensor.EqualShapes(out32[k].Shape(), out64[k].Shape()) {
					t.Errorf("%s: got shapes %v (float32) and %v (float64)", desc, out32[k].Shape(), out64[k].Shape())
					continue
				}
				v32, v64 := out32[k].Float64s(), out64[k].Float64s()
				worst, wd := -1, 0.0
				for j := range v32 {
					d := math.Abs(v32[j] - v64[j])
					if !(d <= atol+rtol*math.Abs(v64[j])) && (worst < 0 || d > wd || math.IsNaN(d)) {
						worst, wd = j, d
					}
				}
				if worst >= 0 {
					t.Errorf("%s at element %d: got %v (float32), want %v (float64) within rtol %g",
						desc, worst, v32[worst], v64[worst], rtol)
				}
			}
		})
	}
}

// ---- larger sizes: GEMM against a reference, long reductions in float32 ----

// refMatMulBound multiplies a [m,k] @ b [k,n] in float64 and also returns
// sum_p |a_ip b_pj|, the scale of each element's rounding error.
func refMatMulBound(a, b []float64, m, k, n int) (c, bound []float64) {
	c, bound = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			for p := range k {
				c[i*n+j] += a[i*k+p] * b[p*n+j]
				bound[i*n+j] += math.Abs(a[i*k+p] * b[p*n+j])
			}
		}
	}
	return c, bound
}

func transpose2(a []float64, m, n int) []float64 {
	t := make([]float64, len(a))
	for i := range m {
		for j := range n {
			t[j*m+i] = a[i*n+j]
		}
	}
	return t
}

// TestEdgeMatMulAgainstReference checks forward and both gradients of 2-D
// MatMul at sizes around typical vector and block widths, in both dtypes,
// against a float64 triple loop: |got-want| <= rtol * sum_p |a_ip b_pj|.
func TestEdgeMatMulAgainstReference(t *testing.T) {
	rng := newRNG(500)
	sizes := [][3]int{{1, 1, 1}, {1, 7, 1}, {3, 5, 7}, {8, 8, 8}, {4, 16, 17}, {17, 33, 15}, {31, 64, 65}, {64, 1, 64}, {65, 129, 33}, {128, 96, 130}, {1, 300, 9}, {9, 300, 1}}
	for _, s := range sizes {
		m, k, n := s[0], s[1], s[2]
		a, b, g := randN(rng, 1, m, k), randN(rng, 1, k, n), randN(rng, 1, m, n)
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			rtol := 1e-13
			if dt == tensor.Float32 {
				rtol = 2e-5
			}
			a2, b2, g2 := a.As(dt), b.As(dt), g.As(dt)
			av, bv, gv := a2.Float64s(), b2.Float64s(), g2.Float64s()
			want, bound := refMatMulBound(av, bv, m, k, n)
			wantGA, boundGA := refMatMulBound(gv, transpose2(bv, k, n), m, n, k)
			wantGB, boundGB := refMatMulBound(transpose2(av, m, k), gv, k, m, n)
			desc := fmt.Sprintf("MatMul(%v [%d %d], [%d %d])", dt, m, k, k, n)
			safely(t, desc, func() {
				c := ops.MatMul(a2, b2)
				ga, gb := ops.MatMulBackward(g2, a2, b2)
				for _, r := range []struct {
					what       string
					got        *tt
					shape      []int
					want, scal []float64
				}{{"forward", c, sh(m, n), want, bound}, {"ga", ga, sh(m, k), wantGA, boundGA}, {"gb", gb, sh(k, n), wantGB, boundGB}} {
					if r.got.DType() != dt || !tensor.EqualShapes(r.got.Shape(), r.shape) {
						t.Errorf("%s %s: got %v %v, want %v %v", desc, r.what, r.got.DType(), r.got.Shape(), dt, r.shape)
						continue
					}
					for i, v := range r.got.Float64s() {
						if math.Abs(v-r.want[i]) > rtol*r.scal[i]+1e-300 {
							t.Errorf("%s %s element %d: got %v, want %v (tolerance %.3g)", desc, r.what, i, v, r.want[i], rtol*r.scal[i])
							break
						}
					}
				}
			})
		}
	}
}

// TestEdgeLongReductionsFloat32 compares float32 with float64 on long axes,
// where a plain float32 running sum drifts: PyTorch's cascade summation
// keeps float32 sums and means within rtol 2e-4 of float64.
func TestEdgeLongReductionsFloat32(t *testing.T) {
	const rtol, atol = 2e-4, 1e-6
	rng := newRNG(600)
	n := 1 << 22
	x64 := randU(rng, 0, 1, n)
	x32 := x64.As(tensor.Float32)
	x64 = x32.As(tensor.Float64)
	t2 := randU(rng, 0, 1, n).As(tensor.Float32)
	t64 := t2.As(tensor.Float64)
	p32 := randU(rng, 0.05, 0.95, n).As(tensor.Float32)
	p64 := p32.As(tensor.Float64)
	rows := x32.Reshape(4, n/4)
	rows64 := x64.Reshape(4, n/4)
	labels := []int{0, 1, 2, 3}
	for _, c := range []struct {
		name     string
		f32, f64 func() *tt
	}{
		{"Sum(4M U[0,1))", func() *tt { return ops.Sum(x32) }, func() *tt { return ops.Sum(x64) }},
		{"Mean(4M U[0,1))", func() *tt { return ops.Mean(x32) }, func() *tt { return ops.Mean(x64) }},
		{"Sum([4 1M], axis 1)", func() *tt { return ops.Sum(rows, 1) }, func() *tt { return ops.Sum(rows64, 1) }},
		{"Mean([4 1M], axis -1)", func() *tt { return ops.Mean(rows, -1) }, func() *tt { return ops.Mean(rows64, -1) }},
		{"LogSoftmax([4 1M], axis 1)[:, :8]", func() *tt { return head8(ops.LogSoftmax(rows, 1)) }, func() *tt { return head8(ops.LogSoftmax(rows64, 1)) }},
		{"CrossEntropy([4 1M])", func() *tt { return ops.CrossEntropy(rows, labels) }, func() *tt { return ops.CrossEntropy(rows64, labels) }},
		{"MSE(4M)", func() *tt { return ops.MSE(x32, t2) }, func() *tt { return ops.MSE(x64, t64) }},
		{"BCE(4M)", func() *tt { return ops.BCE(p32, t2) }, func() *tt { return ops.BCE(p64, t64) }},
		{"BCEWithLogits(4M)", func() *tt { return ops.BCEWithLogits(x32, t2) }, func() *tt { return ops.BCEWithLogits(x64, t64) }},
	} {
		safely(t, c.name, func() {
			g32, g64 := c.f32().Float64s(), c.f64().Float64s()
			for i := range g32 {
				if !(math.Abs(g32[i]-g64[i]) <= atol+rtol*math.Abs(g64[i])) {
					t.Errorf("%s element %d: got %v (float32), want %v (float64) within rtol %g", c.name, i, g32[i], g64[i], rtol)
					break
				}
			}
		})
	}
}

// TestEdgeLongDotFloat32: a float32 MatMul with a long inner axis (K = 4M,
// U[0,1) operands) agrees with float64 within rtol 2e-4, as a BLAS sdot/sgemm
// with vector-lane partial sums does (a single running float32 sum per output
// drifts by ~2e-3 at this K; 1e-4 at K = 1M; fine at ordinary K, see
// TestEdgeMatMulAgainstReference).
func TestEdgeLongDotFloat32(t *testing.T) {
	const rtol = 2e-4
	rng := newRNG(650)
	n := 1 << 22
	a32, b32 := randU(rng, 0, 1, 1, n).As(tensor.Float32), randU(rng, 0, 1, n).As(tensor.Float32)
	a2, b2 := randU(rng, 0, 1, 2, n).As(tensor.Float32), randU(rng, 0, 1, n, 2).As(tensor.Float32)
	for _, c := range []struct {
		name string
		a, b *tt
	}{{"MatMul(U[0,1) [1 4M], U[0,1) [4M])", a32, b32}, {"MatMul(U[0,1) [2 4M], U[0,1) [4M 2])", a2, b2}} {
		safely(t, c.name, func() {
			g32 := ops.MatMul(c.a, c.b).Float64s()
			g64 := ops.MatMul(c.a.As(tensor.Float64), c.b.As(tensor.Float64)).Float64s()
			for i := range g32 {
				if !(math.Abs(g32[i]-g64[i]) <= rtol*math.Abs(g64[i])) {
					t.Errorf("%s element %d: got %v (float32), want %v (float64) within rtol %g (relative error %.3g)",
						c.name, i, g32[i], g64[i], rtol, math.Abs(g32[i]-g64[i])/math.Abs(g64[i]))
				}
			}
		})
	}
}

// head8 returns the first 8 elements of each row of a 2-D tensor.
func head8(x *tt) *tt {
	r, c := x.Shape()[0], x.Shape()[1]
	v := x.Float64s()
	out := make([]float64, 0, r*8)
	for i := range r {
		out = append(out, v[i*c:i*c+8]...)
	}
	return mk(sh(r, 8), out...)
}

// TestEdgeDeterministicAcrossGOMAXPROCS: runs are bit-for-bit reproducible
// whatever GOMAXPROCS (the README on determinism), so no kernel may let the
// number of threads change the order of a floating-point sum.
func TestEdgeDeterministicAcrossGOMAXPROCS(t *testing.T) {
	rng := newRNG(700)
	a32 := randN(rng, 1, 2, 300, 257).As(tensor.Float32)
	b32 := randN(rng, 1, 257, 190).As(tensor.Float32)
	g32 := randN(rng, 1, 2, 300, 190).As(tensor.Float32)
	big := randN(rng, 1, 1<<20).As(tensor.Float32)
	logits := randN(rng, 1, 512, 1000).As(tensor.Float32)
	labels := randLabels(rng, 512, 1000)
	run := func() []*tt {
		ga, gb := ops.MatMulBackward(g32, a32, b32)
		return in(ops.MatMul(a32, b32), ga, gb, ops.Sum(big), ops.Mean(big),
			ops.Sum(a32, 1), ops.CrossEntropy(logits, labels), ops.CrossEntropyBackward(tensor.Full(tensor.Float32, 1), logits, labels),
			ops.Softmax(logits, 0))
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	var want []*tt
	safely(t, "GOMAXPROCS=1", func() { want = run() })
	for _, procs := range []int{2, 3, 8, 32} {
		runtime.GOMAXPROCS(procs)
		safely(t, fmt.Sprintf("GOMAXPROCS=%d", procs), func() {
			got := run()
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Errorf("result %d with GOMAXPROCS=%d differs from GOMAXPROCS=1", i, procs)
				}
			}
		})
	}
}

// ---- NaN and -Inf ----

// PyTorch propagates NaN through activations (relu and clamp are built on
// clamp_min/clamp, which propagate NaN), so a diverging run shows as a
// non-finite loss instead of being silently zeroed.
func TestEdgeNaNPropagates(t *testing.T) {
	x := vec(nan)
	for _, c := range []struct {
		name string
		f    func(*tt) *tt
	}{
		{"ReLU", ops.ReLU},
		{"LeakyReLU(0.1)", func(x *tt) *tt { return ops.LeakyReLU(x, 0.1) }},
		{"PReLU(0.25)", func(x *tt) *tt { return ops.PReLU(x, sc(0.25)) }},
		{"Clip(-1, 1)", func(x *tt) *tt { return ops.Clip(x, -1, 1) }},
		{"Abs", ops.Abs},
		{"Sigmoid", ops.Sigmoid},
		{"Tanh", ops.Tanh},
		{"GELU(exact)", func(x *tt) *tt { return ops.GELU(x, false) }},
		{"GELU(tanh)", func(x *tt) *tt { return ops.GELU(x, true) }},
		{"Exp", ops.Exp},
		{"Softmax", func(x *tt) *tt { return ops.Softmax(ops.Concat(0, x, vec(1)), 0) }},
		{"LogSoftmax", func(x *tt) *tt { return ops.LogSoftmax(ops.Concat(0, x, vec(1)), 0) }},
		{"Sum", func(x *tt) *tt { return ops.Sum(ops.Concat(0, x, vec(1))) }},
		{"MSE", func(x *tt) *tt { return ops.MSE(x, vec(0)) }},
		{"BCEWithLogits", func(x *tt) *tt { return ops.BCEWithLogits(x, vec(1)) }},
		{"CrossEntropy", func(x *tt) *tt { return ops.CrossEntropy(ops.Concat(0, x, vec(1)).Reshape(1, 2), []int{1}) }},
	} {
		desc := c.name + "([NaN])"
		safely(t, desc, func() {
			v := c.f(x).Float64s()
			if len(v) == 0 || !math.IsNaN(v[0]) {
				t.Errorf("%s: got %v, want NaN first", desc, v)
			}
		})
	}
}

func TestEdgeSoftmaxNegInfMask(t *testing.T) {
	x := vec(ninf, 0, ninf, math.Ln2)
	safely(t, "Softmax([-Inf 0 -Inf ln2])", func() {
		out := ops.Softmax(x, 0)
		checkT(t, "Softmax([-Inf 0 -Inf ln2])", out, sh(4), []float64{0, 1.0 / 3, 0, 2.0 / 3}, 1e-15)
		checkT(t, "SoftmaxBackward([1 2 3 4], Softmax([-Inf 0 -Inf ln2]))", ops.SoftmaxBackward(vec(1, 2, 3, 4), out, 0), sh(4),
			[]float64{0, (2 - (2.0/3 + 8.0/3)) / 3, 0, 2 * (4 - (2.0/3 + 8.0/3)) / 3}, 1e-15)
	})
	safely(t, "LogSoftmax([-Inf 0 -Inf ln2])", func() {
		out := ops.LogSoftmax(x, 0)
		checkT(t, "LogSoftmax([-Inf 0 -Inf ln2])", out, sh(4), []float64{ninf, -math.Log(3), ninf, math.Ln2 - math.Log(3)}, 1e-15)
		checkT(t, "LogSoftmaxBackward([1 2 3 4], LogSoftmax([-Inf 0 -Inf ln2]))", ops.LogSoftmaxBackward(vec(1, 2, 3, 4), out, 0), sh(4),
			[]float64{1, 2 - 10.0/3, 3, 4 - 20.0/3}, 1e-14)
	})
}

// ---- the same tensor passed twice ----

func TestEdgeAliasedArguments(t *testing.T) {
	a := vec(1, 2, 3)
	sq := arange(2, 2)
	safely(t, "aliased", func() {
		checkT(t, "Add(a, a), a=[1 2 3]", ops.Add(a, a), sh(3), []float64{2, 4, 6}, 0)
		checkT(t, "Mul(a, a), a=[1 2 3]", ops.Mul(a, a), sh(3), []float64{1, 4, 9}, 0)
		ga, gb := ops.MulBackward(a, a, a)
		checkT(t, "MulBackward(a, a, a) ga, a=[1 2 3]", ga, sh(3), []float64{1, 4, 9}, 0)
		checkT(t, "MulBackward(a, a, a) gb, a=[1 2 3]", gb, sh(3), []float64{1, 4, 9}, 0)
		checkT(t, "MatMul(m, m), m=[[1 2] [3 4]]", ops.MatMul(sq, sq), sh(2, 2), []float64{7, 10, 15, 22}, 0)
		ga, gb = ops.MatMulBackward(sq, sq, sq)
		checkT(t, "MatMulBackward(m, m, m) ga = m @ mᵀ", ga, sh(2, 2), []float64{5, 11, 11, 25}, 0)
		checkT(t, "MatMulBackward(m, m, m) gb = mᵀ @ m", gb, sh(2, 2), []float64{10, 14, 14, 20}, 0)
		checkT(t, "Concat(0, a, a)", ops.Concat(0, a, a), sh(6), []float64{1, 2, 3, 1, 2, 3}, 0)
		checkT(t, "ReLUBackward(a, a)", ops.ReLUBackward(a, a), sh(3), []float64{1, 2, 3}, 0)
	})
	if !sameBits(a, vec(1, 2, 3)) || !sameBits(sq, arange(2, 2)) {
		t.Errorf("aliased calls modified their arguments: a = %v, m = %v", a.Float64s(), sq.Float64s())
	}
}

// torch.clamp documents that min > max sets every element to max; its
// backward, grad * (lo <= x <= hi), is then zero everywhere.
func TestEdgeClipEmptyRange(t *testing.T) {
	x := vec(-1, 0.5, 2)
	safely(t, "Clip(x, 1, 0)", func() {
		checkT(t, "Clip([-1 0.5 2], 1, 0)", ops.Clip(x, 1, 0), sh(3), []float64{0, 0, 0}, 0)
		checkT(t, "ClipBackward(grad 1, [-1 0.5 2], 1, 0)", ops.ClipBackward(vec(1, 1, 1), x, 1, 0), sh(3), []float64{0, 0, 0}, 0)
	})
}
