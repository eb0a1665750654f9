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
// backward of a replica until that replica's last forward has arrived (the
// flush). With replicas, outputs come in any order: each gradient goes back
// at once (it does not depend on the sum), and the loss of a micro-batch
// that comes before its turn is added when its turn comes, computed again.
type Loss struct {
	base
	loss          nn.Loss
	holdBackwards bool // the schedule's backwards wait for every forward of the step
	threads       int  // the loss's goroutines (nn.LossSum.Threads)
	w             Wire

	seq      int // the training step in progress (Forward.Seq)
	parts    map[partKey][]*tensor.Tensor
	outs     map[partKey]*tensor.Tensor
	targets  map[partKey]*Target
	next     int        // next training micro-batch to add to the sum, in order
	sum      nn.LossSum // the step's loss, row by row in micro-batch order
	later    map[int]lossPart
	held     [][]*Backward // per replica
	got      []int         // per replica, the micro-batches whose gradient went back or is held
	arenas   arenas        // the loss gradients, reused every step
	scratch  nn.Arena      // the gradients of losses computed again, thrown away
	evalGrad nn.Arena      // with Wire.EvalWindow: an evaluation chunk's gradient, thrown away

	// messages reused every step (see reused)
	bwdOut   reused[Backward]
	stepLoss StepLoss
}

// NewLoss returns the loss actor, whose loss may use up to threads
// goroutines (as nn.Pass.Threads).
func NewLoss(id int, g *Graph, loss nn.Loss, holdBackwards bool, threads int) *Loss {
	return &Loss{base: newBase(id, "loss", g), loss: loss, holdBackwards: holdBackwards, threads: threads,
		parts: map[partKey][]*tensor.Tensor{}, outs: map[partKey]*tensor.Tensor{}, targets: map[partKey]*Target{},
		later: map[int]lossPart{}}
}

// lossPart is a micro-batch whose gradient went back before its loss could
// be added: its output stays in its stage's arena until the step is over.
type lossPart struct {
	t   *Target
	out *tensor.Tensor
}

func (l *Loss) Receive(ctx actor.Context) {
	msg, ok := l.receive(ctx)
	if !ok {
		return
	}
	switch m := msg.(type) {
	case *Wire:
		l.w, l.coord = *m, m.Coordinator
		l.arenas.one = m.OneArena
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
		l.seq, l.next, l.sum = seq, 0, nn.LossSum{Loss: l.loss, Threads: l.threads}
		for r := range l.held {
			l.held[r], l.got[r] = l.held[r][:0], 0
		}
		clear(l.later)
	}
}

// drain handles every micro-batch whose output and target are both here:
// evaluation chunks and training gradients in any order, the training loss
// strictly in micro-batch order.
func (l *Loss) drain(ctx actor.Context) {
	for k, out := range l.outs {
		t := l.targets[k]
		if t == nil {
			continue
		}
		delete(l.outs, k)
		delete(l.targets, k)
		if k.eval {
			l.work(ctx, SpanEval, t.Step, t.Micro, func() error { return l.evaluate(ctx, t, out) })
		} else if !l.work(ctx, SpanForward, t.Step, t.Micro, func() error { return l.train(ctx, t, out) }) {
			return
		}
	}
}

func (l *Loss) train(ctx actor.Context, t *Target, out *tensor.Tensor) error {
	l.sum.Total = t.Total
	// the gradients of the step's micro-batches lie in one block, so the
	// last layer's weight gradient can run once over the step
	a := l.arenas.at(t.Seq, t.Micro)
	l.arenas.share(a, t.Row, t.Rows, t.Total)
	var grad *tensor.Tensor
	if t.Micro == l.next {
		grad = l.sum.Add(a, out, t.T)
		l.next++
	} else { // its loss is added in its turn
		early := nn.LossSum{Loss: l.loss, Total: t.Total, Threads: l.threads}
		grad = early.Add(a, out, t.T)
		l.later[t.Micro] = lossPart{t, out}
	}
	if !grad.IsFinite() {
		return &nn.NonFiniteError{Step: t.Step, Where: "loss"}
	}
	// the held outputs are read before this gradient leaves: once the
	// step's last one has, the next step may reuse their buffers
	if err := l.addLater(ctx, t); err != nil {
		return err
	}
	b := l.bwdOut.at(t.Micro * len(l.w.Prev))
	*b = Backward{Step: t.Step, Micro: t.Micro, DY: grad}
	l.backward(ctx, t, b)
	return nil
}

// backward sends b back to t's replica, or under GPipe holds it until that
// replica's last forward of the step is here. t is read before anything
// is sent: once the step's last gradient has gone, the coordinator may
// reuse it for the next step.
func (l *Loss) backward(ctx actor.Context, t *Target, b *Backward) {
	r, share := t.Replica, t.Share
	if share == 0 {
		share = t.Micros
	}
	for len(l.held) <= r {
		l.held, l.got = append(l.held, nil), append(l.got, 0)
	}
	l.got[r]++
	if !l.holdBackwards {
		l.sendBack(ctx, r, b)
		return
	}
	l.held[r] = append(l.held[r], b)
	if l.got[r] == share {
		for _, h := range l.held[r] {
			l.sendBack(ctx, r, h)
		}
		l.held[r] = l.held[r][:0]
	}
}

// addLater adds, in order, the losses of the micro-batches whose turn has
// come, and reports the step's loss once all are in.
func (l *Loss) addLater(ctx actor.Context, t *Target) error {
	for {
		p, ok := l.later[l.next]
		if !ok {
			break
		}
		delete(l.later, l.next)
		l.scratch.Reset()
		l.sum.Add(&l.scratch, p.out, p.t.T)
		l.next++
	}
	if l.next < t.Micros {
		return nil
	}
	total := l.sum.Mean()
	if math.IsNaN(total) || math.IsInf(total, 0) {
		return &nn.NonFiniteError{Step: t.Step, Where: "loss"}
	}
	l.stepLoss = StepLoss{Step: t.Step, Loss: total}
	l.send(ctx, l.coord, &l.stepLoss)
	return nil
}

// sendBack splits the output gradient by the last position's column blocks
// and sends them to replica r's actors there; b, one of bwdOut, goes itself
// to the first block's actor.
func (l *Loss) sendBack(ctx actor.Context, r int, b *Backward) {
	prev := l.w.Prev
	if r > 0 {
		prev = l.w.Chains[r]
	}
	if len(l.w.PrevSplit) <= 2 {
		l.send(ctx, prev[0], b)
		return
	}
	for k, block := range splitCols(b.DY, l.w.PrevSplit) {
		m := b
		if k > 0 {
			m = l.bwdOut.at(b.Micro*len(prev) + k)
		}
		*m = Backward{Step: b.Step, Micro: b.Micro, DY: block}
		l.send(ctx, prev[k], m)
	}
}

func (l *Loss) evaluate(ctx actor.Context, t *Target, out *tensor.Tensor) error {
	part := &EvalPart{Chunk: t.Micro, Rows: t.Rows}
	var a *nn.Arena
	if l.w.EvalWindow > 0 {
		a = &l.evalGrad
		a.Reset()
	}
	part.Loss, _ = l.loss.ComputeIn(a, out, t.T, 0)
	if t.T.Labels != nil && t.T.Rows() != t.Rows {
		return fmt.Errorf("actors: evaluation chunk %d has %d labels for %d rows", t.Micro, len(t.T.Labels), t.Rows)
	}
	if t.T.Labels != nil {
		part.Correct = t.T.Correct(out)
	}
	l.send(ctx, l.coord, part)
	return nil
}
