package main

import (
	"fmt"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// engine runs training steps. The sequential engine is the reference; the actor
// pipeline implements the same interface and must give the same numbers.
type engine interface {
	// Step runs one optimizer step on a mini-batch and returns its mean loss.
	Step(step int, lr float64, x *tensor.Tensor, t nn.Target) (float64, error)
	// Evaluate returns the mean loss and accuracy (NaN without labels) on x.
	Evaluate(x *tensor.Tensor, t nn.Target) (loss, accuracy float64)
	// Params returns the parameters in a fixed order; read them only between steps.
	Params() []nn.Param
	Optimizer() optim.Optimizer
	Close() error
}

// evalRows is how many rows evaluation runs through the model at once.
const evalRows = 1024

// seqEngine trains an nn.Sequential on the calling goroutine.
type seqEngine struct {
	model     *nn.Sequential
	params    []optim.Param
	opt       optim.Optimizer
	micro     int
	clipNorm  float64
	clipValue float64
}

func newSeqEngine(c *config.Config, layers []nn.Layer) (*seqEngine, error) {
	opt, err := newOptimizer(c)
	if err != nil {
		return nil, err
	}
	m := &nn.Sequential{Layers: layers, Loss: nn.Loss(c.Loss.Type)}
	return &seqEngine{
		model: m, params: optimParams(m.Params()), opt: opt,
		micro: c.Pipeline.MicroBatches, clipNorm: c.Optimizer.ClipNorm, clipValue: c.Optimizer.ClipValue,
	}, nil
}

func (e *seqEngine) Step(step int, lr float64, x *tensor.Tensor, t nn.Target) (float64, error) {
	e.model.ZeroGrad()
	loss, err := e.model.TrainStep(step, x, t, e.micro)
	if err != nil {
		return loss, err
	}
	clipGrads(e.params, e.clipValue, e.clipNorm)
	return loss, e.opt.Step(e.params, lr)
}

func (e *seqEngine) Evaluate(x *tensor.Tensor, t nn.Target) (float64, float64) {
	return e.model.Evaluate(x, t, evalRows)
}

func (e *seqEngine) Params() []nn.Param         { return e.model.Params() }
func (e *seqEngine) Optimizer() optim.Optimizer { return e.opt }
func (e *seqEngine) Close() error               { return nil }

// clipGrads clips by value, then by global L2 norm; a zero limit is off.
func clipGrads(ps []optim.Param, value, norm float64) {
	if value > 0 {
		optim.ClipGradValue(ps, value)
	}
	if norm > 0 {
		optim.ClipGradNorm(ps, norm)
	}
}

func optimParams(ps []nn.Param) []optim.Param {
	out := make([]optim.Param, len(ps))
	for i, p := range ps {
		out[i] = optim.Param{Name: p.Name, Value: p.Value, Grad: p.Grad}
	}
	return out
}

func newOptimizer(c *config.Config) (optim.Optimizer, error) {
	o := c.Optimizer
	var (
		opt optim.Optimizer
		err error
	)
	switch o.Type {
	case "sgd":
		opt, err = optim.NewSGD(optim.SGDConfig{Momentum: o.Momentum, Nesterov: o.Nesterov, WeightDecay: o.WeightDecay})
	case "adam", "adamw":
		ac := optim.AdamConfig{Betas: [2]float64{o.Betas[0], o.Betas[1]}, Eps: o.Eps, WeightDecay: o.WeightDecay}
		if o.Type == "adam" {
			opt, err = optim.NewAdam(ac)
		} else {
			opt, err = optim.NewAdamW(ac)
		}
	default:
		err = fmt.Errorf("optimizer.type = %q: unknown optimizer", o.Type)
	}
	if err != nil {
		return nil, badInput(err)
	}
	return opt, nil
}
