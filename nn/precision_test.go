package nn_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestPrecisionReachesProducts: BF16 changes a float32 linear, conv2d and
// transformer block's output, dX and parameter gradients (each a product
// of its own), and leaves float64 layers as they are.
func TestPrecisionReachesProducts(t *testing.T) {
	gpt := []nn.Spec{{Type: "embedding", Dim: 8, Vocab: 11, Init: nn.GPT}, {Type: "transformer_block", Heads: 2, Init: nn.GPT}}
	for _, c := range []struct {
		name   string
		specs  []nn.Spec
		sample []int
	}{
		{"linear", []nn.Spec{{Type: "linear", Units: 24, Init: nn.TorchDefault}}, []int{40}},
		{"conv2d", []nn.Spec{{Type: "conv2d", Channels: 4, Kernel: 3, Padding: 1, Init: nn.TorchDefault}}, []int{3, 6, 6}},
		{"transformer_block", gpt, []int{8}},
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			fp32 := runPrecision(t, c.specs, c.sample, dt, nn.FP32)
			bf16 := runPrecision(t, c.specs, c.sample, dt, nn.BF16)
			for i, name := range []string{"y", "dx", "dW"} {
				if same := slices.Equal(fp32[i], bf16[i]); same != (dt == tensor.Float64) {
					t.Errorf("%s %v: %s the same in fp32 and bf16: %v", c.name, dt, name, same)
				}
			}
		}
	}
}

// runPrecision runs a forward and backward of the last of specs' layers
// (the ones before it give its input) with packed weights (two micro-batches
// share them) and returns its output, dX and first parameter's gradient.
func runPrecision(t *testing.T, specs []nn.Spec, sample []int, dt tensor.DType, pr nn.Precision) [3][]float64 {
	layers, err := nn.BuildShape(specs, sample, 5, dt, 0, len(specs))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	x := tensor.RandNormal(rng, dt, 0, 1, append([]int{4}, sample...)...)
	p := nn.Pass{Step: 1, Train: true, Weights: 1, Micros: 2, Precision: pr}
	if len(layers) > 1 { // token ids for the embedding
		for i := range x.Size() {
			x.Set(float64(rng.IntN(11)), i/8, i%8)
		}
		x = layers[0].Forward(p, x)
	}
	l := layers[len(layers)-1]
	y := l.Forward(p, x)
	dy := tensor.RandNormal(rng, dt, 0, 1, y.Shape()...)
	dx := l.Backward(p, dy, true)
	return [3][]float64{y.Float64s(), dx.Float64s(), l.Params()[0].Grad.Float64s()}
}
