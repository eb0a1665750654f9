package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// invariantRun trains a float32 MLP with every kind of row reduction in its
// gradients (linear, prelu, layernorm), dropout, SGD with momentum and
// clip_norm for a few steps at the given batch size in micro micro-batches,
// and returns the step losses and final weights.
func invariantRun(t *testing.T, loss nn.Loss, batch, micro int) ([]float64, []*tt) {
	const in, hidden, classes, steps = 12, 40, 5, 4
	ln := nn.NewLayerNorm(tensor.Float32, hidden)
	ln.Gain.CopyFrom(tensor.RandUniform(newRNG(3), tensor.Float32, 0.5, 1.5, hidden))
	model := &nn.Sequential{Loss: loss, Layers: []nn.Layer{
		mustLinear(t, tensor.Float32, in, hidden, nn.HeUniform, 1),
		nn.NewPReLU(tensor.Float32),
		mustDropout(t, 0.2, 5, 2),
		ln,
		mustLinear(t, tensor.Float32, hidden, hidden, nn.HeUniform, 2),
		nn.NewReLU(),
		mustDropout(t, 0.1, 5, 6),
		mustLinear(t, tensor.Float32, hidden, classes, nn.XavierUniform, 3),
	}}
	opt, err := optim.NewSGD(optim.SGDConfig{Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	ps := model.Params() // optimizers take the layers' parameters as they are
	var losses []float64
	for step := 1; step <= steps; step++ {
		rng := rand.New(rand.NewPCG(7, uint64(step)))
		x := tensor.RandNormal(rng, tensor.Float32, 0, 1, batch, in)
		target := nn.Target{Labels: make([]int, batch)}
		for i := range target.Labels {
			target.Labels[i] = rng.IntN(classes)
		}
		if loss == nn.BCEWithLogits {
			target = nn.Target{Values: tensor.RandUniform(rng, tensor.Float32, 0, 1, batch, classes)}
		}
		model.ZeroGrad()
		l, err := model.TrainStep(step, x, target, micro)
		if err != nil {
			t.Fatalf("micro=%d step %d: %v", micro, step, err)
		}
		optim.ClipGradNorm(ps, 0.5)
		if err := opt.Step(ps, 0.05); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
	}
	var ws []*tt
	for _, p := range model.Params() {
		ws = append(ws, p.Value.Clone())
	}
	return losses, ws
}

// TestTrainStepSplitInvariant is the promise of ChunkRows: 1, 2, 4 and 8
// micro-batches of a 256-row mini-batch give the same step losses and
// weights, bit for bit, for every loss; and so do they of a 200-row one, whose
// micro-batches are not powers of two (7 chunks, the last of 8 rows), so
// that scaling by their share of the batch would round.
func TestTrainStepSplitInvariant(t *testing.T) {
	for _, loss := range nn.Losses {
		for _, batch := range []int{256, 200} {
			wantLoss, wantW := invariantRun(t, loss, batch, 1)
			for _, micro := range []int{2, 4, 8} {
				t.Run(fmt.Sprintf("%s/batch=%d/micro=%d", loss, batch, micro), func(t *testing.T) {
					gotLoss, gotW := invariantRun(t, loss, batch, micro)
					for i := range wantLoss {
						if math.Float64bits(gotLoss[i]) != math.Float64bits(wantLoss[i]) {
							t.Errorf("step %d: got loss %v, want %v (micro=1)", i+1, gotLoss[i], wantLoss[i])
						}
					}
					for i := range wantW {
						if !sameBits(gotW[i], wantW[i]) {
							t.Errorf("parameter %d: got weights differing from micro=1's by up to %g, want the same bits", i, maxDiff(gotW[i], wantW[i]))
						}
					}
				})
			}
		}
	}
}
