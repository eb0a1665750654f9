package pipeline_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// cnnSample is the CNN tests' sample: 2 channels of 6×6.
var cnnSample = []int{2, 6, 6}

// cnnSpecs is a small CNN: conv, (batch norm,) relu, max pooling, conv,
// relu, average pooling, flatten, dropout, linear.
func cnnSpecs(batchNorm bool) []nn.Spec {
	specs := []nn.Spec{{Type: "conv2d", Channels: 4, Kernel: 3, Padding: 1, Init: nn.TorchDefault}}
	if batchNorm {
		specs = append(specs, nn.Spec{Type: "batchnorm"})
	}
	return append(specs, nn.Spec{Type: "relu"}, nn.Spec{Type: "maxpool2d", Kernel: 2},
		nn.Spec{Type: "conv2d", Channels: 6, Kernel: 2, Init: nn.TorchDefault}, nn.Spec{Type: "relu"},
		nn.Spec{Type: "avgpool2d", Kernel: 2}, nn.Spec{Type: "flatten"}, nn.Spec{Type: "dropout", P: 0.25},
		nn.Spec{Type: "linear", Units: classes, Init: nn.TorchDefault})
}

func cnnModel(specs []nn.Spec) pipeline.Model {
	return pipeline.Model{Specs: specs, Sample: cnnSample, Seed: seed}
}

// cnnBatch returns the mini-batch of a step: 128 images.
func cnnBatch(step int) (*tensor.Tensor, nn.Target) {
	rng := rand.New(rand.NewPCG(seed, 2000+uint64(step)))
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, 128, tensor.SizeOf(cnnSample))
	labels := make([]int, 128)
	for i := range labels {
		labels[i] = rng.IntN(classes)
	}
	return x, nn.Target{Labels: labels}
}

// cnnReference trains the CNN with nn.Sequential and returns the losses and
// the final parameters and buffers.
func cnnReference(t testing.TB, specs []nn.Spec, micro int) ([]float64, map[string][]float32) {
	return referenceOn(t, layersOf(t, cnnModel(specs)), cnnBatch, micro)
}

func runCNN(t testing.TB, specs []nn.Spec, sched actors.Schedule, stages, micro int, shards []int, split bool) ([]float64, map[string][]float32) {
	t.Helper()
	return trainEngineOn(t, cnnModel(specs), pipeline.Config{
		Schedule: sched, MicroBatches: micro, Stages: stages, Shards: shards, SplitBackward: split,
		Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm,
	}, cnnBatch)
}

// within reports the first loss or weight of got further than tol
// (relative; 0: bit for bit) from want, or "".
func within(gotLoss, wantLoss []float64, gotW, wantW map[string][]float32, tol float64) string {
	for i := range wantLoss {
		if d := math.Abs(gotLoss[i] - wantLoss[i]); d > tol*math.Abs(wantLoss[i]) || tol == 0 && gotLoss[i] != wantLoss[i] {
			return fmt.Sprintf("step %d: loss %v, want %v", i+1, gotLoss[i], wantLoss[i])
		}
	}
	if len(gotW) != len(wantW) {
		return fmt.Sprintf("%d tensors, want %d", len(gotW), len(wantW))
	}
	for name, want := range wantW {
		got := gotW[name]
		if len(got) != len(want) {
			return fmt.Sprintf("%s: %d values, want %d", name, len(got), len(want))
		}
		for j := range want {
			d := math.Abs(float64(got[j] - want[j]))
			if d > tol*math.Max(1, math.Abs(float64(want[j]))) || tol == 0 && math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				return fmt.Sprintf("%s[%d] = %v, want %v", name, j, got[j], want[j])
			}
		}
	}
	return ""
}

// TestCNNEquivalence: a CNN gives nn.Sequential's losses, weights and
// running statistics bit for bit under every schedule and stage count; with
// batch norm at a given number of micro-batches (its statistics are per
// micro-batch), without it at any number.
func TestCNNEquivalence(t *testing.T) {
	for _, bn := range []bool{true, false} {
		specs := cnnSpecs(bn)
		micros := []int{1, 2, 4}
		wantLoss, wantW := cnnReference(t, specs, 1)
		for _, micro := range micros {
			if bn {
				wantLoss, wantW = cnnReference(t, specs, micro)
			} else if l, w := cnnReference(t, specs, micro); micro > 1 {
				if why := within(l, wantLoss, w, wantW, 0); why != "" {
					t.Errorf("nn.Sequential micro=%d against micro=1: %s", micro, why)
				}
			}
			for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
				for _, stages := range []int{0, 2, 3} {
					if sched == actors.Sequential && micro > 1 && stages != 0 {
						continue // the sequential schedule's stage count matters little; keep CI short
					}
					gotLoss, gotW := runCNN(t, specs, sched, stages, micro, nil, stages == 3)
					if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
						t.Errorf("batchnorm=%v %v stages=%d micro=%d: %s", bn, sched, stages, micro, why)
					}
				}
			}
		}
	}
}

// TestConvShards splits convolutions' filters over actors: results stay
// within 1e-5 relative of the unsharded model (the input gradients are summed
// shard by shard), with batch norm after a sharded convolution.
func TestConvShards(t *testing.T) {
	specs := cnnSpecs(true)
	wantLoss, wantW := cnnReference(t, specs, 2)
	for _, shards := range [][]int{{2}, {3, 1, 1, 1, 2}, {4, 1, 1, 1, 1, 1, 1, 1, 1, 2}} {
		for _, sched := range []actors.Schedule{actors.Sequential, actors.OneFOneB} {
			gotLoss, gotW := runCNN(t, specs, sched, 0, 2, shards, false)
			if why := within(gotLoss, wantLoss, gotW, wantW, 1e-5); why != "" {
				t.Errorf("shards %v %v: %s", shards, sched, why)
			}
		}
	}
}
