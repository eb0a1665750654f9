package pipeline_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

func Example() {
	rng := rand.New(rand.NewPCG(1, 1))
	l1, _ := nn.NewLinear(tensor.Float32, 4, 8, nn.HeUniform, rng)
	l2, _ := nn.NewLinear(tensor.Float32, 8, 2, nn.XavierUniform, rng)
	opt := optim.Spec{Kind: "sgd", Momentum: 0.9}
	eng, err := pipeline.New([]nn.Layer{l1, nn.NewReLU(), l2}, pipeline.Config{
		Schedule: actors.OneFOneB, MicroBatches: 4, Loss: nn.CrossEntropy, Optimizer: opt, Features: 4,
	})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	fmt.Println("positions:", eng.Positions())

	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, 16, 4)
	labels := make([]int, 16)
	for i := range labels {
		if x.At(i, 0) > 0 {
			labels[i] = 1
		}
	}
	first, _ := eng.Step(1, 0.1, x, nn.Target{Labels: labels})
	var last float64
	for step := 2; step <= 30; step++ {
		last, _ = eng.Step(step, 0.1, x.Clone(), nn.Target{Labels: labels})
	}
	fmt.Println("loss fell:", last < first/2)
	// Output:
	// positions: 3
	// loss fell: true
}
