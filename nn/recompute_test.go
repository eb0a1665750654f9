package nn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// recomputeRun is what a model's training passes left: each micro-batch's
// output and first input gradient, the parameter gradients, and the bytes
// each micro-batch's forward lent from its arena.
type recomputeRun struct {
	outs, dxs []*tt
	grads     []*tt
	lent      []int64
}

// runRecompute builds a tiny GPT's blocks (behind an embedding-free input
// of tokens × dim features) with recompute r and runs micros micro-batches
// of x as GPipe does: every forward, then the backwards in reverse order,
// each micro-batch with an arena of its own and one scratch for all.
func runRecompute(t *testing.T, dt tensor.DType, pr nn.Precision, r nn.Recompute, dropout float64, micros int, x, dy *tt, tokens, dim int) recomputeRun {
	t.Helper()
	specs := []nn.Spec{
		{Type: "transformer_block", Heads: 2, Dropout: dropout, Init: nn.GPT, Recompute: string(r)},
		{Type: "transformer_block", Heads: 2, Dropout: dropout, Init: nn.GPT, Recompute: string(r)},
	}
	layers, err := nn.BuildShape(specs, []int{tokens, dim}, 11, dt, 0, len(specs))
	if err != nil {
		t.Fatal(err)
	}
	n := x.Dim(0) / micros
	arenas := make([]*nn.Arena, micros)
	scratch := new(nn.Arena)
	pass := func(m int) nn.Pass {
		return nn.Pass{Step: 2, Micro: m, Row: m * n, Train: true, Arena: arenas[m], Scratch: scratch, Weights: 1, Micros: micros, Threads: 2, Precision: pr}
	}
	var run recomputeRun
	for m := range micros {
		arenas[m] = new(nn.Arena)
		h := nn.Rows(x, m*n, (m+1)*n)
		for _, l := range layers {
			h = l.Forward(pass(m), h)
		}
		run.outs = append(run.outs, h.Clone())
		run.lent = append(run.lent, arenas[m].Lent())
	}
	for _, l := range layers {
		if got := l.InFlight(); got != micros {
			t.Errorf("%s: %d micro-batches in flight after the forwards, want %d", r, got, micros)
		}
	}
	run.dxs = make([]*tt, micros)
	for m := micros - 1; m >= 0; m-- {
		g := nn.Rows(dy, m*n, (m+1)*n)
		for i := len(layers) - 1; i >= 0; i-- {
			g = layers[i].Backward(pass(m), g, true)
		}
		run.dxs[m] = g.Clone()
	}
	for _, l := range layers {
		if got := l.InFlight(); got != 0 {
			t.Errorf("%s: %d micro-batches in flight after the backwards, want 0", r, got)
		}
		run.grads = append(run.grads, cloneGrads(l.Params())...)
	}
	return run
}

// TestTransformerRecompute: a block that recomputes the attention
// probabilities or the whole block gives the outputs, input gradients and
// parameter gradients of one that keeps everything, bit for bit, with
// several micro-batches in flight, with dropout, in both dtypes and in
// bf16 products; and its forwards lend only what the backward keeps: the
// probabilities and the attention's output fewer under attention, the
// block's output alone under blocks.
func TestTransformerRecompute(t *testing.T) {
	const tokens, dim, heads, blocks = 37, 8, 2, 2 // 37 tokens: a short block of 32 rows
	for _, c := range []struct {
		dt      tensor.DType
		pr      nn.Precision
		dropout float64
		micros  int
	}{
		{tensor.Float32, nn.FP32, 0, 1},
		{tensor.Float32, nn.FP32, 0.2, 3},
		{tensor.Float64, nn.FP32, 0.2, 2},
		{tensor.Float32, nn.BF16, 0.1, 2},
		{tensor.Float32, nn.BF16Pairs, 0, 3},
	} {
		name := fmt.Sprintf("%v %v dropout %v micros %d", c.dt, c.pr, c.dropout, c.micros)
		t.Run(name, func(t *testing.T) {
			rows := 2 * c.micros
			rng := newRNG(21)
			x, dy := randN(rng, c.dt, 1, rows, tokens*dim), randN(rng, c.dt, 1, rows, tokens*dim)
			want := runRecompute(t, c.dt, c.pr, nn.RecomputeNone, c.dropout, c.micros, x, dy, tokens, dim)
			size := int64(4)
			if c.dt == tensor.Float64 {
				size = 8
			}
			perRow := map[nn.Recompute]int64{
				nn.RecomputeNone:      want.lent[0] / 2,
				nn.RecomputeAttention: want.lent[0]/2 - blocks*(heads*tokens*tokens+tokens*dim)*size,
				nn.RecomputeBlocks:    blocks * tokens * dim * size,
			}
			for _, r := range []nn.Recompute{nn.RecomputeAttention, nn.RecomputeBlocks} {
				got := runRecompute(t, c.dt, c.pr, r, c.dropout, c.micros, x, dy, tokens, dim)
				for m := range c.micros {
					if !sameBits(got.outs[m], want.outs[m]) {
						t.Errorf("%s: output of micro-batch %d differs by %g", r, m, maxDiff(got.outs[m], want.outs[m]))
					}
					if !sameBits(got.dxs[m], want.dxs[m]) {
						t.Errorf("%s: dx of micro-batch %d differs by %g", r, m, maxDiff(got.dxs[m], want.dxs[m]))
					}
					if w := 2 * perRow[r]; got.lent[m] != w {
						t.Errorf("%s: micro-batch %d's forward lent %d bytes, want %d (none: %d)", r, m, got.lent[m], w, want.lent[m])
					}
				}
				for i, g := range got.grads {
					if !sameBits(g, want.grads[i]) {
						t.Errorf("%s: gradient %d differs by %g", r, i, maxDiff(g, want.grads[i]))
					}
				}
			}
		})
	}
}

