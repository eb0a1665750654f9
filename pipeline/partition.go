package pipeline

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// Partition splits layers with the given costs into n groups of consecutive
// layers that minimise the largest group's cost, returning each group's first
// index and a final len(costs). With n >= len(costs) every layer is its own group.
func Partition(costs []float64, n int) []int {
	l := len(costs)
	if n >= l {
		b := make([]int, l+1)
		for i := range b {
			b[i] = i
		}
		return b
	}
	prefix := make([]float64, l+1)
	for i, c := range costs {
		prefix[i+1] = prefix[i] + c
	}
	// best[g][i]: the least largest cost of splitting layers [0, i) into g groups.
	best := make([][]float64, n+1)
	cut := make([][]int, n+1)
	for g := range best {
		best[g] = make([]float64, l+1)
		cut[g] = make([]int, l+1)
		for i := range best[g] {
			best[g][i] = math.Inf(1)
		}
	}
	best[0][0] = 0
	for g := 1; g <= n; g++ {
		for i := g; i <= l; i++ {
			for j := g - 1; j < i; j++ {
				c := math.Max(best[g-1][j], prefix[i]-prefix[j])
				if c < best[g][i] {
					best[g][i], cut[g][i] = c, j
				}
			}
		}
	}
	bounds := []int{l}
	for g, i := n, l; g > 0; g-- {
		i = cut[g][i]
		bounds = append(bounds, i)
	}
	slices.Reverse(bounds)
	return bounds
}

// MeasureCosts times each layer's forward and backward on a sample of rows
// random inputs of width features, the least of reps runs after one
// uncounted warm-up, outputs lent by an arena as in a pipeline (fresh
// allocations would cost an element-wise layer more than its work), with kernels on
// up to threads goroutines and the products in precision pr (a bf16 run's
// products cost less than its element-wise layers), and leaves the layers as
// they were (no caches, zero gradients, batch norm's running statistics
// untouched).
func MeasureCosts(layers []nn.Layer, features, rows, reps, threads int, dt tensor.DType, pr nn.Precision) ([]float64, error) {
	fwd, bwd, err := measurePasses(layers, features, rows, reps, threads, dt, pr)
	if err != nil {
		return nil, err
	}
	costs := make([]float64, len(layers))
	for i := range costs {
		costs[i] = (fwd[i] + bwd[i]).Seconds()
	}
	return costs, nil
}

// measurePasses is MeasureCosts's timing with each layer's forward and
// backward apart, from the run whose sum was the least.
func measurePasses(layers []nn.Layer, features, rows, reps, threads int, dt tensor.DType, pr nn.Precision) (fwd, bwd []time.Duration, err error) {
	fwd, bwd = make([]time.Duration, len(layers)), make([]time.Duration, len(layers))
	// training passes move batch norm's running statistics: put them back
	var saved [][]*tensor.Tensor
	for _, l := range layers {
		var vals []*tensor.Tensor
		for _, b := range nn.BuffersOf(l) {
			vals = append(vals, b.Value.Clone())
		}
		saved = append(saved, vals)
	}
	defer func() {
		for i, l := range layers {
			l.Reset()
			l.ZeroGrad()
			for j, b := range nn.BuffersOf(l) {
				b.Value.CopyFrom(saved[i][j])
			}
		}
	}()
	arena := &nn.Arena{}
	for r := range reps + 1 {
		arena.Reset()
		p := nn.Pass{Step: 0, Micro: -1 - r, Train: true, Threads: threads, Arena: arena, Precision: pr}
		h := tensor.Zeros(dt, rows, features) // zeros: token ids too, for an embedding
		outs := make([]*tensor.Tensor, len(layers))
		f, b := make([]time.Duration, len(layers)), make([]time.Duration, len(layers))
		for i, l := range layers {
			start := time.Now()
			h = runSafely(func() *tensor.Tensor { return l.Forward(p, h) })
			if h == nil {
				return nil, nil, fmt.Errorf("pipeline: layer %d (%s) failed on a sample of %d rows", i, l.Kind(), rows)
			}
			f[i] = time.Since(start)
			outs[i] = h
		}
		g := tensor.Full(dt, 1e-3, h.Shape()...)
		for i := len(layers) - 1; i >= 0; i-- {
			start := time.Now()
			g = runSafely(func() *tensor.Tensor { return layers[i].Backward(p, g, i > 0) })
			if g == nil && i > 0 {
				return nil, nil, fmt.Errorf("pipeline: layer %d (%s) failed backward on a sample", i, layers[i].Kind())
			}
			b[i] = time.Since(start)
		}
		for i := range f {
			if r > 0 && (r == 1 || f[i]+b[i] < fwd[i]+bwd[i]) {
				fwd[i], bwd[i] = f[i], b[i]
			}
		}
	}
	return fwd, bwd, nil
}

func runSafely(f func() *tensor.Tensor) (t *tensor.Tensor) {
	defer func() {
		if recover() != nil {
			t = nil
		}
	}()
	return f()
}
