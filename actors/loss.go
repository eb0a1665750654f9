package actors

import (
	"fmt"
	"math"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// Loss is the actor after the last position: it compares each micro-batch's output
// with its target, sends the scaled loss gradient back, and sums the step's
// loss in micro-batch order, as nn.Sequential does. Under GPipe it holds every
// backward until the step's last forward has arrived (the flush).
type Loss struct {
	base
	loss          nn.Loss
	holdBackwards bool // the schedule's backwards wait for every forward of the step
	w             Wire

	seq     int // the training step in progress (Forward.Seq)
	parts   map[partKey][]*tensor.Tensor
	outs    map[partKey]*tensor.Tensor
	targets map[partKey]*Target
	next    int        // next training micro-batch to take, in order
	sum     nn.LossSum // the step's loss, row by row in micro-batch order
	held    []*Backward
	arenas  arenas // the loss gradients, reused every step

	// messages reused every step (see reused)
	bwdOut   reused[Backward]
	stepLoss StepLoss
}

// NewLoss returns the loss actor.
func NewLoss(id int, g *Graph, loss nn.Loss, holdBackwards bool) *Loss {
	return &Loss{base: newBase(id, "loss", g), loss: loss, holdBackwards: holdBackwards,
		parts: map[partKey][]*tensor.Tensor{}, outs: map[partKey]*tensor.Tensor{}, targets: map[partKey]*Target{}}
}

func (l *Loss) Receive(ctx actor.Context) {
	msg, ok := l.receive(ctx)
	if !ok {
		return
	}
	switch m := msg.(type) {
	case *Wire:
		l.w, l.coord = *m, m.Coordinator
	case *Target:
		l.newStep(m.Seq, m.Eval)
		l.targets[partKey{m.Eval, m.Micro}] = m
		l.drain(ctx)
	case *Forward:
		l.newStep(m.Seq, m.Eval)
		k := partKey{m.Eval, m.Micro}
		out, ok := gather(l.parts, k, l.w.InShards, m.Shard, m.X)
		if !ok {
			return
		}
		l.outs[k] = out
		l.drain(ctx)
	case *GetStats:
		l.respond(ctx, l.stats(m.Reset))
	}
}

// newStep starts a training step's bookkeeping at its first message; steps
// are told apart by the coordinator's count, not the caller's numbers.
func (l *Loss) newStep(seq int, eval bool) {
	if !eval && seq != l.seq {
		l.seq, l.next, l.sum, l.held = seq, 0, nn.LossSum{Loss: l.loss}, l.held[:0]
	}
}

// drain handles every micro-batch whose output and target are both here:
// evaluation chunks in any order, training micro-batches strictly in order.
func (l *Loss) drain(ctx actor.Context) {
	for k, out := range l.outs {
		if t := l.targets[k]; k.eval && t != nil {
			delete(l.outs, k)
			delete(l.targets, k)
			l.work(ctx, SpanEval, t.Step, t.Micro, func() error { return l.evaluate(ctx, t, out) })
		}
	}
	for {
		k := partKey{false, l.next}
		out, t := l.outs[k], l.targets[k]
		if out == nil || t == nil {
			return
		}
		delete(l.outs, k)
		delete(l.targets, k)
		l.next++
		if !l.work(ctx, SpanForward, t.Step, t.Micro, func() error { return l.train(ctx, t, out) }) {
			return
		}
	}
}

func (l *Loss) train(ctx actor.Context, t *Target, out *tensor.Tensor) error {
	var grad *tensor.Tensor
	l.sum.Total = t.Total
	// the gradients of the step's micro-batches lie in one block, so the
	// last layer's weight gradient can run once over the step
	a := l.arenas.at(t.Seq, t.Micro)
	a.Share(&l.arenas.rows, t.Row, t.Row+t.Rows, t.Total)
	grad = l.sum.Add(a, out, t.T)
	if !grad.IsFinite() {
		return &nn.NonFiniteError{Step: t.Step, Where: "loss"}
	}
	b := l.bwdOut.at(t.Micro * len(l.w.Prev))
	*b = Backward{Step: t.Step, Micro: t.Micro, DY: grad}
	if l.holdBackwards {
		l.held = append(l.held, b)
	} else {
		l.sendBack(ctx, b)
	}
	if t.Micro == t.Micros-1 {
		total := l.sum.Mean()
		if math.IsNaN(total) || math.IsInf(total, 0) {
			return &nn.NonFiniteError{Step: t.Step, Where: "loss"}
		}
		for _, h := range l.held {
			l.sendBack(ctx, h)
		}
		l.held = l.held[:0]
		l.stepLoss = StepLoss{Step: t.Step, Loss: total}
		l.send(ctx, l.coord, &l.stepLoss)
	}
	return nil
}

// sendBack splits the output gradient by the last position's column blocks; b,
// one of bwdOut, goes itself to the first block's actor.
func (l *Loss) sendBack(ctx actor.Context, b *Backward) {
	if len(l.w.PrevSplit) <= 2 {
		l.send(ctx, l.w.Prev[0], b)
		return
	}
	for k, block := range splitCols(b.DY, l.w.PrevSplit) {
		m := b
		if k > 0 {
			m = l.bwdOut.at(b.Micro*len(l.w.Prev) + k)
		}
		*m = Backward{Step: b.Step, Micro: b.Micro, DY: block}
		l.send(ctx, l.w.Prev[k], m)
	}
}

func (l *Loss) evaluate(ctx actor.Context, t *Target, out *tensor.Tensor) error {
	part := &EvalPart{Chunk: t.Micro, Rows: t.Rows}
	part.Loss, _ = l.loss.Compute(out, t.T, 0)
	if t.T.Labels != nil && t.T.Rows() != t.Rows {
		return fmt.Errorf("actors: evaluation chunk %d has %d labels for %d rows", t.Micro, len(t.T.Labels), t.Rows)
	}
	if t.T.Labels != nil {
		part.Correct = t.T.Correct(out)
	}
	l.send(ctx, l.coord, part)
	return nil
}
