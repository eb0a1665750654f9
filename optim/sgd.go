package optim

import (
	"fmt"
	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// SGDConfig holds the hyperparameters of SGD; the zero value is plain SGD.
// The learning rate is passed to each Step.
type SGDConfig struct {
	Momentum    float64 // optimizer.momentum, >= 0; 0 disables the momentum buffer
	Nesterov    bool    // optimizer.nesterov; needs Momentum > 0
	WeightDecay float64 // optimizer.weight_decay, >= 0; L2 penalty added to the gradient
	// MatricesOnly limits weight decay to parameters of 2 or more axes.
	MatricesOnly bool
	Threads      int // goroutines a large update may use; 0: all the Go runtime has
}

// SGD is stochastic gradient descent with optional momentum, Nesterov momentum and
// weight decay, computing what torch.optim.SGD computes with dampening 0 and
// maximize false, on its single-tensor (foreach=False) path:
//
//	g = grad + weight_decay*w                  (if weight_decay != 0)
//	buf = g                                    (first step)
//	buf = momentum*buf + g                     (later steps, if momentum != 0)
//	g = g + momentum*buf   if nesterov, else g = buf
//	w = w - lr*g
type SGD struct {
	cfg    SGDConfig
	step   int
	layout layout
	buf    []*tensor.Tensor // momentum buffers, nil until the first step
	task   sgdTask          // the parallel update's loop, reused
}

var sgdSlots = []string{"momentum"}

// NewSGD returns an SGD optimizer, or an error if a hyperparameter is out of range.
func NewSGD(cfg SGDConfig) (*SGD, error) {
	if err := nonNegative("optimizer.momentum", cfg.Momentum); err != nil {
		return nil, err
	}
	if err := nonNegative("optimizer.weight_decay", cfg.WeightDecay); err != nil {
		return nil, err
	}
	if cfg.Nesterov && cfg.Momentum == 0 {
		return nil, fmt.Errorf("optim: optimizer.nesterov = true needs optimizer.momentum > 0")
	}
	return &SGD{cfg: cfg}, nil
}

// Config returns the hyperparameters.
func (o *SGD) Config() SGDConfig { return o.cfg }

// StepCount returns the number of steps taken.
func (o *SGD) StepCount() int { return o.step }

// Step applies one SGD update with learning rate lr to every parameter, in the
// parameter's own dtype.
func (o *SGD) Step(params []Param, lr float64) error { return o.StepScaled(params, lr, 1, false) }

// StepScaled is Step on the gradients multiplied by scale, clearing them
// after when zero: ScaledStepper's one pass over each parameter.
func (o *SGD) StepScaled(params []Param, lr, scale float64, zero bool) error {
	if err := checkLR("sgd", lr); err != nil {
		return err
	}
	if err := o.layout.check("sgd", params); err != nil {
		return err
	}
	mom := o.cfg.Momentum != 0
	first := o.step == 0
	scaled := scale != 1 // as the ScaleGrads it replaces, called only then
	if mom && o.buf == nil {
		o.buf = make([]*tensor.Tensor, len(params))
		for i, p := range params {
			o.buf[i] = tensor.Zeros(p.Value.DType(), p.Value.Shape()...)
		}
	}
	for i, p := range params {
		var buf *tensor.Tensor
		if mom {
			buf = o.buf[i]
		}
		wd := o.cfg.WeightDecay
		if !decays(o.cfg.MatricesOnly, p) {
			wd = 0
		}
		if p.Value.DType() == tensor.Float32 {
			var b []float32
			if buf != nil {
				b = buf.Data32()
			}
			op := gradOp[float32]{float32(scale), scaled, zero}
			sgd32(&o.task, o.cfg.Threads, p.Value.Data32(), p.Grad.Data32(), b, float32(lr), float32(o.cfg.Momentum), float32(wd), wd != 0, first, o.cfg.Nesterov, op)
		} else {
			var b []float64
			if buf != nil {
				b = buf.Data64()
			}
			sgdLoop(p.Value.Data64(), p.Grad.Data64(), b, lr, o.cfg.Momentum, wd, wd != 0, first, o.cfg.Nesterov, gradOp[float64]{scale, scaled, zero})
		}
	}
	o.layout = o.layout.bind(params)
	o.step++
	return nil
}

// sgd32 updates w in float32. buf is nil without momentum. Every product is
// rounded before the addition (no FMA); the common cases run vectorised, with
// the same bits as the loop.
func sgd32(t *sgdTask, threads int, w, g, buf []float32, lr, mom, wd float32, decay, first, nesterov bool, op gradOp[float32]) {
	if !decay && !nesterov {
		*t = sgdTask{w: w, g: g, buf: buf, lr: lr, mom: mom, first: first && buf != nil, op: op}
		par.For(threads, len(w), sgdGrain, t)
		return
	}
	sgdLoop(w, g, buf, lr, mom, wd, decay, first, nesterov, op)
}

// sgdGrain is the fewest elements worth a part of a parallel update: a large
// layer's update, memory-bound, then uses the cores the GEMM does.
const sgdGrain = 1 << 15

// sgdTask is the vectorised update over a range, for par.For.
type sgdTask struct {
	w, g, buf []float32
	lr, mom   float32
	first     bool // momentum's first step: buf = g
	op        gradOp[float32]
}

// sgdChunk is the most elements the vectorised update scales, updates and
// clears in turn: the gradient's piece stays in L1 from one to the next.
const sgdChunk = 2048

func (t *sgdTask) Run(lo, hi int) {
	for lo < hi {
		n := hi - lo
		if t.op.scaled || t.op.zero {
			n = min(n, sgdChunk)
		}
		w, g := t.w[lo:lo+n], t.g[lo:lo+n]
		if t.op.scaled {
			scaleBy(g, t.op.scale)
		}
		switch {
		case t.buf == nil:
			vec.SGD(w, g, t.lr)
		case t.first:
			b := t.buf[lo : lo+n]
			copy(b, g)
			vec.SGD(w, b, t.lr)
		default:
			vec.SGDMomentum(w, g, t.buf[lo:lo+n], t.lr, t.mom)
		}
		if t.op.zero {
			clear(g)
		}
		lo += n
	}
}

// sgdLoop is the update one element at a time, in either float type: the
// float64 path, and float32's with weight decay or Nesterov. The explicit
// conversions round each product before it is added.
func sgdLoop[T float32 | float64](w, g, buf []T, lr, mom, wd T, decay, first, nesterov bool, op gradOp[T]) {
	for i := range w {
		gi := op.take(g, i)
		if decay {
			gi = gi + T(wd*w[i])
		}
		if buf != nil {
			if first {
				buf[i] = gi
			} else {
				buf[i] = T(mom*buf[i]) + gi
			}
			if nesterov {
				gi = gi + T(mom*buf[i])
			} else {
				gi = buf[i]
			}
		}
		w[i] = w[i] - T(lr*gi)
	}
}

// State returns a deep copy of the step count and the momentum buffers
// ("<i>.momentum"; none without momentum or before the first step).
func (o *SGD) State() State {
	var st State
	o.StateInto(&st)
	return st
}

// StateInto is State into st, reusing st's tensors where they fit.
func (o *SGD) StateInto(st *State) {
	exportStateInto(st, "sgd", o.step, o.layout, sgdSlots, o.slots())
}

// StateView is State with the momentum buffers themselves, not copies.
func (o *SGD) StateView() State {
	return viewState("sgd", o.step, o.layout, sgdSlots, o.slots())
}

// slots returns the momentum buffers, [param][momentum].
func (o *SGD) slots() [][]*tensor.Tensor {
	var ts [][]*tensor.Tensor
	for _, b := range o.buf {
		ts = append(ts, []*tensor.Tensor{b})
	}
	return ts
}

// LoadState replaces the state with a deep copy of st. st must come from an SGD
// optimizer with the same use of momentum and, if this optimizer has already
// stepped, the same parameters.
func (o *SGD) LoadState(st State) error {
	var slots []string
	if o.cfg.Momentum != 0 {
		slots = sgdSlots
	}
	ts, l, err := checkState("sgd", slots, o.layout, st)
	if err != nil {
		return err
	}
	old := o.buf
	o.buf = nil
	if slots != nil && ts != nil {
		o.buf = make([]*tensor.Tensor, len(ts))
		for i, row := range ts {
			o.buf[i] = adopt(at(old, i), row[0])
		}
	}
	o.step, o.layout = st.Step, l
	return nil
}

// nonNegative checks that a hyperparameter is finite and >= 0.
func nonNegative(key string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("optim: %s = %v must be finite and >= 0", key, v)
	}
	return nil
}
