package nn_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestShareParams: a layer built with other weights computes, after
// ShareParams, the outputs of the layer it shares with, and its backward
// adds into that layer's gradients: for every kind of layer with
// parameters or buffers.
func TestShareParams(t *testing.T) {
	for _, c := range []struct {
		specs  []nn.Spec
		sample []int
		x      func(*rand.Rand) *tensor.Tensor
	}{
		{[]nn.Spec{{Type: "conv2d", Channels: 3, Kernel: 3, Padding: 1, Init: nn.XavierUniform}, {Type: "batchnorm"}, {Type: "prelu"},
			{Type: "flatten"}, {Type: "layernorm"}, {Type: "linear", Units: 4, Init: nn.XavierUniform}}, []int{2, 4, 4},
			func(r *rand.Rand) *tensor.Tensor { return tensor.RandNormal(r, tensor.Float32, 0, 1, 3, 32) }},
		{[]nn.Spec{{Type: "embedding", Dim: 4, Vocab: 5, Init: nn.GPT}, {Type: "transformer_block", Heads: 2, Init: nn.GPT}, {Type: "linear", Units: 5, Init: nn.GPT}}, []int{3},
			func(r *rand.Rand) *tensor.Tensor {
				x := tensor.Zeros(tensor.Float32, 2, 3)
				for i := range x.Data32() {
					x.Data32()[i] = float32(r.IntN(5))
				}
				return x
			}},
	} {
		src, err := nn.BuildShape(c.specs, c.sample, 1, tensor.Float32, 0, len(c.specs))
		if err != nil {
			t.Fatal(err)
		}
		dst, _ := nn.BuildShape(c.specs, c.sample, 2, tensor.Float32, 0, len(c.specs))
		for i := range src {
			if err := nn.ShareParams(dst[i], src[i]); err != nil {
				t.Fatal(err)
			}
		}
		x := c.x(rand.New(rand.NewPCG(3, 4)))
		p := nn.Pass{Step: 1, Train: true}
		ys, yd := x, x
		for i := range src {
			ys, yd = src[i].Forward(p, ys), dst[i].Forward(p, yd)
			if !slices.Equal(ys.Float32s(), yd.Float32s()) {
				t.Fatalf("%s: the replica's output differs", src[i].Kind())
			}
		}
		g := tensor.Full(tensor.Float32, 1, yd.Shape()...)
		for i := len(dst) - 1; i >= 0; i-- {
			g = dst[i].Backward(p, g, i > 0)
			for _, q := range src[i].Params() {
				if nonzero := slices.ContainsFunc(q.Grad.Float32s(), func(v float32) bool { return v != 0 }); !nonzero {
					t.Errorf("%s %s: the replica's gradient did not reach it", src[i].Kind(), q.Name)
				}
			}
		}
	}
	l, _ := nn.BuildShape([]nn.Spec{{Type: "linear", Units: 3, Init: nn.XavierUniform}, {Type: "linear", Units: 4, Init: nn.XavierUniform}}, []int{2}, 1, tensor.Float32, 0, 2)
	if err := nn.ShareParams(l[1], l[0]); err == nil {
		t.Error("layers of other shapes shared their parameters")
	}
}
