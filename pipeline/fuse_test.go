package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
)

// reluMLP has each ReLU between two linear layers, which a stage holding
// them computes fused (nn.Fuse).
var reluMLP = pipeline.Model{Specs: []nn.Spec{
	{Type: "linear", Units: 16, Init: nn.TorchDefault}, {Type: "relu"},
	{Type: "linear", Units: 12, Init: nn.TorchDefault}, {Type: "relu"},
	{Type: "linear", Units: classes, Init: nn.TorchDefault},
}, Sample: []int{features}, Seed: seed}

// TestFusedEquivalence: stages that fuse their linear layers with the ReLUs
// between them (one stage, or two) give the losses and weights of
// nn.Sequential, which runs every layer apart, and of an actor a layer, bit
// for bit, under every schedule, with and without the split backward.
func TestFusedEquivalence(t *testing.T) {
	wantLoss, wantW := referenceOn(t, layersOf(t, reluMLP), batch, 1)
	for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
		for _, stages := range []int{0, 1, 2} {
			for _, micro := range []int{1, 4} {
				for _, split := range []bool{false, true} {
					t.Run(fmt.Sprintf("%v/stages=%d/micro=%d/split=%v", sched, stages, micro, split), func(t *testing.T) {
						gotLoss, gotW := trainEngineOn(t, reluMLP, pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages,
							SplitBackward: split, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm}, batch)
						if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
							t.Error(why)
						}
					})
				}
			}
		}
	}
}