// TestRecomputeSpec: a spec's recompute reaches the block; an unknown one
// is an error naming it.
func TestRecomputeSpec(t *testing.T) {
	for _, c := range []struct {
		recompute string
		want      nn.Recompute
		err       string
	}{
		{"", nn.RecomputeNone, ""},
		{"none", nn.RecomputeNone, ""},
		{"attention", nn.RecomputeAttention, ""},
		{"blocks", nn.RecomputeBlocks, ""},
		{"layers", "", `recompute "layers" is not one of [none attention blocks]`},
	} {
		specs := []nn.Spec{{Type: "transformer_block", Heads: 2, Init: nn.GPT, Recompute: c.recompute}}
		layers, err := nn.BuildShape(specs, []int{4, 8}, 1, tensor.Float32, 0, 1)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "layer 0 (transformer_block)") {
				t.Errorf("recompute %q: %v, want an error saying %q", c.recompute, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("recompute %q: %v", c.recompute, err)
		}
		if got := layers[0].(*nn.TransformerBlock).Recompute; got != c.want {
			t.Errorf("recompute %q: the block has %q, want %q", c.recompute, got, c.want)
		}
	}
}

// BenchmarkTransformerRecompute: a training forward and backward of one
// block of the bench's GPT (width 192, 6 heads, context 256, 2 sequences)
// on two threads, per recompute mode.
func BenchmarkTransformerRecompute(b *testing.B) {
	const tokens, dim, rows = 256, 192, 8
	x, dy := randN(newRNG(1), tensor.Float32, 1, rows, tokens*dim), randN(newRNG(2), tensor.Float32, 1, rows, tokens*dim)
	for _, threads := range []int{1, 2} {
		for _, r := range nn.Recomputes {
			benchRecompute(b, r, threads, x, dy, tokens, dim)
		}
	}
}

// benchRecompute times a forward and a backward of one block recomputing
// as r, its kernels on threads goroutines (a stage of two on two cores has
// one).
func benchRecompute(b *testing.B, r nn.Recompute, threads int, x, dy *tensor.Tensor, tokens, dim int) {
	b.Run(fmt.Sprintf("threads=%d/%s", threads, r), func(b *testing.B) {
		specs := []nn.Spec{{Type: "transformer_block", Heads: 6, Init: nn.GPT, Recompute: string(r)}}
		layers, err := nn.BuildShape(specs, []int{tokens, dim}, 1, tensor.Float32, 0, 1)
		if err != nil {
			b.Fatal(err)
		}
		arena, scratch := new(nn.Arena), new(nn.Arena)
		for i := range b.N {
			arena.Reset()
			p := nn.Pass{Step: i + 1, Train: true, Arena: arena, Scratch: scratch, Weights: 1, Threads: threads}
			layers[0].Forward(p, x)
			layers[0].Backward(p, dy, true)
		}
	})
}

// TestRecomputeAllocations: a block that recomputes allocates nothing in a
// steady step: its forward and its backward's recomputation ask the
// scratch for the same tensors.
func TestRecomputeAllocations(t *testing.T) {
	const tokens, dim = 40, 8
	x, dy := randN(newRNG(3), tensor.Float32, 1, 2, tokens*dim), randN(newRNG(4), tensor.Float32, 1, 2, tokens*dim)
	for _, r := range nn.Recomputes {
		specs := []nn.Spec{{Type: "transformer_block", Heads: 2, Init: nn.GPT, Recompute: string(r)}}
		layers, err := nn.BuildShape(specs, []int{tokens, dim}, 1, tensor.Float32, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		arena, scratch := new(nn.Arena), new(nn.Arena)
		step := 0
		run := func() {
			step++
			arena.Reset()
			p := nn.Pass{Step: step, Train: true, Arena: arena, Scratch: scratch, Weights: 1, Threads: 1}
			layers[0].Forward(p, x)
			layers[0].Backward(p, dy, true)
		}
		run()
		held := scratch.Held()
		if n := testing.AllocsPerRun(5, run); n != 0 {
			t.Errorf("%s: %v allocations a step, want 0", r, n)
		}
		if scratch.Held() != held {
			t.Errorf("%s: the scratch grew from %d to %d bytes after the first step", r, held, scratch.Held())
		}
	}
}
