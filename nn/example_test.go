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

// Train a small convolutional network to tell 6×6 images of a vertical bar
// from images of a horizontal one. OutShape gives the width of the Linear
// layer after Flatten.
func ExampleConv2d() {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 64
	x := tensor.RandNormal(rng, tensor.Float64, 0, 0.3, n, 1, 6, 6) // noise
	labels := make([]int, n)
	for i := range labels {
		labels[i] = i % 2 // 1: vertical
		at := rng.IntN(6)
		for j := range 6 {
			if labels[i] == 1 {
				x.Set(x.At(i, 0, j, at)+1, i, 0, j, at)
			} else {
				x.Set(x.At(i, 0, at, j)+1, i, 0, at, j)
			}
		}
	}

	conv, err := nn.NewConv2d(tensor.Float64, 1, 4, 3, 3, 1, 1, nn.HeUniform, rng)
	if err != nil {
		panic(err)
	}
	bn, err := nn.NewBatchNorm(tensor.Float64, 4)
	if err != nil {
		panic(err)
	}
	pool, err := nn.NewMaxPool2d(2, 0)
	if err != nil {
		panic(err)
	}
	shape, err := conv.OutShape([]int{1, 6, 6}) // [4 6 6]
	if err != nil {
		panic(err)
	}
	if shape, err = pool.OutShape(shape); err != nil { // [4 3 3]
		panic(err)
	}
	flat := nn.NewFlatten()
	width, err := flat.OutShape(shape) // [36]
	if err != nil {
		panic(err)
	}
	out, err := nn.NewLinear(tensor.Float64, width[0], 2, nn.XavierUniform, rng)
	if err != nil {
		panic(err)
	}
	model := &nn.Sequential{Loss: nn.CrossEntropy, Layers: []nn.Layer{conv, bn, nn.NewReLU(), pool, flat, out}}
	fmt.Println("features per image:", width[0])

	const lr = 0.1
	target := nn.Target{Labels: labels}
	for step := 1; step <= 60; step++ {
		loss, err := model.TrainStep(step, x, target, 2)
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
		if step == 1 || step == 60 {
			fmt.Printf("step %2d: loss %.2f\n", step, loss)
		}
	}
	// Evaluation normalises with the running statistics of training.
	_, acc := model.Evaluate(x, target, 0)
	fmt.Printf("accuracy %.2f\n", acc)
	// Output:
	// features per image: 36
	// step  1: loss 1.44
	// step 60: loss 0.14
	// accuracy 1.00
}
