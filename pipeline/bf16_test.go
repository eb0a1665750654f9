package pipeline_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// bf16Case is a model of the bf16 tests and its mini-batches.
type bf16Case struct {
	name    string
	m       pipeline.Model
	batchOf func(step int) (*tensor.Tensor, nn.Target)
}

var bf16Cases = []bf16Case{
	{"mlp", testModel, batch},
	{"cnn", cnnModel(cnnSpecs(false)), cnnBatch},
	{"gpt", tinyGPT, gptBatch},
}

// referenceIn trains c's model with nn.Sequential with the products in pr.
func referenceIn(t *testing.T, c bf16Case, micro int, pr nn.Precision) ([]float64, map[string][]float32) {
	if c.name == "gpt" {
		return referenceGPTIn(t, c.m, micro, pr)
	}
	return trainSequential(t, &nn.Sequential{Layers: layersOf(t, c.m), Loss: nn.CrossEntropy, Precision: pr}, c.batchOf, micro)
}

// TestBF16Equivalence: with the products in bf16, every schedule, stage
// count and micro-batch count gives nn.Sequential's losses and weights
// (in bf16, one micro-batch) bit for bit, for an MLP, a CNN and a GPT.
func TestBF16Equivalence(t *testing.T) {
	for _, c := range bf16Cases {
		wantLoss, wantW := referenceIn(t, c, 1, nn.BF16)
		for _, micro := range []int{1, 2, 4} {
			if micro > 1 {
				l, w := referenceIn(t, c, micro, nn.BF16)
				if why := within(l, wantLoss, w, wantW, 0); why != "" {
					t.Errorf("%s: nn.Sequential bf16 micro=%d against micro=1: %s", c.name, micro, why)
				}
			}
			for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
				for _, stages := range []int{0, 2} {
					if micro == 2 && stages == 0 {
						continue // keep CI short: the other cuts cover it
					}
					t.Run(fmt.Sprintf("%s/%v/stages=%d/micro=%d", c.name, sched, stages, micro), func(t *testing.T) {
						gotLoss, gotW := trainEngineOn(t, c.m, pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages,
							SplitBackward: stages == 2, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm, Precision: nn.BF16}, c.batchOf)
						if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
							t.Error(why)
						}
					})
				}
			}
		}
	}
}

// TestBF16Changes: bf16 products change the results (else the precision
// would not reach the kernels), but little: the step losses stay within
// 1e-2 relative of fp32's. The two arithmetics differ where their sums
// round apart (the GPT's; the small MLP's and CNN's here come out the
// same), and each is the same under every schedule: checked here for
// Pairs (AMX is TestBF16Equivalence's).
func TestBF16Changes(t *testing.T) {
	for _, c := range bf16Cases {
		fp32, _ := referenceIn(t, c, 2, nn.FP32)
		pairs, pairsW := referenceIn(t, c, 1, nn.BF16Pairs)
		for _, pr := range []nn.Precision{nn.BF16, nn.BF16Pairs} {
			bf16, w := trainEngineOn(t, c.m, pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2,
				Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm, Precision: pr}, c.batchOf)
			same := 0
			for i := range fp32 {
				if bf16[i] == fp32[i] {
					same++
				}
				if d := math.Abs(bf16[i]-fp32[i]) / math.Abs(fp32[i]); d >= 1e-2 {
					t.Errorf("%s %v step %d: bf16 loss %v, fp32 %v: relative difference %.3g", c.name, pr.Arithmetic(), i+1, bf16[i], fp32[i], d)
				}
			}
			if same == len(fp32) {
				t.Errorf("%s %v: bf16 gives fp32's losses %v", c.name, pr.Arithmetic(), fp32)
			}
			why := within(bf16, pairs, w, pairsW, 0)
			if pr == nn.BF16Pairs && why != "" {
				t.Errorf("%s: 1f1b over 2 stages against nn.Sequential, both in %v: %s", c.name, pr.Arithmetic(), why)
			}
			if pr == nn.BF16 && why == "" && c.name == "gpt" {
				t.Errorf("%s: the two arithmetics give the same losses and weights", c.name)
			}
		}
	}
}

// TestRemoteBF16: stages on workers compute in the coordinator's precision
// and arithmetic, whatever their CPUs run natively: a bf16 GPT on two
// hosts gives the in-process bf16 run's bits in either arithmetic.
func TestRemoteBF16(t *testing.T) {
	hosts := workers(t, 2, "")
	for _, pr := range []nn.Precision{nn.BF16, nn.BF16Pairs} {
		cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 3, Loss: nn.CrossEntropy, Optimizer: sgd,
			ClipNorm: clipNorm, RunID: "bf16", Hang: 5 * time.Second, Precision: pr}
		wantLoss, wantW := trainEngineOn(t, tinyGPT, cfg, gptBatch)
		cfg.Hosts = hosts
		gotLoss, gotW := trainEngineOn(t, tinyGPT, cfg, gptBatch)
		if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
			t.Errorf("bf16 (%v) on hosts: %s", pr.Arithmetic(), why)
		}
	}
}
