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

func ExampleSimulate() {
	// 4 stages, 8 micro-batches, every pass of every stage one unit of time
	one := []float64{1}
	cost := pipeline.SimCosts{F: one, B: one, W: one}
	for _, s := range []pipeline.SimSchedule{pipeline.Sim1F1B, pipeline.SimZBH1} {
		r, err := pipeline.Simulate(s, 4, 8, 1, cost)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: step %v, bubble %.3f, peak %v\n", s, r.Step, r.Bubble, r.Peak)
		fmt.Print(r.Timeline(1))
	}
	// Output:
	// 1f1b: step 33, bubble 0.273, peak [4 3 2 1]
	// 0 F0F1F2F3............B0B0F4B1B1F5B2B2F6B3B3F7B4B4..B5B5..B6B6..B7B7
	// 1 ..F0F1F2........B0B0F3B1B1F4B2B2F5B3B3F6B4B4F7B5B5..B6B6..B7B7....
	// 2 ....F0F1....B0B0F2B1B1F3B2B2F4B3B3F5B4B4F6B5B5F7B6B6..B7B7........
	// 3 ......F0B0B0F1B1B1F2B2B2F3B3B3F4B4B4F5B5B5F6B6B6F7B7B7............
	// zb-h1: step 27, bubble 0.111, peak [4 4 4 4]
	// 0 F0F1F2F3......B0W0F4B1W1F5B2W2F6B3W3F7B4W4B5W5B6W6B7W7
	// 1 ..F0F1F2....B0F3B1W0F4B2W1F5B3W2F6B4W3F7B5W4B6W5B7W6W7
	// 2 ....F0F1..B0F2B1F3B2W0F4B3W1F5B4W2F6B5W3F7B6W4B7W5W6W7
	// 3 ......F0B0F1B1F2B2F3B3W0F4B4W1F5B5W2F6B6W3F7B7W4W5W6W7
}
