package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestShardsJoin: the outputs of a layer's shards, joined by columns in
// order, are the layer's output bit for bit, for linear and conv2d layers;
// other image layers do not split.
func TestShardsJoin(t *testing.T) {
	specs := []nn.Spec{{Type: "conv2d", Channels: 5, Kernel: 3, Padding: 1, Init: nn.TorchDefault},
		{Type: "maxpool2d", Kernel: 2}, {Type: "flatten"}, {Type: "linear", Units: 7, Init: nn.XavierUniform}}
	layers, err := nn.BuildShape(specs, []int{2, 6, 6}, 3, tensor.Float32, 0, len(specs))
	if err != nil {
		t.Fatal(err)
	}
	if sh, ok := layers[1].(nn.Sharder); ok {
		if units, _ := sh.ShardUnits(); units != 0 {
			t.Errorf("max pooling has %d units to shard", units)
		}
	}
	x := tensor.RandNormal(rand.New(rand.NewPCG(1, 2)), tensor.Float32, 0, 1, 3, 72)
	h := layers[1].Forward(nn.Pass{}, layers[0].Forward(nn.Pass{}, x))
	for _, c := range []struct {
		layer nn.Layer
		in    *tensor.Tensor
		units int
	}{{layers[0], x, 5}, {layers[3], h, 7}} {
		sh := c.layer.(nn.Sharder)
		units, cols := sh.ShardUnits()
		if units != c.units {
			t.Fatalf("%s: %d units, want %d", c.layer.Kind(), units, c.units)
		}
		want := c.layer.Forward(nn.Pass{}, c.in).Float32s()
		var got []float32
		parts := nn.SplitEven(units, 2)
		outs := make([][]float32, len(parts))
		for k, sp := range parts {
			outs[k] = sh.Shard(sp.Lo, sp.Hi).Forward(nn.Pass{}, c.in).Float32s()
		}
		for r := range 3 {
			for k, sp := range parts {
				w := (sp.Hi - sp.Lo) * cols
				got = append(got, outs[k][r*w:(r+1)*w]...)
			}
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: joined shards give %v at %d, the layer %v", c.layer.Kind(), got[i], i, want[i])
			}
		}
	}
}
