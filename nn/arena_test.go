package nn_test

import (
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

func TestArenaReusesInOrder(t *testing.T) {
	a := new(nn.Arena)
	x := a.Tensor(tensor.Float32, 2, 3)
	y := a.Like(x)
	z := a.Tensor(tensor.Float64, 4)
	if x == y || y == z {
		t.Fatal("one step's requests share a tensor")
	}
	a.Reset()
	for i, c := range []struct {
		got, want *tensor.Tensor
	}{{a.Tensor(tensor.Float32, 2, 3), x}, {a.Like(x), y}, {a.Tensor(tensor.Float64, 4), z}} {
		if c.got != c.want {
			t.Errorf("request %d after Reset: got a new tensor, want the one lent before", i)
		}
	}
	a.Reset()
	// A changed request (a smaller last batch) gets a fresh tensor of its shape.
	if w := a.Tensor(tensor.Float32, 1, 3); w == x || !w.HasShape(1, 3) {
		t.Errorf("changed request: got %v (same as before: %v), want a new [1 3] tensor", w.Shape(), w == x)
	}
	if w := a.Tensor(tensor.Float32, 2, 3); w == x || w.DType() != tensor.Float32 {
		t.Errorf("dtype change: got %v %v", w.DType(), w.Shape())
	}
}

func TestArenaNilAllocatesZeros(t *testing.T) {
	var a *nn.Arena
	x := a.Tensor(tensor.Float32, 3)
	y := a.Like(x)
	if x == y || x.At(0) != 0 || y.Size() != 3 {
		t.Errorf("nil arena: got %v and %v, want two distinct zero tensors", x, y)
	}
	a.Reset() // no-op
}

func TestArenaAllocationFree(t *testing.T) {
	a := new(nn.Arena)
	x := tensor.Zeros(tensor.Float32, 128, 512)
	run := func() {
		a.Reset()
		a.Tensor(tensor.Float32, 128, 512)
		a.Like(x)
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("a reused arena allocates %v times per step, want 0", n)
	}
}
