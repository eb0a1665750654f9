package optim

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// refAdam is the algorithm of the torch.optim.Adam / AdamW documentation (amsgrad
// false), in float64, written independently of adam64: bias-corrected moments
// m/(1-beta1^t) and v/(1-beta2^t), w -= lr*mhat/(sqrt(vhat)+eps).
func refAdam(decoupled bool, cfg AdamConfig, w0 []float64, grads [][]float64, lrs []float64) [][]float64 {
	b1, b2, lambda := cfg.Betas[0], cfg.Betas[1], cfg.WeightDecay
	theta := append([]float64(nil), w0...)
	m := make([]float64, len(w0))
	v := make([]float64, len(w0))
	var out [][]float64
	for k, grad := range grads {
		t := float64(k + 1)
		lr := lrs[k]
		for i := range theta {
			g := grad[i]
			if decoupled {
				theta[i] -= lr * lambda * theta[i]
			} else {
				g += lambda * theta[i]
			}
			m[i] = b1*m[i] + (1-b1)*g
			v[i] = b2*v[i] + (1-b2)*g*g
			mhat := m[i] / (1 - math.Pow(b1, t))
			vhat := v[i] / (1 - math.Pow(b2, t))
			theta[i] -= lr * mhat / (math.Sqrt(vhat) + cfg.Eps)
		}
		out = append(out, append([]float64(nil), theta...))
	}
	return out
}

func newAdamKind(kind string, cfg AdamConfig) (*Adam, error) {
	if kind == "adamw" {
		return NewAdamW(cfg)
	}
	return NewAdam(cfg)
}

// TestAdamHandComputed checks sequences worked out by hand.
func TestAdamHandComputed(t *testing.T) {
	def := DefaultAdamConfig()
	wd := func(c AdamConfig, wd float64) AdamConfig { c.WeightDecay = wd; return c }
	cases := []struct {
		name  string
		kind  string
		cfg   AdamConfig
		w0    []float64
		grad  []float64 // the same every step
		lr    float64
		wants [][]float64
	}{
		// A constant gradient g has mhat = g and vhat = g*g at every step, so each step
		// moves w by lr*g/(|g|+eps): 0.1*2/(2+1e-8) = 0.0999999995 and
		// 0.1*(-0.5)/(0.5+1e-8) = -0.099999998.
		{"adam constant gradient", "adam", def, []float64{1, 1}, []float64{2, -0.5}, 0.1,
			[][]float64{{0.9000000005, 1.099999998}, {0.800000001, 1.199999996}, {0.7000000015, 1.299999994}}},
		// The same for AdamW without decay.
		{"adamw constant gradient", "adamw", def, []float64{1}, []float64{2}, 0.1,
			[][]float64{{0.9000000005}, {0.800000001}, {0.7000000015}}},
		// Zero gradient: m = v = 0, so only the decay 1 - 0.1*0.1 = 0.99 acts.
		{"adamw decay only", "adamw", wd(def, 0.1), []float64{1, -2}, []float64{0, 0}, 0.1,
			[][]float64{{0.99, -1.98}, {0.9801, -1.9602}, {0.970299, -1.940598}}},
		// Zero gradient, coupled decay: g = 0.5*2 = 1, w = 2 - 0.1*1/(1+1e-8) = 1.900000001.
		{"adam L2 decay first step", "adam", wd(def, 0.5), []float64{2}, []float64{0}, 0.1,
			[][]float64{{1.900000001}}},
	}
	for _, c := range cases {
		for _, dt := range dtypes {
			inputs := fmt.Sprintf("%s %v cfg=%+v w0=%v grad=%v lr=%v", c.name, dt, c.cfg, c.w0, c.grad, c.lr)
			opt, err := newAdamKind(c.kind, c.cfg)
			if err != nil {
				t.Fatalf("%s: %v", inputs, err)
			}
			got := run(t, opt, newParam("w", dt, c.w0...), repeat(c.grad, len(c.wants)), constLRs(c.lr, len(c.wants)))
			checkSeq(t, got, c.wants, tol(dt), inputs)
			if opt.StepCount() != len(c.wants) || opt.Kind() != c.kind {
				t.Errorf("%s: StepCount, Kind: got %d, %q, want %d, %q", inputs, opt.StepCount(), opt.Kind(), len(c.wants), c.kind)
			}
		}
	}
}

