package nn_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// Train a small perceptron to tell points above the line y = x from points
// below it, with plain SGD written out, four micro-batches per step.
func ExampleSequential() {
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.RandUniform(rng, tensor.Float64, -1, 1, 64, 2)
	labels := make([]int, 64)
	for i := range labels {
		if x.At(i, 1) > x.At(i, 0) {
			labels[i] = 1
		}
	}
	target := nn.Target{Labels: labels}

	hidden, err := nn.NewLinear(tensor.Float64, 2, 8, nn.HeUniform, rng)
	if err != nil {
		panic(err)
	}
	out, err := nn.NewLinear(tensor.Float64, 8, 2, nn.XavierUniform, rng)
	if err != nil {
		panic(err)
	}
	model := &nn.Sequential{Loss: nn.CrossEntropy, Layers: []nn.Layer{hidden, nn.NewTanh(), out}}

	const lr = 0.5
	for step := 1; step <= 200; step++ {
		loss, err := model.TrainStep(step, x, target, 4)
		if err != nil {
			panic(err)
		}
		for _, p := range model.Params() {
			w, g := p.Value.Data64(), p.Grad.Data64()
			for i := range w {
				w[i] -= lr * g[i]
			}
		}
		model.ZeroGrad()
		if step == 1 || step == 200 {
			fmt.Printf("step %3d: loss %.2f\n", step, loss)
		}
	}
	_, acc := model.Evaluate(x, target, 32)
	fmt.Printf("accuracy %.2f\n", acc)
	// Output:
	// step   1: loss 0.82
	// step 200: loss 0.06
	// accuracy 1.00
}

// SplitRows is how every trainer cuts a mini-batch into micro-batches: in
// whole chunks of nn.ChunkRows (32) rows.
func ExampleSplitRows() {
	fmt.Println(nn.SplitRows(256, 3))
	fmt.Println(nn.SplitRows(100, 8))
	fmt.Println(nn.SplitRows(20, 4))
	// Output:
	// [{0 96} {96 192} {192 256}]
	// [{0 32} {32 64} {64 96} {96 100}]
	// [{0 20}]
}
