package actors

import (
	"math"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pipetrain/pipetrain/optim"
)

// Optimizer is the actor that owns a step's update policy: the learning rate
// and the global gradient-norm clip. The optimizer state (momentum, Adam
// moments) lives in the stages, beside the weights it updates, and no tensor
// reaches this actor. Without clip_norm it sends every parameter-owning stage
// the step's Update as soon as the step begins, so each stage updates its
// weights the moment its own last backward is done. With clip_norm it waits
// for every stage's per-parameter sums of squares, adds them in the global
// parameter order (optim.GradNorm's definition, so the pipeline matches
// nn.Sequential bit for bit) and sends the clip factor with the Update.
type Optimizer struct {
	base
	clipNorm float64
	order    map[int]int // actor id to position in the global parameter order
	targets  []*actor.PID

	// Optimistic sends each step's provisional Update (Scale 1) as the
	// step begins, so that a stage updates as soon as its own gradients
	// are complete, before the global norm; set before the actor starts.
	Optimistic bool

	step int
	lr   float64
	sums [][]float64 // per position, the sums of the step, copied from GradNorm
	n    int
	upd  Update // shared read-only by every target, rewritten each step
	prov Update // the provisional one, likewise
}

// NewOptimizer returns the optimizer actor for parameter-owning stages whose
// ids, in global parameter order, are ids, at PIDs targets. clipNorm 0 is off.
func NewOptimizer(id int, g *Graph, clipNorm float64, ids []int, targets []*actor.PID) *Optimizer {
	o := &Optimizer{base: newBase(id, "optimizer", g), clipNorm: clipNorm,
		order: map[int]int{}, targets: targets, sums: make([][]float64, len(ids))}
	for i, a := range ids {
		o.order[a] = i
	}
	return o
}

func (o *Optimizer) Receive(ctx actor.Context) {
	msg, ok := o.receive(ctx)
	if !ok {
		return
	}
	switch m := msg.(type) {
	case *Wire:
		o.coord = m.Coordinator
	case *BeginStep:
		o.step, o.lr, o.n = m.Step, m.LR, 0
		switch {
		case o.clipNorm == 0:
			o.broadcast(ctx, 1, false)
		case o.Optimistic:
			o.broadcast(ctx, 1, true)
		}
	case *GradNorm:
		pos := o.order[m.Actor]
		o.sums[pos] = append(o.sums[pos][:0], m.Sums...)
		o.n++
		if o.n == len(o.sums) {
			o.n = 0
			var scale float64
			if o.work(ctx, SpanOptimizer, o.step, -1, func() error {
				scale = optim.ClipCoef(math.Sqrt(o.total()), o.clipNorm)
				return nil
			}) {
				o.broadcast(ctx, scale, false)
			}
		}
	case *GetStats:
		o.respond(ctx, o.stats(m.Reset))
	}
}

// total adds every stage's sums in the global parameter order.
func (o *Optimizer) total() float64 {
	var sum float64
	for _, s := range o.sums {
		for _, v := range s {
			sum += v
		}
	}
	return sum
}

// broadcast gives every stage the step's learning rate and clip factor.
func (o *Optimizer) broadcast(ctx actor.Context, scale float64, provisional bool) {
	u := &o.upd
	if provisional {
		u = &o.prov // the final one follows while stages may still read this
	}
	*u = Update{Step: o.step, LR: o.lr, Scale: scale, Provisional: provisional}
	for _, pid := range o.targets {
		o.send(ctx, pid, u)
	}
}
