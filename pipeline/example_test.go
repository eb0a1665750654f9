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
	// 4 features -> 8 -> ReLU -> 2 classes; layer i's weights come from
	// the stream (seed, i), wherever it runs
	m := pipeline.Model{Specs: []nn.Spec{
		{Type: "linear", Units: 8, Init: nn.HeUniform}, {Type: "relu"}, {Type: "linear", Units: 2, Init: nn.XavierUniform},
	}, Sample: []int{4}, Seed: 1}
	opt := optim.Spec{Kind: "sgd", Momentum: 0.9}
	eng, err := pipeline.New(m, pipeline.Config{
		Schedule: actors.OneFOneB, MicroBatches: 4, Loss: nn.CrossEntropy, Optimizer: opt,
	})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	fmt.Println("positions:", eng.Positions())

	rng := rand.New(rand.NewPCG(1, 1))
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
