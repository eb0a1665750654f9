package pipeline_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// tinyGPT is a GPT small enough for every layout in CI: 3 blocks of width
// 8 and 2 heads over 8 tokens of a vocabulary of 11, with dropout.
var tinyGPT = func() pipeline.Model {
	specs := []nn.Spec{{Type: "embedding", Dim: 8, Vocab: 11, Init: nn.GPT}}
	for range 3 {
		specs = append(specs, nn.Spec{Type: "transformer_block", Heads: 2, Dropout: 0.1, Init: nn.GPT})
	}
	specs = append(specs, nn.Spec{Type: "layernorm"}, nn.Spec{Type: "linear", Units: 11, Init: nn.GPT})
	return pipeline.Model{Specs: specs, Sample: []int{8}, Seed: seed}
}()

// gptBatch returns the mini-batch of a step: 16 sequences of 8 tokens and
// their next tokens (4 chunks of 4 sequences: 32 tokens each).
func gptBatch(step int) (*tensor.Tensor, nn.Target) {
	rng := rand.New(rand.NewPCG(seed, 3000+uint64(step)))
	x := tensor.Zeros(tensor.Float32, 16, 8)
	labels := make([]int, 16*8)
	for i := range labels {
		x.Data32()[i] = float32(rng.IntN(11))
		labels[i] = rng.IntN(11)
	}
	return x, nn.Target{Labels: labels, PerRow: 8}
}

// tied is tinyGPT with its head sharing the embedding's token weights.
var tied = func() pipeline.Model {
	m := tinyGPT
	m.Specs = slices.Clone(m.Specs)
	m.Specs[len(m.Specs)-1].Tie = true
	return m
}()

// referenceGPT trains m with nn.Sequential as a trainer of tied weights
// does: the copies' gradients summed, the norm counting each weight once.
func referenceGPT(t *testing.T, m pipeline.Model, micro int) ([]float64, map[string][]float32) {
	return referenceGPTIn(t, m, micro, nn.FP32)
}

// referenceGPTIn is referenceGPT with the products in precision pr.
func referenceGPTIn(t *testing.T, m pipeline.Model, micro int, pr nn.Precision) ([]float64, map[string][]float32) {
	seq := &nn.Sequential{Layers: layersOf(t, m), Loss: nn.CrossEntropy, Granule: nn.Granule(nn.Tokens(m.Specs, m.Sample)), Precision: pr}
	return trainSequential(t, seq, gptBatch, micro, nn.Ties(m.Specs)...)
}

// TestGPTEquivalence: a GPT gives nn.Sequential's losses and weights, bit
// for bit, under every schedule, stage count and micro-batch count, with
// and without a tied head: its blocks are stage actors like any layers,
// and a tied head's copy of the embedding's weights stays equal to it
// wherever the two run.
func TestGPTEquivalence(t *testing.T) {
	for _, m := range []pipeline.Model{tinyGPT, tied} {
		tie := m.Specs[len(m.Specs)-1].Tie
		wantLoss, wantW := referenceGPT(t, m, 1)
		if tie {
			e, h := nn.Ties(m.Specs)[0].Names()
			if !slices.Equal(wantW[e], wantW[h]) {
				t.Fatalf("nn.Sequential: the tied copies %s and %s differ after training", e, h)
			}
		}
		for _, micro := range []int{1, 2, 4} {
			if micro > 1 {
				l, w := referenceGPT(t, m, micro)
				if why := within(l, wantLoss, w, wantW, 0); why != "" {
					t.Errorf("tie=%v: nn.Sequential micro=%d against micro=1: %s", tie, micro, why)
				}
			}
			for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
				for _, stages := range []int{0, 1, 2, 3} {
					t.Run(fmt.Sprintf("tie=%v/%v/stages=%d/micro=%d", tie, sched, stages, micro), func(t *testing.T) {
						gotLoss, gotW := trainEngineOn(t, m, pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages,
							SplitBackward: stages == 3, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm}, gptBatch)
						if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
							t.Error(why)
						}
					})
				}
			}
		}
	}
}
