package pipeline_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// mnistMLP is 784-512-256-10 with ReLU, the MNIST recipe.
func mnistMLP(tb testing.TB) []nn.Layer {
	var layers []nn.Layer
	in := 784
	for i, out := range []int{512, 256, 10} {
		l, err := nn.NewLinear(tensor.Float32, in, out, nn.XavierUniform, rand.New(rand.NewPCG(1, uint64(i))))
		if err != nil {
			tb.Fatal(err)
		}
		layers = append(layers, l)
		if out != 10 {
			layers = append(layers, nn.NewReLU())
		}
		in = out
	}
	return layers
}

// mnistEngine builds the MNIST MLP pipeline and returns it with a step
// function that trains on one fixed random mini-batch of 128 rows.
func mnistEngine(tb testing.TB, sched actors.Schedule, micro, stages int) (*pipeline.Engine, func()) {
	opt, _ := optim.NewSGD(optim.SGDConfig{Momentum: 0.9})
	eng, err := pipeline.New(mnistMLP(tb), pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages,
		Loss: nn.CrossEntropy, Optimizer: opt, Features: 784})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	x := tensor.RandUniform(rng, tensor.Float32, 0, 1, 128, 784)
	labels := make([]int, 128)
	for i := range labels {
		labels[i] = rng.IntN(10)
	}
	step := 0
	return eng, func() {
		step++
		if _, err := eng.Step(step, 0.01, x, nn.Target{Labels: labels}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkTrainStep times one optimizer step of the MNIST MLP at batch 128
// (SGD with momentum) through the actor pipeline, reporting samples/s and the
// allocations of a whole step, protoactor's envelopes included.
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range []struct {
		sched  actors.Schedule
		micro  int
		stages int
	}{{actors.Sequential, 1, 1}, {actors.Sequential, 1, 0}, {actors.OneFOneB, 2, 0}, {actors.OneFOneB, 4, 2}} {
		b.Run(fmt.Sprintf("%v/micro=%d/stages=%d", c.sched, c.micro, c.stages), func(b *testing.B) {
			eng, step := mnistEngine(b, c.sched, c.micro, c.stages)
			defer eng.Close()
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
			b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// TestStepAllocations reports the allocations of one training step of the
// MNIST MLP (every goroutine's, protoactor's envelopes included) and bounds
// them near today's figures so a regression shows. The target is zero from
// pipetrain's own code, with buffers reused by the actors; it is not reached.
func TestStepAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	eng, step := mnistEngine(t, actors.OneFOneB, 2, 0)
	defer eng.Close()
	allocs := testing.AllocsPerRun(20, step)
	t.Logf("one 1f1b step of 784-512-256-10, batch 128, 2 micro-batches: %.0f allocations", allocs)
	if allocs > 600 {
		t.Errorf("%.0f allocations per step; about 380 when this bound was set", allocs)
	}
}
