package optim

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/tensor"
)

// AdamConfig holds the hyperparameters of Adam and AdamW. The learning rate is passed
// to each Step. DefaultAdamConfig returns PyTorch's defaults.
type AdamConfig struct {
	Betas       [2]float64 // optimizer.betas, each in [0, 1)
	Eps         float64    // optimizer.eps, > 0
	WeightDecay float64    // optimizer.weight_decay, >= 0
	// MatricesOnly limits weight decay to parameters of 2 or more axes
	// (weights and embeddings, not biases or norms): optimizer.decay =
	// "matrices", as nanoGPT's configure_optimizers.
	MatricesOnly bool
	Threads      int // goroutines a large update may use; 0: all the Go runtime has
}

// DefaultAdamConfig returns betas (0.9, 0.999), eps 1e-8 and no weight decay, the
// defaults of torch.optim.Adam and of the [optimizer] table.
func DefaultAdamConfig() AdamConfig {
	return AdamConfig{Betas: [2]float64{0.9, 0.999}, Eps: 1e-8}
}

// Adam is the Adam optimizer (amsgrad false, maximize false), or AdamW when made by
// NewAdamW. It computes what torch.optim.Adam and torch.optim.AdamW compute on their
// single-tensor (foreach=False) path, at step t = 1, 2, ...:
//
//	w = w * (1 - lr*weight_decay)              (AdamW only)
//	g = grad + weight_decay*w                  (Adam only, if weight_decay != 0)
//	m = lerp(m, g, 1-beta1)                    (= beta1*m + (1-beta1)*g)
//	v = beta2*v + (1-beta2)*g*g
//	step_size = lr / (1 - beta1^t)             (float64)
//	denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//	w = w - step_size*m / denom
type Adam struct {
	cfg     AdamConfig
	kind    string // "adam" or "adamw"
	step    int
	layout  layout
	expAvg  []*tensor.Tensor // m, nil until the first step
	expAvgQ []*tensor.Tensor // v, nil until the first step
	task    adamTask         // the parallel update's loop, reused
}

var adamSlots = []string{"exp_avg", "exp_avg_sq"}

// NewAdam returns an Adam optimizer, whose weight decay is an L2 penalty added to the
// gradient, or an error if a hyperparameter is out of range.
func NewAdam(cfg AdamConfig) (*Adam, error) { return newAdam("adam", cfg) }

// NewAdamW returns an AdamW optimizer, whose weight decay is decoupled: the weights
// shrink by the factor 1 - lr*weight_decay before the Adam update. It returns an
// error if a hyperparameter is out of range.
func NewAdamW(cfg AdamConfig) (*Adam, error) { return newAdam("adamw", cfg) }

func newAdam(kind string, cfg AdamConfig) (*Adam, error) {
	for i, b := range cfg.Betas {
		if math.IsNaN(b) || b < 0 || b >= 1 {
			return nil, fmt.Errorf("optim: optimizer.betas[%d] = %v must be in [0, 1)", i, b)
		}
	}
	if math.IsNaN(cfg.Eps) || math.IsInf(cfg.Eps, 0) || cfg.Eps <= 0 {
		return nil, fmt.Errorf("optim: optimizer.eps = %v must be finite and > 0", cfg.Eps)
	}
	if err := nonNegative("optimizer.weight_decay", cfg.WeightDecay); err != nil {
		return nil, err
	}
	return &Adam{cfg: cfg, kind: kind}, nil
}

// Config returns the hyperparameters.
func (o *Adam) Config() AdamConfig { return o.cfg }

// Kind returns "adam" or "adamw".
func (o *Adam) Kind() string { return o.kind }

// StepCount returns the number of steps taken.
func (o *Adam) StepCount() int { return o.step }

// adamScalars are the per-step constants, computed in float64 as PyTorch computes
// them in Python, then rounded once to the parameter's dtype where used.
type adamScalars struct {
	decay    float64 // 1 - lr*weight_decay (AdamW)
	wd       float64
	lerpW    float64 // 1 - beta1, the lerp weight
	beta2    float64
	omb2     float64 // 1 - beta2
	bc2Sqrt  float64 // sqrt(1 - beta2^t)
	stepSize float64 // lr / (1 - beta1^t)
	eps      float64
	coupled  bool // Adam: add weight_decay*w to the gradient
	decouple bool // AdamW: shrink w first
	scale    float64
	scaled   bool // multiply the gradient by scale first, and keep it so
	zero     bool // clear the gradient
}

