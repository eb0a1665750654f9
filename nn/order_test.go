package nn_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

func TestRunOrder(t *testing.T) {
	pool := nn.Spec{Type: "maxpool2d", Kernel: 2}
	for _, c := range []struct {
		specs []nn.Spec
		want  []int
	}{
		{[]nn.Spec{{Type: "relu"}, pool}, []int{1, 0}},
		{[]nn.Spec{{Type: "conv2d", Channels: 2, Kernel: 3, Init: nn.TorchDefault}, {Type: "relu"}, pool, {Type: "relu"}, pool}, []int{0, 2, 1, 4, 3}},
		{[]nn.Spec{pool, {Type: "relu"}}, []int{0, 1}},
		{[]nn.Spec{{Type: "relu"}, {Type: "avgpool2d", Kernel: 2}}, []int{0, 1}},
		{[]nn.Spec{{Type: "tanh"}, pool}, []int{0, 1}},
		{[]nn.Spec{{Type: "relu"}, {Type: "relu"}, pool}, []int{0, 2, 1}},
		{[]nn.Spec{{Type: "relu"}}, []int{0}},
		{nil, []int{}},
	} {
		layers, err := nn.BuildShape(c.specs, []int{1, 12, 12}, 1, tensor.Float32, 0, len(c.specs))
		if err != nil {
			t.Fatal(err)
		}
		if got := nn.RunOrder(layers); !slices.Equal(got, c.want) {
			t.Errorf("%v: RunOrder = %v, want %v", c.specs, got, c.want)
		}
	}
}

// TestReLUMaxPoolCommute holds RunOrder's swap to the layers' own order, bit
// for bit: outputs, input gradients, evaluation, with NaN, infinities, signed
// zeros, ties and windows with nothing above zero.
func TestReLUMaxPoolCommute(t *testing.T) {
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 1e-40}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, ks := range [][2]int{{2, 2}, {3, 2}, {2, 1}, {3, 3}, {17, 1}} {
			t.Run(fmt.Sprintf("%v/kernel=%d,stride=%d", dt, ks[0], ks[1]), func(t *testing.T) {
				specs := []nn.Spec{{Type: "relu"}, {Type: "maxpool2d", Kernel: ks[0], Stride: ks[1]}}
				sample := []int{3, 19, 18}
				rng := newRNG(uint64(ks[0]*10 + ks[1]))
				x := randN(rng, dt, 1, 5, tensor.SizeOf(sample))
				for range x.Size() / 3 {
					j := rng.IntN(x.Size())
					switch rng.IntN(3) {
					case 0: // specials
						setFlat(x, j, special[rng.IntN(len(special))])
					case 1: // ties
						setFlat(x, j, flat(x, rng.IntN(x.Size())))
					default: // windows of nothing above zero
						setFlat(x, j, -math.Abs(flat(x, j)))
					}
				}
				for i := range x.Size() / 4 { // whole regions not above zero
					setFlat(x, x.Size()/2+i, -math.Abs(flat(x, x.Size()/2+i)))
				}
				run := func(order []int, train bool) (y, dx *tensor.Tensor) {
					layers, err := nn.BuildShape(specs, sample, 1, dt, 0, 2)
					if err != nil {
						t.Fatal(err)
					}
					p := nn.Pass{Step: 1, Train: train}
					h := x
					for _, i := range order {
						h = layers[i].Forward(p, h)
					}
					if !train {
						return h, nil
					}
					grng := newRNG(9) // the same gradient for either order
					g := randN(grng, dt, 1, h.Shape()...)
					for i := range g.Size() / 5 {
						setFlat(g, grng.IntN(g.Size()), special[i%len(special)])
					}
					for i := len(order) - 1; i >= 0; i-- {
						g = layers[order[i]].Backward(p, g, true)
					}
					return h, g
				}
				layers, err := nn.BuildShape(specs, sample, 1, dt, 0, 2)
				if err != nil {
					t.Fatal(err)
				}
				order := nn.RunOrder(layers)
				if !slices.Equal(order, []int{1, 0}) {
					t.Fatalf("RunOrder = %v, want [1 0]", order)
				}
				for _, train := range []bool{true, false} {
					wantY, wantDX := run([]int{0, 1}, train)
					gotY, gotDX := run(order, train)
					if !sameBits(gotY, wantY) {
						t.Errorf("train=%v: outputs differ in their bits", train)
					}
					if train && !sameBits(gotDX, wantDX) {
						t.Errorf("input gradients differ in their bits")
					}
				}
			})
		}
	}
}

func flat(x *tensor.Tensor, i int) float64 {
	if x.DType() == tensor.Float32 {
		return float64(x.Data32()[i])
	}
	return x.Data64()[i]
}

func setFlat(x *tensor.Tensor, i int, v float64) {
	if x.DType() == tensor.Float32 {
		x.Data32()[i] = float32(v)
	} else {
		x.Data64()[i] = v
	}
}