// TestAdamMatchesReference checks five steps with changing gradients and learning
// rates against refAdam, in float32 and float64.
func TestAdamMatchesReference(t *testing.T) {
	cases := []struct {
		kind string
		cfg  AdamConfig
	}{
		{"adam", DefaultAdamConfig()},
		{"adam", AdamConfig{Betas: [2]float64{0.8, 0.99}, Eps: 1e-6, WeightDecay: 0.01}},
		{"adam", AdamConfig{Betas: [2]float64{0.3, 0.9}, Eps: 1e-8}}, // lerp weight 0.7 >= 0.5
		{"adam", AdamConfig{Betas: [2]float64{0, 0}, Eps: 1e-8}},
		{"adamw", DefaultAdamConfig()},
		{"adamw", AdamConfig{Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0.1}},
		{"adamw", AdamConfig{Betas: [2]float64{0.4, 0.95}, Eps: 1e-7, WeightDecay: 0.5}},
	}
	w0 := []float64{0.5, -1.5}
	for _, c := range cases {
		want := refAdam(c.kind == "adamw", c.cfg, w0, refGrads, refLRs)
		for _, dt := range dtypes {
			inputs := fmt.Sprintf("%s %v cfg=%+v w0=%v grads=%v lrs=%v", c.kind, dt, c.cfg, w0, refGrads, refLRs)
			opt, err := newAdamKind(c.kind, c.cfg)
			if err != nil {
				t.Fatalf("%s: %v", inputs, err)
			}
			got := run(t, opt, newParam("w", dt, w0...), refGrads, refLRs)
			checkSeq(t, got, want, tol(dt)*10, inputs)
		}
	}
}

// TestAdamFloat32Golden checks float32 Adam and AdamW bit for bit against an
// independent float32 emulation of PyTorch's kernels (see goldenGrads).
func TestAdamFloat32Golden(t *testing.T) {
	cases := []struct {
		kind string
		cfg  AdamConfig
		want [][]float32
	}{
		{"adam", AdamConfig{Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0.01}, [][]float32{
			{0.400000006, -1.39999998},
			{0.353897154, -1.37310493},
			{0.355080247, -1.37780261},
		}},
		{"adamw", AdamConfig{Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0.1}, [][]float32{
			{0.395000011, -1.38499999},
			{0.347135961, -1.35460162},
			{0.347803146, -1.35777271},
		}},
		// beta1 = 0.4: lerp weight 0.6 takes torch.lerp's large-weight branch.
		{"adam", AdamConfig{Betas: [2]float64{0.4, 0.99}, Eps: 1e-8}, [][]float32{
			{0.399999976, -1.39999998},
			{0.345804304, -1.39263368},
			{0.360134035, -1.4129988},
		}},
	}
	for _, c := range cases {
		opt, err := newAdamKind(c.kind, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := run(t, opt, newParam("w", tensor.Float32, 0.5, -1.5), goldenGrads, goldenLRs)
		checkBits32(t, got, c.want, fmt.Sprintf("%s float32 cfg=%+v w0=[0.5 -1.5] grads=%v lrs=%v", c.kind, c.cfg, goldenGrads, goldenLRs))
	}
}

// TestPowInt checks powInt against exactly rounded powers (computed with rational
// arithmetic); Go's math.Pow misses several of them.
func TestPowInt(t *testing.T) {
	cases := []struct {
		x    float64
		n    int
		want float64
	}{
		{0.9, 0, 1},
		{0.9, 4, 0.6561},
		{0.9, 5, 0.5904900000000001},
		{0.9, 10, 0.3486784401000001},
		{0.999, 10, 0.9900448802097482},
		{0.999, 1000, 0.36769542477096373},
		{0.999, 2904, 0.054723996727378245},
		{0.9999, 494, 0.9517979823103042},
		{0.99, 100, 0.3660323412732292},
		{0.1, 3, 0.0010000000000000002},
		{0.5, 60, 8.673617379884035e-19},
		{0, 3, 0},
		{2, 2000, math.Inf(1)},
	}
	for _, c := range cases {
		if got := powInt(c.x, c.n); got != c.want {
			t.Errorf("powInt(%v, %d): got %v, want %v", c.x, c.n, got, c.want)
		}
	}
}

func TestNewAdamErrors(t *testing.T) {
	def := DefaultAdamConfig()
	with := func(f func(*AdamConfig)) AdamConfig { c := def; f(&c); return c }
	cases := []struct {
		cfg  AdamConfig
		want string
	}{
		{with(func(c *AdamConfig) { c.Betas[0] = 1 }), "optimizer.betas[0]"},
		{with(func(c *AdamConfig) { c.Betas[0] = -0.1 }), "optimizer.betas[0]"},
		{with(func(c *AdamConfig) { c.Betas[1] = 1.5 }), "optimizer.betas[1]"},
		{with(func(c *AdamConfig) { c.Betas[1] = math.NaN() }), "optimizer.betas[1]"},
		{with(func(c *AdamConfig) { c.Eps = 0 }), "optimizer.eps"},
		{with(func(c *AdamConfig) { c.Eps = -1e-8 }), "optimizer.eps"},
		{with(func(c *AdamConfig) { c.Eps = math.Inf(1) }), "optimizer.eps"},
		{with(func(c *AdamConfig) { c.WeightDecay = -0.01 }), "optimizer.weight_decay"},
		{AdamConfig{}, "optimizer.eps"},
	}
	for _, c := range cases {
		for _, kind := range []string{"adam", "adamw"} {
			opt, err := newAdamKind(kind, c.cfg)
			wantErr(t, err, c.want, fmt.Sprintf("%s(%+v)", kind, c.cfg))
			if opt != nil {
				t.Errorf("%s(%+v): got %v, want nil optimizer", kind, c.cfg, opt)
			}
		}
	}
}