// Step applies one Adam (or AdamW) update with learning rate lr to every parameter,
// in the parameter's own dtype.
func (o *Adam) Step(params []Param, lr float64) error { return o.StepScaled(params, lr, 1, false) }

// StepScaled is Step on the gradients multiplied by scale, clearing them
// after when zero: ScaledStepper's one pass over each parameter.
func (o *Adam) StepScaled(params []Param, lr, scale float64, zero bool) error {
	if err := checkLR(o.kind, lr); err != nil {
		return err
	}
	if err := o.layout.check(o.kind, params); err != nil {
		return err
	}
	if o.expAvg == nil {
		o.expAvg = make([]*tensor.Tensor, len(params))
		o.expAvgQ = make([]*tensor.Tensor, len(params))
		for i, p := range params {
			o.expAvg[i] = tensor.Zeros(p.Value.DType(), p.Value.Shape()...)
			o.expAvgQ[i] = tensor.Zeros(p.Value.DType(), p.Value.Shape()...)
		}
	}
	t := o.step + 1
	b1, b2 := o.cfg.Betas[0], o.cfg.Betas[1]
	wd := o.cfg.WeightDecay
	bc1 := 1 - powInt(b1, t)
	bc2 := 1 - powInt(b2, t)
	s := adamScalars{
		decay:    1 - float64(lr*wd),
		wd:       wd,
		lerpW:    1 - b1,
		beta2:    b2,
		omb2:     1 - b2,
		bc2Sqrt:  math.Sqrt(bc2),
		stepSize: lr / bc1,
		eps:      o.cfg.Eps,
		coupled:  o.kind == "adam" && wd != 0,
		decouple: o.kind == "adamw" && wd != 0,
		scale:    scale,
		scaled:   scale != 1, // as the ScaleGrads it replaces, called only then
		zero:     zero,
	}
	plain := s // for the parameters weight decay leaves out
	plain.decay, plain.wd, plain.coupled, plain.decouple = 1, 0, false, false
	for i, p := range params {
		ps := &s
		if !decays(o.cfg.MatricesOnly, p) {
			ps = &plain
		}
		if p.Value.DType() == tensor.Float32 {
			adam32(&o.task, o.cfg.Threads, p.Value.Data32(), p.Grad.Data32(), o.expAvg[i].Data32(), o.expAvgQ[i].Data32(), ps)
		} else {
			adam64(p.Value.Data64(), p.Grad.Data64(), o.expAvg[i].Data64(), o.expAvgQ[i].Data64(), ps)
		}
	}
	o.layout = o.layout.bind(params)
	o.step = t
	return nil
}

// adam32 updates w, m and v in float32 with the scalars rounded to float32, as
// PyTorch's CPU kernels do (vec.Adam: every product rounded before any
// addition, no FMA), over parts of at least adamGrain elements on up to
// threads goroutines.
func adam32(t *adamTask, threads int, w, g, m, v []float32, s *adamScalars) {
	lw := float32(s.lerpW)
	*t = adamTask{w: w, g: g, m: m, v: v, step: vec.AdamStep{
		Decay: float32(s.decay), WD: float32(s.wd),
		// torch lerp: self + w*(end-self) if |w| < 0.5, else end - (end-self)*(1-w)
		Lerp: lw, OneMinus: 1 - lw, Small: lw < 0.5,
		Beta2: float32(s.beta2), OmBeta2: float32(s.omb2),
		BC2Sqrt: float32(s.bc2Sqrt), Eps: float32(s.eps), NegStep: float32(-s.stepSize),
		Decouple: s.decouple, Coupled: s.coupled,
		Scale: float32(s.scale), Scaled: s.scaled, Zero: s.zero,
	}}
	par.For(threads, len(w), adamGrain, t)
}

// adamGrain is the fewest elements worth a part of a parallel update.
const adamGrain = 1 << 14

// adamTask is adam32's loop over a range, for par.For.
type adamTask struct {
	w, g, m, v []float32
	step       vec.AdamStep
}

