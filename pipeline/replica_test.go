package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestReplicas: R copies of the chain, each on its share of the mini-batch's
// chunks, give nn.Sequential's losses and weights bit for bit, for 1, 2 and
// 4 replicas under every schedule, at 0, 1 and 2 stages and 1, 2 and 4
// micro-batches a replica: for the MLP (8 chunks a step), the CNN (4) and
// the GPT with a tied head (4, so 4 replicas get one chunk each).
func TestReplicas(t *testing.T) {
	models := []struct {
		name    string
		m       pipeline.Model
		batchOf func(int) (*tensor.Tensor, nn.Target)
		want    func(t *testing.T) ([]float64, map[string][]float32)
	}{
		{"mlp", testModel, batch, func(t *testing.T) ([]float64, map[string][]float32) { return reference(t, 1) }},
		{"cnn", cnnModel(cnnSpecs(false)), cnnBatch, func(t *testing.T) ([]float64, map[string][]float32) {
			return cnnReference(t, cnnSpecs(false), 1)
		}},
		{"gpt", tied, gptBatch, func(t *testing.T) ([]float64, map[string][]float32) { return referenceGPT(t, tied, 1) }},
	}
	for _, c := range models {
		wantLoss, wantW := c.want(t)
		for _, replicas := range []int{1, 2, 4} {
			for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
				for _, stages := range []int{0, 1, 2} {
					for _, micro := range []int{1, 2, 4} {
						name := fmt.Sprintf("%s/replicas=%d/%v/stages=%d/micro=%d", c.name, replicas, sched, stages, micro)
						t.Run(name, func(t *testing.T) {
							gotLoss, gotW := trainEngineOn(t, c.m, pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages,
								Replicas: replicas, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm}, c.batchOf)
							if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
								t.Error(why)
							}
						})
					}
				}
			}
		}
	}
}

// TestReplicasBatchNorm: with batch norm, R replicas of M micro-batches
// normalise the micro-batches of one replica of R·M (the chunks divide
// evenly), running statistics included, bit for bit.
func TestReplicasBatchNorm(t *testing.T) {
	specs := cnnSpecs(true)
	for _, c := range []struct{ replicas, micro int }{{2, 1}, {2, 2}, {4, 1}} {
		wantLoss, wantW := cnnReference(t, specs, c.replicas*c.micro)
		for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
			gotLoss, gotW := trainEngineOn(t, cnnModel(specs), pipeline.Config{Schedule: sched, MicroBatches: c.micro, Stages: 2,
				Replicas: c.replicas, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm}, cnnBatch)
			if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
				t.Errorf("replicas=%d micro=%d %v: %s", c.replicas, c.micro, sched, why)
			}
		}
	}
}
