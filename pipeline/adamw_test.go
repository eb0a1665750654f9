package pipeline_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// adamw is the optimizer whose stages take clipping's scale and clear the
// gradients in the update's pass (optim.ScaledStepper).
var adamw = optim.Spec{Kind: "adamw", Betas: [2]float64{0.9, 0.95}, Eps: 1e-8, WeightDecay: 0.1, Decay: "matrices"}

// TestAdamWEquivalence: stages updating with AdamW in one pass give the
// bits of nn.Sequential's three passes (ScaleGrads, Step, ZeroGrad), with a
// clip that always scales and one that never does, under 1F1B, optimistic
// clipping's kept and redone updates, and replicas sharing their weights.
func TestAdamWEquivalence(t *testing.T) {
	models := []struct {
		name    string
		m       pipeline.Model
		batchOf func(int) (*tensor.Tensor, nn.Target)
		ties    []nn.Tie
	}{
		{"mlp", testModel, batch, nil},
		{"gpt", tied, gptBatch, nn.Ties(tied.Specs)},
	}
	for _, md := range models {
		for _, clip := range []float64{1e-3, 1e6} {
			seq := &nn.Sequential{Layers: layersOf(t, md.m), Loss: nn.CrossEntropy}
			if md.ties != nil {
				seq.Granule = nn.Granule(nn.Tokens(md.m.Specs, md.m.Sample))
			}
			wantLoss, wantW := trainSequentialWith(t, seq, adamw, clip, md.batchOf, 1, md.ties...)
			for _, c := range []struct {
				sched         actors.Schedule
				stages, micro int
				replicas      int
				optimistic    bool
			}{
				{actors.Sequential, 1, 1, 1, false},
				{actors.OneFOneB, 2, 2, 1, false},
				{actors.ZBH1, 2, 4, 1, true},
				{actors.OneFOneB, 2, 2, 2, false},
			} {
				t.Run(fmt.Sprintf("%s/clip=%g/%v/stages=%d/replicas=%d/optimistic=%v", md.name, clip, c.sched, c.stages, c.replicas, c.optimistic), func(t *testing.T) {
					cfg := pipeline.Config{Schedule: c.sched, Stages: c.stages, MicroBatches: c.micro, Replicas: c.replicas,
						Loss: nn.CrossEntropy, Optimizer: adamw, ClipNorm: clip, OptimisticClip: c.optimistic, Hang: 5 * time.Second}
					gotLoss, gotW := trainEngineOn(t, md.m, cfg, md.batchOf)
					if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
						t.Error(why)
					}
				})
			}
		}
	}
}
