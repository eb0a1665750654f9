package actors

import (
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// gather stores part of the input of key k and, once all n parts are there,
// returns them joined by columns in part order.
func gather(pending map[partKey][]*tensor.Tensor, k partKey, n, part int, x *tensor.Tensor) (*tensor.Tensor, bool) {
	if n == 1 {
		return x, true // one sender: nothing to wait for or join
	}
	parts := pending[k]
	if parts == nil {
		parts = make([]*tensor.Tensor, n)
	}
	parts[part] = x
	for _, p := range parts {
		if p == nil {
			pending[k] = parts
			return nil, false
		}
	}
	delete(pending, k)
	if len(parts) == 1 {
		return parts[0], true
	}
	return ops.Concat(1, parts...), true
}

// splitCols cuts g into the column blocks given by bounds (len(bounds)-1 blocks).
func splitCols(g *tensor.Tensor, bounds []int) []*tensor.Tensor {
	if len(bounds) <= 2 {
		return []*tensor.Tensor{g}
	}
	rows := g.Shape()[0]
	shapes := make([][]int, len(bounds)-1)
	for k := range shapes {
		shapes[k] = []int{rows, bounds[k+1] - bounds[k]}
	}
	return ops.ConcatBackward(g, 1, shapes...)
}

// reused holds the messages an actor sends on the step path, one per
// micro-batch or per receiver, so that each step rewrites the previous step's
// structs instead of allocating. A message is read by its receiver within its
// step and kept by no one after it: the next step starts only when every
// actor is done with this one (the coordinator answers a step last).
type reused[T any] []*T

// at returns message i, as the last step left it: the caller assigns all of it.
func (r *reused[T]) at(i int) *T {
	for len(*r) <= i {
		*r = append(*r, new(T))
	}
	return (*r)[i]
}

// arenas holds one nn.Arena per micro-batch for an actor's outputs. A step
// starts only when the previous one is over everywhere (every backward done,
// every update applied), so the first request of a step frees what the
// arenas lent in the previous one. Steps are told apart by Forward.Seq, which
// the coordinator counts, so a caller reusing a step number changes nothing.
type arenas struct {
	seq  int
	per  []*nn.Arena
	rows nn.StepRows // shared by per: each micro-batch's rows of step-wide tensors

	// one (Wire.OneArena): every micro-batch uses per[0], freed when the
	// next micro-batch (micro) makes its first request
	one   bool
	micro int
}

// at returns the arena of micro-batch m of training step seq.
func (a *arenas) at(seq, m int) *nn.Arena {
	if seq != a.seq || a.one && m != a.micro {
		for _, x := range a.per {
			x.Reset()
		}
		a.seq, a.micro = seq, m
	}
	if a.one {
		m = 0
	}
	for len(a.per) <= m {
		a.per = append(a.per, new(nn.Arena))
	}
	return a.per[m]
}

// current returns the arena of micro-batch m of the step in progress.
func (a *arenas) current(m int) *nn.Arena { return a.at(a.seq, m) }

// share lends arena x the step-wide rows [lo, lo+rows) of total, unless
// the micro-batches take turns in one arena: then a step keeps one
// micro-batch's tensors, and nothing runs once over the whole step.
func (a *arenas) share(x *nn.Arena, lo, rows, total int) {
	if !a.one {
		x.Share(&a.rows, lo, lo+rows, total)
	}
}
