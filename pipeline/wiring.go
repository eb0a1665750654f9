package pipeline

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
)

// wire tells every stage actor its neighbours, and waits until all know them
// before any work starts (a stage's first forward may come from another
// process than its wiring), then wires the loss and optimizer actors.
func (e *Engine) wire() error {
	var wired []*actor.Future
	for r := range e.plan.Replicas {
		for i := range e.plan.Positions {
			for _, id := range e.plan.Chain(r, i) {
				w := e.wiring(r, i)
				if e.plan.Replicas > 1 && e.plan.Slots[id].HasParams() {
					copies := e.plan.Copies(id)
					w.Copies, w.CopyNames, w.OwnCopies = e.pids(copies), e.namesOf(copies), e.plan.OwnCopies()
				}
				f, err := e.future(e.stages[id], &w, queryTimeout)
				if err != nil {
					return err
				}
				wired = append(wired, f)
			}
		}
	}
	for _, f := range wired {
		if _, err := e.answer(f); err != nil {
			return fmt.Errorf("pipeline: wiring the stages: %w", err)
		}
	}
	p := len(e.plan.Positions)
	last := e.plan.Positions[p-1]
	chains := make([][]*actor.PID, e.plan.Replicas)
	for r := range chains {
		chains[r] = e.pids(e.plan.Chain(r, p-1))
	}
	e.graph.Sent(e.loss)
	e.graph.Sent(e.opt)
	e.root.Send(e.loss, &actors.Wire{Coordinator: e.coord, Prev: chains[0], Chains: chains, PrevSplit: last.Split, InShards: len(last.Slots), OneArena: e.oneArena(), EvalWindow: e.plan.EvalWindow})
	e.root.Send(e.opt, &actors.Wire{Coordinator: e.coord})
	return nil
}

// oneArena reports whether the micro-batches of a step may take turns in
// one arena in each actor (actors.Wire.OneArena): under the sequential
// schedule a micro-batch's backward is over everywhere before the next
// one's forward starts, unless weight gradients wait for the step's end
// (split backward) or replicas share a step's rows.
func (e *Engine) oneArena() bool {
	return e.plan.Schedule.OneAtATime() && !e.plan.SplitBackward && e.plan.Replicas == 1
}

// wiring is how replica r's stage actors at position i are linked to their
// neighbours and the engine's actors.
func (e *Engine) wiring(r, i int) actors.Wire {
	pos := e.plan.Positions
	p := len(pos)
	w := actors.Wire{Coordinator: e.coord, Optimizer: e.opt, InShards: 1, OutShards: 1, Replica: r,
		Limit: e.plan.Schedule.Limit(i, p, e.plan.Micro), SplitBackward: e.plan.SplitBackward, OneArena: e.oneArena(), EvalWindow: e.plan.EvalWindow,
		EachDone: e.plan.Schedule.OneAtATime()}
	if e.plan.Schedule.Programmed() {
		w.Schedule, w.Stages, w.Chunks = e.plan.Schedule, p/e.plan.Chunks, e.plan.Chunks
	}
	if i > 0 {
		prev := e.plan.Chain(r, i-1)
		w.Prev, w.PrevNames = e.pids(prev), e.namesOf(prev)
		w.PrevSplit = pos[i-1].Split
		w.InShards = len(w.Prev)
	}
	if i+1 < p {
		next := e.plan.Chain(r, i+1)
		w.Next, w.NextNames = e.pids(next), e.namesOf(next)
		w.OutShards = len(w.Next)
	} else {
		w.Next, w.NextNames = []*actor.PID{e.loss}, []string{"loss"}
	}
	if r == 0 { // the others add into replica 0's gradients before it swaps them
		w.Tied = e.tiedLinks(i)
	}
	return w
}

// tiedLinks returns the copies of tied weights that position i's stage
// holds (a tied head's position is one stage: checkTies refuses shards).
func (e *Engine) tiedLinks(i int) []actors.TiedLink {
	var out []actors.TiedLink
	for k, t := range nn.Ties(e.model.Specs) {
		emb, embAt := e.tiedCopy(t.Embedding)
		head, headAt := e.tiedCopy(t.Head)
		for _, c := range []struct {
			slot, param, other, otherAt int
			head                        bool
		}{{emb, embAt, head, headAt, false}, {head, headAt, emb, embAt, true}} {
			if e.plan.Slots[c.slot].Position != i {
				continue
			}
			l := actors.TiedLink{Tie: k, Param: c.param, Head: c.head}
			if c.other == c.slot {
				l.Other = c.otherAt
			} else {
				l.Peer = e.stages[c.other]
			}
			out = append(out, l)
		}
	}
	return out
}

// tiedCopy returns the slot holding layer's "weight" and its index among
// that stage's parameters.
func (e *Engine) tiedCopy(layer int) (slot, param int) {
	for id, s := range e.plan.Slots[:e.plan.PerReplica()] {
		for param, p := range s.Params {
			if p.Layer == layer && p.Name == "weight" {
				return id, param
			}
		}
	}
	panic(fmt.Errorf("pipeline: no stage holds layer %d's weight", layer))
}
