package actors

import (
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// gather stores part of the input of key k and, once all n parts are there,
// returns them joined by columns in part order.
func gather(pending map[partKey][]*tensor.Tensor, k partKey, n, part int, x *tensor.Tensor) (*tensor.Tensor, bool) {
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
