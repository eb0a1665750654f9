package optim

import (
	"math"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

var (
	_ Optimizer = (*SGD)(nil)
	_ Optimizer = (*Adam)(nil)
	_ Schedule  = Constant{}
	_ Schedule  = StepDecay{}
	_ Schedule  = Cosine{}
)

var dtypes = []tensor.DType{tensor.Float32, tensor.Float64}

// newParam returns a Param of dtype dt holding w, with a zero gradient.
func newParam(name string, dt tensor.DType, w ...float64) Param {
	return Param{Name: name, Value: tensor.FromFloat64s(dt, w, len(w)), Grad: tensor.Zeros(dt, len(w))}
}

// run sets the gradient of a single parameter to grads[k] and steps with lrs[k],
// returning the weights after each step.
func run(t *testing.T, opt Optimizer, p Param, grads [][]float64, lrs []float64) [][]float64 {
	t.Helper()
	var out [][]float64
	for k, g := range grads {
		for i, v := range g {
			p.Grad.Set(v, i)
		}
		if err := opt.Step([]Param{p}, lrs[k]); err != nil {
			t.Fatalf("step %d: %v", k+1, err)
		}
		out = append(out, p.Value.Float64s())
	}
	return out
}

// tol is the relative tolerance for comparing dt results against float64 formulas.
func tol(dt tensor.DType) float64 {
	if dt == tensor.Float32 {
		return 2e-6
	}
	return 1e-13
}

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(1, math.Abs(want))
}

// checkSeq compares weights after each step against want, element by element.
func checkSeq(t *testing.T, got, want [][]float64, rel float64, inputs string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d steps, want %d", inputs, len(got), len(want))
	}
	for k := range want {
		for i := range want[k] {
			if !near(got[k][i], want[k][i], rel) {
				t.Errorf("%s: step %d element %d: got %v, want %v", inputs, k+1, i, got[k][i], want[k][i])
			}
		}
	}
}

// checkBits32 compares float32 weights bit for bit.
func checkBits32(t *testing.T, got [][]float64, want [][]float32, inputs string) {
	t.Helper()
	for k := range want {
		for i := range want[k] {
			if g := float32(got[k][i]); math.Float32bits(g) != math.Float32bits(want[k][i]) {
				t.Errorf("%s: step %d element %d: got %.9g, want %.9g (bit for bit)", inputs, k+1, i, g, want[k][i])
			}
		}
	}
}

func wantErr(t *testing.T, err error, substr, inputs string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got nil error, want one containing %q", inputs, substr)
		return
	}
	if !strings.HasPrefix(err.Error(), "optim: ") || !strings.Contains(err.Error(), substr) {
		t.Errorf("%s: got error %q, want one starting \"optim: \" and containing %q", inputs, err, substr)
	}
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: did not panic", name)
		}
	}()
	f()
}

// These gradient and learning-rate sequences are shared with the float32 golden
// values, which were computed independently by emulating PyTorch's CPU kernels in
// float32 (every operation rounded to float32) from the text of torch/optim/sgd.py,
// torch/optim/adam.py (_single_tensor_*) and ATen's add, lerp, addcmul and addcdiv,
// by testdata/pytorch_float32_emulation.py.
var (
	goldenGrads = [][]float64{{0.1, -0.2}, {0.3, 0.05}, {-0.4, 0.25}}
	goldenLRs   = []float64{0.1, 0.05, 0.025}
)

func TestZeroGrad(t *testing.T) {
	a := newParam("a", tensor.Float32, 1, 2)
	b := newParam("b", tensor.Float64, 3)
	a.Grad.Fill(5)
	b.Grad.Fill(-7)
	nilGrad := Param{Name: "nil", Value: tensor.Zeros(tensor.Float32, 1)}
	ZeroGrad([]Param{a, b, nilGrad})
	for _, p := range []Param{a, b} {
		for i, v := range p.Grad.Float64s() {
			if v != 0 {
				t.Errorf("ZeroGrad: %s.Grad[%d]: got %v, want 0", p.Name, i, v)
			}
		}
		if p.Value.At(0) == 0 {
			t.Errorf("ZeroGrad: %s.Value changed", p.Name)
		}
	}
}

func TestConfigAccessors(t *testing.T) {
	sc := SGDConfig{Momentum: 0.9, Nesterov: true, WeightDecay: 0.1}
	s, _ := NewSGD(sc)
	if got := s.Config(); got != sc {
		t.Errorf("NewSGD(%+v).Config(): got %+v, want %+v", sc, got, sc)
	}
	ac := AdamConfig{Betas: [2]float64{0.8, 0.9}, Eps: 1e-6, WeightDecay: 0.01}
	a, _ := NewAdamW(ac)
	if got := a.Config(); got != ac {
		t.Errorf("NewAdamW(%+v).Config(): got %+v, want %+v", ac, got, ac)
	}
}