func (t *adamTask) Run(lo, hi int) {
	vec.Adam(t.w[lo:hi], t.g[lo:hi], t.m[lo:hi], t.v[lo:hi], &t.step)
}

// adam64 is adam32 in float64.
func adam64(w, g, m, v []float64, s *adamScalars) {
	lw := s.lerpW
	small := lw < 0.5
	olw := 1 - lw
	negStep := -s.stepSize
	op := gradOp[float64]{s.scale, s.scaled, s.zero}
	for i := range w {
		if s.decouple {
			w[i] = float64(w[i] * s.decay)
		}
		gi := op.take(g, i)
		if s.coupled {
			gi = gi + float64(s.wd*w[i])
		}
		if small {
			m[i] = m[i] + float64(lw*(gi-m[i]))
		} else {
			m[i] = gi - float64((gi-m[i])*olw)
		}
		v[i] = float64(v[i]*s.beta2) + float64(float64(s.omb2*gi)*gi)
		denom := float64(math.Sqrt(v[i])/s.bc2Sqrt) + s.eps
		w[i] = w[i] + float64(float64(negStep*m[i])/denom)
	}
}

// State returns a deep copy of the step count and the moment estimates
// ("<i>.exp_avg", "<i>.exp_avg_sq"; none before the first step).
func (o *Adam) State() State {
	var st State
	o.StateInto(&st)
	return st
}

// StateInto is State into st, reusing st's tensors where they fit.
func (o *Adam) StateInto(st *State) {
	exportStateInto(st, o.kind, o.step, o.layout, adamSlots, o.slots())
}

// slots returns the moments, [param][exp_avg, exp_avg_sq].
func (o *Adam) slots() [][]*tensor.Tensor {
	var ts [][]*tensor.Tensor
	for i := range o.expAvg {
		ts = append(ts, []*tensor.Tensor{o.expAvg[i], o.expAvgQ[i]})
	}
	return ts
}

// StateView is State with the moments themselves, not copies.
func (o *Adam) StateView() State {
	return viewState(o.kind, o.step, o.layout, adamSlots, o.slots())
}

// LoadState replaces the state with a deep copy of st. st must come from an optimizer
// of the same kind (Adam or AdamW) and, if this optimizer has already stepped, for
// the same parameters.
func (o *Adam) LoadState(st State) error {
	ts, l, err := checkState(o.kind, adamSlots, o.layout, st)
	if err != nil {
		return err
	}
	m, v := o.expAvg, o.expAvgQ
	o.expAvg, o.expAvgQ = nil, nil
	if ts != nil {
		o.expAvg = make([]*tensor.Tensor, len(ts))
		o.expAvgQ = make([]*tensor.Tensor, len(ts))
		for i, row := range ts {
			o.expAvg[i], o.expAvgQ[i] = adopt(at(m, i), row[0]), adopt(at(v, i), row[1])
		}
	}
	o.step, o.layout = st.Step, l
	return nil
}

// powInt returns x**n for n >= 0, correctly rounded in all but extremely rare cases.
//
// Python evaluates beta**step with the C library's pow, which glibc computes to within
// about half an ulp; Go's math.Pow is less accurate for integer powers (it differs from
// Python's beta1**t for most t). powInt squares and multiplies in double-double
// arithmetic (error-free products via math.FMA), so 1 - beta**t, and hence Adam's
// bias corrections, match PyTorch's.
func powInt(x float64, n int) float64 {
	k := n
	rh, rl := 1.0, 0.0
	bh, bl := x, 0.0
	for k > 0 {
		if k&1 == 1 {
			rh, rl = ddMul(rh, rl, bh, bl)
		}
		k >>= 1
		if k > 0 {
			bh, bl = ddMul(bh, bl, bh, bl)
		}
	}
	r := rh + rl
	if math.IsNaN(r) || math.IsInf(r, 0) || r == 0 {
		// Overflow or underflow of the double-double terms: fall back.
		return math.Pow(x, float64(n))
	}
	return r
}

// ddMul returns the double-double product (ah+al)*(bh+bl).
func ddMul(ah, al, bh, bl float64) (float64, float64) {
	p := float64(ah * bh)
	e := math.FMA(ah, bh, -p) // exact error of p
	e = e + (float64(ah*bl) + float64(al*bh))
	s := p + e
	return s, e - (s - p)
}
