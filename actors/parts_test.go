package actors

import (
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestArenas checks which arena each micro-batch of a step gets: its own,
// or with one (Wire.OneArena) the same one, freed for each micro-batch and
// lending the same tensors again, so that a step allocates one
// micro-batch's worth.
func TestArenas(t *testing.T) {
	for _, one := range []bool{false, true} {
		a := arenas{one: one}
		lend := func(seq, m int) (*nn.Arena, *tensor.Tensor) {
			x := a.at(seq, m)
			return x, x.Tensor(tensor.Float32, 4, 8)
		}
		x0, t0 := lend(1, 0)
		x1, t1 := lend(1, 1)
		if one != (x0 == x1) || one != (t0 == t1) {
			t.Fatalf("one %v: micro-batches 0 and 1 got the same arena: %v, the same tensor: %v", one, x0 == x1, t0 == t1)
		}
		if got := a.current(1); got != x1 {
			t.Fatalf("one %v: current(1) is not micro-batch 1's arena", one)
		}
		if one && x1.Lent() != 4*8*4 {
			t.Fatalf("one arena after micro-batch 1's request: %d bytes lent, want %d (micro-batch 0's freed)", x1.Lent(), 4*8*4)
		}
		if !one && x0.Lent()+x1.Lent() != 2*4*8*4 {
			t.Fatalf("an arena each: %d and %d bytes lent, want %d each", x0.Lent(), x1.Lent(), 4*8*4)
		}
		// the next step: the same tensors again, for either
		y0, u0 := lend(2, 0)
		if y0 != x0 || u0 != t0 {
			t.Fatalf("one %v: step 2's micro-batch 0 did not get step 1's arena and tensor back", one)
		}
		if n := len(a.per); one && n != 1 || !one && n != 2 {
			t.Fatalf("one %v: %d arenas made", one, n)
		}
	}
}
