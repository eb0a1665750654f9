package optim

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// refSGD is the algorithm of the torch.optim.SGD documentation (dampening 0), in
// float64, written independently of sgdLoop.
func refSGD(cfg SGDConfig, w0 []float64, grads [][]float64, lrs []float64) [][]float64 {
	theta := append([]float64(nil), w0...)
	b := make([]float64, len(w0))
	var out [][]float64
	for t, grad := range grads {
		for i := range theta {
			g := grad[i] + cfg.WeightDecay*theta[i]
			if cfg.Momentum != 0 {
				if t > 0 {
					b[i] = cfg.Momentum*b[i] + g
				} else {
					b[i] = g
				}
				if cfg.Nesterov {
					g += cfg.Momentum * b[i]
				} else {
					g = b[i]
				}
			}
			theta[i] -= lrs[t] * g
		}
		out = append(out, append([]float64(nil), theta...))
	}
	return out
}

func repeat(g []float64, n int) [][]float64 {
	var out [][]float64
	for range n {
		out = append(out, g)
	}
	return out
}

func constLRs(lr float64, n int) []float64 {
	var out []float64
	for range n {
		out = append(out, lr)
	}
	return out
}

// TestSGDHandComputed checks sequences worked out by hand.
func TestSGDHandComputed(t *testing.T) {
	cases := []struct {
		name  string
		cfg   SGDConfig
		w0    []float64
		grad  []float64 // the same every step
		lr    float64
		wants [][]float64
	}{
		// w -= 0.1*g: 1 -> 0.95 -> 0.9 -> 0.85, -2 -> -1.9 -> -1.8 -> -1.7.
		{"plain", SGDConfig{}, []float64{1, -2}, []float64{0.5, -1}, 0.1,
			[][]float64{{0.95, -1.9}, {0.9, -1.8}, {0.85, -1.7}}},
		// buf = 1, 1.9, 2.71, 3.439; w = 1-0.1, -0.19, -0.271, -0.3439.
		{"momentum", SGDConfig{Momentum: 0.9}, []float64{1}, []float64{1}, 0.1,
			[][]float64{{0.9}, {0.71}, {0.439}, {0.0951}}},
		// buf = 1, 1.9, 2.71; g' = 1+0.9*buf = 1.9, 2.71, 3.439; w = 1-0.19-0.271-0.3439.
		{"nesterov", SGDConfig{Momentum: 0.9, Nesterov: true}, []float64{1}, []float64{1}, 0.1,
			[][]float64{{0.81}, {0.539}, {0.1951}}},
		// zero gradient: g' = 0.1*w, w *= 1-0.5*0.1 = 0.95 each step.
		{"weight decay", SGDConfig{WeightDecay: 0.1}, []float64{1, -4}, []float64{0, 0}, 0.5,
			[][]float64{{0.95, -3.8}, {0.9025, -3.61}, {0.857375, -3.4295}}},
	}
	for _, c := range cases {
		for _, dt := range dtypes {
			inputs := fmt.Sprintf("%s %v cfg=%+v w0=%v grad=%v lr=%v", c.name, dt, c.cfg, c.w0, c.grad, c.lr)
			opt, err := NewSGD(c.cfg)
			if err != nil {
				t.Fatalf("%s: %v", inputs, err)
			}
			got := run(t, opt, newParam("w", dt, c.w0...), repeat(c.grad, len(c.wants)), constLRs(c.lr, len(c.wants)))
			checkSeq(t, got, c.wants, tol(dt), inputs)
			if opt.StepCount() != len(c.wants) {
				t.Errorf("%s: StepCount: got %d, want %d", inputs, opt.StepCount(), len(c.wants))
			}
		}
	}
}

var refGrads = [][]float64{{0.1, -0.2}, {0.3, 0.05}, {-0.4, 0.25}, {0.2, 0.2}, {-0.1, 0.3}}
var refLRs = []float64{0.1, 0.05, 0.025, 0.1, 0.2}

// TestSGDMatchesReference checks five steps with changing gradients and learning
// rates against refSGD, in float32 and float64.
func TestSGDMatchesReference(t *testing.T) {
	cfgs := []SGDConfig{
		{},
		{Momentum: 0.9},
		{Momentum: 0.5, Nesterov: true},
		{WeightDecay: 0.01},
		{Momentum: 0.9, WeightDecay: 0.05},
		{Momentum: 0.9, Nesterov: true, WeightDecay: 0.05},
	}
	w0 := []float64{1, -0.5}
	for _, cfg := range cfgs {
		want := refSGD(cfg, w0, refGrads, refLRs)
		for _, dt := range dtypes {
			inputs := fmt.Sprintf("SGD %v cfg=%+v w0=%v grads=%v lrs=%v", dt, cfg, w0, refGrads, refLRs)
			opt, err := NewSGD(cfg)
			if err != nil {
				t.Fatalf("%s: %v", inputs, err)
			}
			got := run(t, opt, newParam("w", dt, w0...), refGrads, refLRs)
			checkSeq(t, got, want, tol(dt), inputs)
		}
	}
}

// TestSGDFloat32Golden checks float32 Nesterov SGD with weight decay bit for bit
// against an independent float32 emulation of PyTorch's kernels (see goldenGrads).
func TestSGDFloat32Golden(t *testing.T) {
	cfg := SGDConfig{Momentum: 0.9, Nesterov: true, WeightDecay: 0.01}
	want := [][]float32{
		{0.979099989, -0.461050004},
		{0.945214868, -0.457059503},
		{0.955487847, -0.465900421},
	}
	opt, err := NewSGD(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := run(t, opt, newParam("w", tensor.Float32, 1, -0.5), goldenGrads, goldenLRs)
	checkBits32(t, got, want, fmt.Sprintf("SGD float32 cfg=%+v w0=[1 -0.5] grads=%v lrs=%v", cfg, goldenGrads, goldenLRs))
}

func TestNewSGDErrors(t *testing.T) {
	cases := []struct {
		cfg  SGDConfig
		want string
	}{
		{SGDConfig{Momentum: -0.1}, "optimizer.momentum"},
		{SGDConfig{Momentum: math.NaN()}, "optimizer.momentum"},
		{SGDConfig{Momentum: math.Inf(1)}, "optimizer.momentum"},
		{SGDConfig{WeightDecay: -1e-4}, "optimizer.weight_decay"},
		{SGDConfig{WeightDecay: math.NaN()}, "optimizer.weight_decay"},
		{SGDConfig{Nesterov: true}, "optimizer.nesterov"},
	}
	for _, c := range cases {
		opt, err := NewSGD(c.cfg)
		wantErr(t, err, c.want, fmt.Sprintf("NewSGD(%+v)", c.cfg))
		if opt != nil {
			t.Errorf("NewSGD(%+v): got %v, want nil optimizer", c.cfg, opt)
		}
	}
	if _, err := NewSGD(SGDConfig{Momentum: 0.9, Nesterov: true, WeightDecay: 0.1}); err != nil {
		t.Errorf("NewSGD(valid): got %v, want nil", err)
	}
}
