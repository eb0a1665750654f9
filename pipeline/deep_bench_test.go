package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
)

// deepMLP is 784-1024-1024-1024-10 with ReLU, the model of bench/scaling.
func deepMLP() pipeline.Model { return mlp(1024, 1024, 1024, 10) }

// BenchmarkDeep times one step of the deep MLP at batch 256 in the layouts
// worth comparing; run it under GOMAXPROCS=1 too, for the one-core figures.
// The profile of a layout: -bench 'Deep/1f1b/micro=8/stages=0' -cpuprofile.
func BenchmarkDeep(b *testing.B) {
	for _, c := range []struct {
		sched                  actors.Schedule
		micro, stages, threads int
		split                  bool
	}{{actors.Sequential, 1, 1, 0, false}, {actors.Sequential, 8, 1, 0, false}, {actors.Sequential, 8, 1, 0, true}, {actors.OneFOneB, 8, 0, 0, false}, {actors.OneFOneB, 8, 0, 0, true},
		{actors.OneFOneB, 4, 0, 0, false}, {actors.OneFOneB, 8, 2, 0, false}, {actors.OneFOneB, 8, 2, 2, false}, {actors.OneFOneB, 8, 0, 2, false}} {
		b.Run(fmt.Sprintf("%v/micro=%d/stages=%d/threads=%d/split=%v", c.sched, c.micro, c.stages, c.threads, c.split), func(b *testing.B) {
			eng, err := pipeline.New(deepMLP(), pipeline.Config{Schedule: c.sched, MicroBatches: c.micro, Stages: c.stages, GEMMThreads: c.threads, SplitBackward: c.split,
				Loss: nn.CrossEntropy, Optimizer: optim.Spec{Kind: "sgd", Momentum: 0.9}})
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			step := stepper(b, eng, 256, 784)
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(256*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
