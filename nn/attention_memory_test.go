package nn_test

import (
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// blockMemory is what a training forward and backward of one block left:
// the bytes the forward lent (what the backward keeps), the bytes its arena
// and the scratch hold after the backward, and the attention's work.
type blockMemory struct{ lent, held, scratch, work int64 }

func runBlockMemory(t *testing.T, r nn.Recompute, rows, tokens, dim, heads int) blockMemory {
	t.Helper()
	specs := []nn.Spec{{Type: "transformer_block", Heads: heads, Init: nn.GPT, Recompute: string(r)}}
	layers, err := nn.BuildShape(specs, []int{tokens, dim}, 1, tensor.Float32, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, dy := randN(newRNG(1), tensor.Float32, 1, rows, tokens*dim), randN(newRNG(2), tensor.Float32, 1, rows, tokens*dim)
	arena, scratch, work := new(nn.Arena), new(nn.Arena), new(ops.AttentionWork)
	p := nn.Pass{Step: 1, Train: true, Arena: arena, Scratch: scratch, Attention: work, Weights: 1, Threads: 2}
	layers[0].Forward(p, x)
	lent := arena.Lent()
	layers[0].Backward(p, dy, true)
	return blockMemory{lent, arena.Held(), scratch.Held(), work.Bytes()}
}

// TestTransformerAttentionMemory: at the character recipe's width and
// heads (128, 4) and a context of 1024, a block's activations, its
// scratch and its attention's work hold no [T, T] matrix per head: each
// is exactly twice what it is at a context of 512, and what the forward
// keeps is less than the probabilities [N, heads, T, T] alone would be.
func TestTransformerAttentionMemory(t *testing.T) {
	const rows, dim, heads, tokens = 2, 128, 4, 1024
	probs := int64(rows * heads * tokens * tokens * 4)
	for _, r := range nn.Recomputes {
		long, short := runBlockMemory(t, r, rows, tokens, dim, heads), runBlockMemory(t, r, rows, tokens/2, dim, heads)
		t.Logf("%s at T = %d: forward lent %d bytes, arena %d, scratch %d, attention work %d (probabilities alone: %d)",
			r, tokens, long.lent, long.held, long.scratch, long.work, probs)
		if long != (blockMemory{2 * short.lent, 2 * short.held, 2 * short.scratch, 2 * short.work}) {
			t.Errorf("%s: bytes at T = %d are %+v, want twice those at T = %d, %+v", r, tokens, long, tokens/2, short)
		}
		if long.lent >= probs {
			t.Errorf("%s: the forward lent %d bytes, want fewer than the probabilities' %d", r, long.lent, probs)
		}
	}
}
