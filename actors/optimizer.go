package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// Optimizer is the actor that owns the optimizer state (momentum, Adam moments).
// When every parameter-owning actor has sent its GradReady for a step, it clips
// the gradients as one global set (value, then L2 norm, in a fixed order), runs
// the optimizer on the copies it was sent, and sends each actor its new values.
// It never holds a pointer into a layer's weights.
type Optimizer struct {
	base
	opt       optim.Optimizer
	clipNorm  float64
	clipValue float64
	order     map[int]int // actor id to position in the global parameter order
	targets   []*actor.PID

	step   int
	lr     float64
	got    []*GradReady
	n      int
	master [][]*tensor.Tensor  // per actor, the parameter values: the optimizer's own copy
	ps     []optim.Param       // reused each step
	apply  reused[ApplyUpdate] // per target, reused each step
}

// NewOptimizer returns the optimizer actor for parameter-owning actors whose ids,
// in global parameter order, are ids, at PIDs targets.
func NewOptimizer(id int, g *Graph, opt optim.Optimizer, clipNorm, clipValue float64, ids []int, targets []*actor.PID) *Optimizer {
	o := &Optimizer{base: newBase(id, "optimizer", g), opt: opt, clipNorm: clipNorm, clipValue: clipValue,
		order: map[int]int{}, targets: targets, got: make([]*GradReady, len(ids)), master: make([][]*tensor.Tensor, len(ids))}
	for i, a := range ids {
		o.order[a] = i
	}
	return o
}

func (o *Optimizer) Receive(ctx actor.Context) {
	if !o.receive(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *Wire:
		o.coord = m.Coordinator
	case *BeginStep:
		o.step, o.lr = m.Step, m.LR
	case *GradReady:
		pos := o.order[m.Actor]
		if m.Values != nil {
			o.master[pos] = m.Values
		}
		o.got[pos] = m
		o.n++
		if o.n == len(o.got) {
			o.n = 0
			o.guard(ctx, func() string { return fmt.Sprintf("the optimizer at step %d", o.step) }, func() error { return o.update(ctx) })
		}
	case *GetOptimizerState:
		ctx.Respond(o.opt.State())
	case *SetOptimizerState:
		ctx.Respond(&Ack{Err: o.opt.LoadState(m.State)})
	case *GetStats:
		ctx.Respond(o.stats(m.Reset))
	}
}

func (o *Optimizer) update(ctx actor.Context) error {
	ps := o.ps[:0]
	for pos, g := range o.got {
		if len(o.master[pos]) != len(g.Grads) {
			return fmt.Errorf("actors: optimizer: actor %d sent %d gradients for %d values", g.Actor, len(g.Grads), len(o.master[pos]))
		}
		for i := range g.Grads {
			ps = append(ps, optim.Param{Value: o.master[pos][i], Grad: g.Grads[i]})
		}
	}
	o.ps = ps
	var err error
	o.span('O', o.step, -1, func() {
		if o.clipValue > 0 {
			optim.ClipGradValue(ps, o.clipValue)
		}
		if o.clipNorm > 0 {
			optim.ClipGradNorm(ps, o.clipNorm)
		}
		err = o.opt.Step(ps, o.lr)
	})
	if err != nil {
		return err
	}
	for i, g := range o.got {
		u := o.apply.at(i)
		*u = ApplyUpdate{Step: o.step, Values: o.master[i], Grads: g.Grads}
		o.send(ctx, o.targets[i], u)
		o.got[i] = nil
	}
	return nil
}
