package pipeline

import (
	"fmt"
	"strings"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// The training state gathered from the stage actors and handed back to
// them: weights, buffers and optimizer state, and the actors' counters.

// Snapshot returns copies of every parameter, named "<layer>.<param>" with
// shards joined back into whole tensors, and of the optimizer state, gathered
// from the stages that hold it into one State over the global parameter order
// (the order of nn.Sequential.Params), as one optimizer over the whole model
// would have it.
func (e *Engine) Snapshot() (map[string]*tensor.Tensor, optim.State, error) {
	return e.snapshot(copied)
}

// ReadState calls read with the parameters and optimizer state as
// Snapshot names them, but, for the stages in this process, the actors'
// own tensors rather than copies: a checkpoint writes GPT-2 small's 1.5 GB
// of weights and moments without a second 1.5 GB. read must neither keep
// nor change them, and the engine runs nothing until read returns.
func (e *Engine) ReadState(read func(weights map[string]*tensor.Tensor, st optim.State) error) error {
	weights, st, err := e.snapshot(lent)
	if err != nil {
		return err
	}
	return read(weights, st)
}

// snapshotMode is how a snapshot takes the stages' tensors.
type snapshotMode int

const (
	copied snapshotMode = iota // fresh copies, the caller's
	reused                     // copies into the engine's move buffers, valid until the next reusing snapshot
	lent                       // the actors' own (in this process), read while the engine waits
)

// MoveTo moves the training state, weights and optimizer state, into dst,
// an engine of the same model in any layout. It reuses this engine's copies
// from its last move, so that moving back and forth (pipeline "auto" trying
// layouts) faults in no new memory.
func (e *Engine) MoveTo(dst *Engine) error {
	weights, st, err := e.snapshot(reused)
	if err != nil {
		return err
	}
	return dst.Restore(weights, st)
}

// snapshot is Snapshot, its tensors taken as mode says.
func (e *Engine) snapshot(mode snapshotMode) (map[string]*tensor.Tensor, optim.State, error) {
	weights := map[string][]*tensor.Tensor{}
	slots := map[string][]*tensor.Tensor{} // "<global index>.<slot>" to its shards' parts
	var order []string
	st := optim.State{Tensors: map[string]*tensor.Tensor{}}
	first := true
	if mode == reused && e.moveBuf == nil {
		e.moveBuf = make([]*actors.Params, len(e.stages))
		for i := range e.moveBuf {
			e.moveBuf[i] = new(actors.Params)
		}
	}
	answers, err := e.askAll(func(i int) any {
		switch mode {
		case reused:
			return &actors.GetParams{Into: e.moveBuf[i]}
		case lent:
			return &actors.GetParams{Lend: true}
		}
		return &actors.GetParams{}
	})
	if err != nil {
		return nil, optim.State{}, err
	}
	for _, res := range answers {
		p := res.(*actors.Params)
		for i, name := range p.Names {
			if weights[name] == nil {
				order = append(order, name)
			}
			weights[name] = append(weights[name], p.Values[i])
		}
		if len(p.Names) == 0 {
			continue
		}
		if first {
			st.Kind, st.Step, first = p.State.Kind, p.State.Step, false
		} else if p.State.Kind != st.Kind || p.State.Step != st.Step {
			return nil, optim.State{}, fmt.Errorf("pipeline: stage optimizers disagree: %s at step %d and %s at step %d", st.Kind, st.Step, p.State.Kind, p.State.Step)
		}
		if p.State.NumParams > 0 {
			st.NumParams = len(e.global)
		}
		for local, t := range p.State.Tensors {
			i, slot, err := optim.SplitStateName(local, len(p.Names))
			if err != nil {
				return nil, optim.State{}, err
			}
			g := optim.StateName(e.global[p.Names[i]], slot)
			slots[g] = append(slots[g], t)
		}
	}
	out := map[string]*tensor.Tensor{}
	for _, name := range order {
		out[name] = joinRows(weights[name])
	}
	for name, parts := range slots {
		st.Tensors[name] = joinRows(parts)
	}
	return out, st, nil
}

// Restore sets every parameter from weights (as Snapshot names them), and
// hands each stage its part of the optimizer state st (as Snapshot makes it);
// replicas holding their own weights get the same values.
func (e *Engine) Restore(weights map[string]*tensor.Tensor, st optim.State) error {
	for name, shape := range e.shapes {
		w, ok := weights[name]
		if !ok || !tensor.EqualShapes(w.Shape(), shape) {
			return fmt.Errorf("pipeline: parameter %q is missing or does not have shape %v", name, shape)
		}
	}
	if st.NumParams != 0 && st.NumParams != len(e.global) {
		return fmt.Errorf("pipeline: optimizer state is for %d parameters, the model has %d", st.NumParams, len(e.global))
	}
	for name := range st.Tensors { // checked before any stage changes
		if _, _, err := optim.SplitStateName(name, len(e.global)); err != nil {
			return err
		}
	}
	names, err := e.askAll(func(int) any { return &actors.GetParams{NamesOnly: true} })
	if err != nil {
		return err
	}
	sets := e.restoreSets(names, weights, st)
	targets := e.stages[:len(names)]
	if e.plan.OwnCopies() { // the other replicas' own copies of the weights, with no optimizer state
		targets = e.stages
		for id := len(names); id < len(sets); id++ {
			sets[id] = &actors.SetParams{Values: sets[id%len(names)].Values}
		}
	}
	acks, err := e.askEach(targets, func(i int) any { return sets[i] })
	if err != nil {
		return err
	}
	for _, a := range acks {
		if err := a.(*actors.Ack).Err; err != nil {
			return err
		}
	}
	return nil
}

// restoreSets makes each owner's SetParams from weights and st, given the
// names its stage reported: its rows of sharded tensors, and its part of
// the optimizer state under its local indices.
func (e *Engine) restoreSets(names []any, weights map[string]*tensor.Tensor, st optim.State) []*actors.SetParams {
	sets := make([]*actors.SetParams, len(e.stages))
	for _, pos := range e.plan.Positions {
		for shard, id := range pos.Slots {
			p := names[id].(*actors.Params)
			sets[id] = &actors.SetParams{}
			if len(p.Names) == 0 {
				continue
			}
			// this shard's rows of a whole tensor
			rows := func(t *tensor.Tensor) *tensor.Tensor {
				if len(pos.Slots) > 1 {
					return nn.SliceRows(t, pos.Units[shard], pos.Units[shard+1])
				}
				return t
			}
			values := make([]*tensor.Tensor, len(p.Names))
			local := optim.State{Kind: st.Kind, Step: st.Step, Tensors: map[string]*tensor.Tensor{}}
			if st.NumParams > 0 {
				for _, name := range p.Names {
					if _, ok := e.global[name]; ok { // a parameter, not a buffer
						local.NumParams++
					}
				}
			}
			for i, name := range p.Names {
				values[i] = rows(weights[name])
				g, ok := e.global[name]
				if !ok {
					continue // a buffer: no optimizer state
				}
				prefix := fmt.Sprintf("%d.", g)
				for g, t := range st.Tensors {
					if slot, ok := strings.CutPrefix(g, prefix); ok {
						local.Tensors[optim.StateName(i, slot)] = rows(t)
					}
				}
			}
			sets[id] = &actors.SetParams{Values: values, State: &local}
		}
	}
	return sets
}

// joinRows stacks tensors along their first axis; one tensor is returned as is.
func joinRows(ps []*tensor.Tensor) *tensor.Tensor {
	if len(ps) == 1 {
		return ps[0]
	}
	var vals []float64
	rows := 0
	for _, p := range ps {
		vals = append(vals, p.Float64s()...)
		rows += p.Shape()[0]
	}
	shape := ps[0].Shape()
	shape[0] = rows
	return tensor.FromFloat64s(ps[0].DType(), vals, shape...)
}

// Stats returns every stage actor's counters since the last reset, keeping the
// spans for the trace.
func (e *Engine) Stats(reset bool) ([]actors.Stats, error) {
	var out []actors.Stats
	for _, pid := range e.all {
		res, err := e.request(pid, &actors.GetStats{Reset: reset})
		if err != nil {
			return nil, err
		}
		s := res.(*actors.Stats)
		if reset {
			e.spans[s.Actor] = append(e.spans[s.Actor], s.Spans...)
		}
		out = append(out, *s)
	}
	return out, nil
}
