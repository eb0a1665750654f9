package nn_test

import (
	"math/rand/v2"
	"slices"
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

// TestStepRowsAdjacent: arenas sharing StepRows lend each micro-batch its rows
// of one step-wide tensor, so consecutive micro-batches' outputs adjoin, the
// views are reused step after step, and Linear's BackwardParamsAll over them
// gives the bits of one BackwardParams per micro-batch.
func TestStepRowsAdjacent(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const in, out, total = 24, 16, 96
	spans := nn.SplitRows(total, 3)
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, total, in)
	dy := tensor.RandNormal(rng, tensor.Float32, 0, 1, total, out)
	run := func(share bool) (gw, gb []float32, views []*tensor.Tensor) {
		l, err := nn.NewLinear(tensor.Float32, in, out, nn.XavierUniform, rand.New(rand.NewPCG(5, 5)))
		if err != nil {
			t.Fatal(err)
		}
		var rows nn.StepRows
		var ps []nn.Pass
		for m, sp := range spans {
			a := new(nn.Arena)
			if share {
				a.Share(&rows, sp.Lo, sp.Hi, total)
			}
			p := nn.Pass{Step: 1, Micro: m, Row: sp.Lo, Train: true, Arena: a}
			// the layer's input comes from an arena too, as in a stage
			xin := a.Tensor(tensor.Float32, sp.Hi-sp.Lo, in)
			xin.CopyFrom(nn.Rows(x, sp.Lo, sp.Hi))
			views = append(views, xin)
			l.Forward(p, xin)
			g := a.Tensor(tensor.Float32, sp.Hi-sp.Lo, out)
			g.CopyFrom(nn.Rows(dy, sp.Lo, sp.Hi))
			l.BackwardInput(p, g)
			ps = append(ps, p)
		}
		if share {
			l.BackwardParamsAll(ps)
		} else {
			for _, p := range ps {
				l.BackwardParams(p)
			}
		}
		return l.GW.Float32s(), l.GB.Float32s(), views
	}
	wantW, wantB, _ := run(false)
	gotW, gotB, views := run(true)
	if !slices.Equal(gotW, wantW) || !slices.Equal(gotB, wantB) {
		t.Errorf("BackwardParamsAll over shared rows differs from BackwardParams per micro-batch")
	}
	for m := 1; m < len(views); m++ {
		prev, cur := views[m-1].Data32(), views[m].Data32()
		if &prev[:cap(prev)][len(prev)] != &cur[0] {
			t.Errorf("micro-batch %d's rows do not follow micro-batch %d's in memory", m, m-1)
		}
	}
}

// TestImageLayersAllocationFree: a CNN's training forward and backward
// through an Arena, 40 rows so that Conv2d's backward runs in two chunks,
// allocates nothing once the arena and the layers' scratch have grown.
func TestImageLayersAllocationFree(t *testing.T) {
	specs := []nn.Spec{
		{Type: "conv2d", Channels: 4, Kernel: 3, Padding: 1, Init: nn.HeUniform}, {Type: "relu"},
		{Type: "maxpool2d", Kernel: 2}, {Type: "batchnorm"}, {Type: "avgpool2d", Kernel: 2},
		{Type: "flatten"}, {Type: "linear", Units: 3, Init: nn.XavierUniform},
	}
	layers, err := nn.BuildShape(specs, []int{2, 8, 8}, 1, tensor.Float32, 0, len(specs))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, 40, 128)
	dy := tensor.RandNormal(rng, tensor.Float32, 0, 1, 40, 3)
	a := new(nn.Arena)
	step := func() {
		a.Reset()
		p := nn.Pass{Step: 1, Train: true, Arena: a}
		h := x
		for _, l := range layers {
			h = l.Forward(p, h)
		}
		g := dy
		for i := len(layers) - 1; i >= 0; i-- {
			g = layers[i].Backward(p, g, true)
		}
	}
	step()
	if n := testing.AllocsPerRun(10, step); n != 0 {
		t.Errorf("a CNN's step through an arena allocates %v times, want 0", n)
	}
}

// TestArenaLent counts the bytes of every tensor lent since Reset, shared
// rows included, and none from a nil arena.
func TestArenaLent(t *testing.T) {
	a := new(nn.Arena)
	x := a.Tensor(tensor.Float32, 3, 4) // 48 bytes
	a.Like(x)                           // 48
	a.Tensor(tensor.Float64, 5)         // 40
	if got := a.Lent(); got != 136 {
		t.Errorf("lent %d bytes, want 136", got)
	}
	a.Reset()
	if got := a.Lent(); got != 0 {
		t.Errorf("after Reset: lent %d bytes, want 0", got)
	}
	var rows nn.StepRows
	a.Share(&rows, 2, 4, 8)
	a.Tensor(tensor.Float32, 2, 10) // rows 2..4 of an 8-row tensor: 80 bytes
	a.Tensor(tensor.Float32, 3)     // its own: 12
	if got := a.Lent(); got != 92 {
		t.Errorf("shared: lent %d bytes, want 92", got)
	}
	var none *nn.Arena
	none.Tensor(tensor.Float32, 4)
	if got := none.Lent(); got != 0 {
		t.Errorf("nil arena lent %d bytes, want 0", got)
	}
}
