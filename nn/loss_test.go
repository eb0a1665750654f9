package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// oneHot returns the [len(labels), c] one-hot encoding of labels.
func oneHot(dt tensor.DType, labels []int, c int) *tt {
	t := tensor.Zeros(dt, len(labels), c)
	for i, y := range labels {
		t.Set(1, i, y)
	}
	return t
}

// TestLossMatchesOps checks that Compute returns the ops loss and the ops
// backward's gradient times scale.
func TestLossMatchesOps(t *testing.T) {
	const n, c = 5, 4
	rng := newRNG(101)
	labels := []int{3, 0, 1, 1, 2}
	out := randN(rng, tensor.Float64, 2, n, c)
	values := randN(rng, tensor.Float64, 1, n, c)
	probs := tensor.RandUniform(rng, tensor.Float64, 0, 1, n, c)
	one := tensor.Full(tensor.Float64, 1)
	for _, tc := range []struct {
		name     string
		loss     nn.Loss
		target   nn.Target
		wantLoss float64
		wantGrad *tt
	}{
		{"cross_entropy", nn.CrossEntropy, nn.Target{Labels: labels},
			ops.CrossEntropy(out, labels).Item(), ops.CrossEntropyBackward(one, out, labels)},
		{"mse values", nn.MSE, nn.Target{Values: values},
			ops.MSE(out, values).Item(), ops.MSEBackward(one, out, values)},
		// float32 values are converted to the output's dtype.
		{"mse float32 values", nn.MSE, nn.Target{Values: values.As(tensor.Float32)},
			ops.MSE(out, values.As(tensor.Float32).As(tensor.Float64)).Item(),
			ops.MSEBackward(one, out, values.As(tensor.Float32).As(tensor.Float64))},
		{"mse one-hot labels", nn.MSE, nn.Target{Labels: labels},
			ops.MSE(out, oneHot(tensor.Float64, labels, c)).Item(), ops.MSEBackward(one, out, oneHot(tensor.Float64, labels, c))},
		{"bce_with_logits", nn.BCEWithLogits, nn.Target{Values: probs},
			ops.BCEWithLogits(out, probs).Item(), ops.BCEWithLogitsBackward(one, out, probs)},
		{"bce_with_logits one-hot labels", nn.BCEWithLogits, nn.Target{Labels: labels},
			ops.BCEWithLogits(out, oneHot(tensor.Float64, labels, c)).Item(),
			ops.BCEWithLogitsBackward(one, out, oneHot(tensor.Float64, labels, c))},
	} {
		for _, scale := range []float64{1, 0.25, 3.0 / 7} {
			loss, grad := tc.loss.Compute(out, tc.target, scale)
			if math.Abs(loss-tc.wantLoss) > 1e-15*math.Max(1, math.Abs(tc.wantLoss)) {
				t.Errorf("%s Compute(scale=%v) loss: got %v, want %v", tc.name, scale, loss, tc.wantLoss)
			}
			unscaled := tensor.FromFloat64s(tensor.Float64, grad.Float64s(), grad.Shape()...)
			d := unscaled.Data64()
			for i := range d {
				d[i] /= scale
			}
			if diff := maxDiff(unscaled, tc.wantGrad); diff > 1e-15 {
				t.Errorf("%s Compute(scale=%v) grad/scale: got %v, want %v (max diff %g)", tc.name, scale, unscaled, tc.wantGrad, diff)
			}
		}
	}
}

func TestLossFloat32(t *testing.T) {
	out := tensor.FromFloat64s(tensor.Float32, []float64{1, -1, 0.5, 2}, 2, 2)
	for _, l := range nn.Losses {
		loss, grad := l.Compute(out, nn.Target{Labels: []int{0, 1}}, 0.5)
		if grad.DType() != tensor.Float32 || !tensor.EqualShapes(grad.Shape(), out.Shape()) {
			t.Errorf("%s: float32 [2 2] output gave a %v %v gradient", l, grad.DType(), grad.Shape())
		}
		if math.IsNaN(loss) {
			t.Errorf("%s: loss is NaN", l)
		}
	}
}

func TestLossMisusePanics(t *testing.T) {
	out := tensor.Zeros(tensor.Float64, 2, 3)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"unknown loss", func() { nn.Loss("hinge").Compute(out, nn.Target{Labels: []int{0, 1}}, 1) }},
		{"cross_entropy without labels", func() { nn.CrossEntropy.Compute(out, nn.Target{Values: out}, 1) }},
		{"mse with a label out of range", func() { nn.MSE.Compute(out, nn.Target{Labels: []int{0, 3}}, 1) }},
		{"mse with a negative label", func() { nn.MSE.Compute(out, nn.Target{Labels: []int{-1, 0}}, 1) }},
	} {
		if _, ok := panicText(c.f); !ok {
			t.Errorf("%s: did not panic", c.name)
		}
	}
}

func TestLossValid(t *testing.T) {
	for _, c := range []struct {
		loss nn.Loss
		want bool
	}{
		{nn.CrossEntropy, true}, {nn.MSE, true}, {nn.BCEWithLogits, true},
		{"cross-entropy", false}, {"", false}, {"MSE", false},
	} {
		if got := c.loss.Valid(); got != c.want {
			t.Errorf("Loss(%q).Valid() = %v, want %v", string(c.loss), got, c.want)
		}
	}
}

func TestTargetRowsAndSlice(t *testing.T) {
	labels := []int{0, 1, 2, 1, 0}
	values := tensor.FromFloat64s(tensor.Float64, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 5, 2)
	for _, c := range []struct {
		name string
		t    nn.Target
	}{
		{"labels", nn.Target{Labels: labels}},
		{"values", nn.Target{Values: values}},
		{"both", nn.Target{Labels: labels, Values: values}},
	} {
		if got := c.t.Rows(); got != 5 {
			t.Errorf("%s Rows() = %d, want 5", c.name, got)
		}
		s := c.t.Slice(1, 3)
		if got := s.Rows(); got != 2 {
			t.Errorf("%s Slice(1, 3).Rows() = %d, want 2", c.name, got)
		}
		if c.t.Labels != nil && fmt.Sprint(s.Labels) != "[1 2]" {
			t.Errorf("%s Slice(1, 3).Labels = %v, want [1 2]", c.name, s.Labels)
		}
		if c.t.Labels == nil && s.Labels != nil {
			t.Errorf("%s Slice(1, 3).Labels = %v, want nil", c.name, s.Labels)
		}
		if c.t.Values != nil && fmt.Sprint(s.Values.Float64s()) != "[2 3 4 5]" {
			t.Errorf("%s Slice(1, 3).Values = %v, want [2 3 4 5]", c.name, s.Values)
		}
		if c.t.Values == nil && s.Values != nil {
			t.Errorf("%s Slice(1, 3).Values = %v, want nil", c.name, s.Values)
		}
	}
}

func TestPredict(t *testing.T) {
	out := tensor.FromFloat64s(tensor.Float32, []float64{0.1, 0.7, 0.2, 3, -1, 2, -5, -4, -3, 1, 1, 0}, 4, 3)
	if got, want := fmt.Sprint(nn.Predict(out)), "[1 0 2 0]"; got != want {
		t.Errorf("Predict(%v) = %v, want %v (ties go to the first)", out, got, want)
	}
}

// TestMicroBatchGradientsSumToBatch splits a mini-batch into micro-batches with
// SplitRows inside Sequential.TrainStep and wants the accumulated gradients and
// the returned mean loss of the whole mini-batch, as one micro-batch gives them,
// bit for bit in float64, for every loss and through LayerNorm and PReLU.
func TestMicroBatchGradientsSumToBatch(t *testing.T) {
	const n, in, hidden, out = 100, 4, 6, 3 // four row chunks, the last short
	rng := newRNG(111)
	x := randN(rng, tensor.Float64, 1, n, in)
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(out)
	}
	for _, c := range []struct {
		name   string
		loss   nn.Loss
		target nn.Target
	}{
		{"cross_entropy", nn.CrossEntropy, nn.Target{Labels: labels}},
		{"mse values", nn.MSE, nn.Target{Values: randN(rng, tensor.Float64, 1, n, out)}},
		{"mse one-hot labels", nn.MSE, nn.Target{Labels: labels}},
		{"bce_with_logits", nn.BCEWithLogits, nn.Target{Values: tensor.RandUniform(rng, tensor.Float64, 0, 1, n, out)}},
	} {
		for _, deep := range []bool{false, true} {
			build := func() *nn.Sequential {
				if !deep {
					return &nn.Sequential{Loss: c.loss, Layers: []nn.Layer{mustLinear(t, tensor.Float64, in, out, nn.XavierNormal, 3)}}
				}
				ln := nn.NewLayerNorm(tensor.Float64, hidden)
				ln.Gain.CopyFrom(tensor.RandUniform(newRNG(4), tensor.Float64, 0.5, 1.5, hidden))
				return &nn.Sequential{Loss: c.loss, Layers: []nn.Layer{
					mustLinear(t, tensor.Float64, in, hidden, nn.HeUniform, 3),
					nn.NewTanh(), ln, nn.NewPReLU(tensor.Float64),
					mustLinear(t, tensor.Float64, hidden, out, nn.XavierNormal, 5),
				}}
			}
			whole := build()
			wantLoss, err := whole.TrainStep(1, x, c.target, 1)
			if err != nil {
				t.Fatalf("%s: TrainStep(micro=1): %v", c.name, err)
			}
			// The whole batch's loss, computed directly (no dropout: the
			// evaluation forward is the training forward).
			if want, _ := c.loss.Compute(whole.Forward(nn.Pass{}, x), c.target, 1); math.Abs(want-wantLoss) > 1e-12 {
				t.Errorf("%s deep=%v: TrainStep(micro=1) loss %v, want the whole batch's %v", c.name, deep, wantLoss, want)
			}
			wantGrads := cloneGrads(whole.Params())

			for _, micro := range []int{2, 3, 4, 7, 10, 13} {
				m := build()
				loss, err := m.TrainStep(1, x, c.target, micro)
				if err != nil {
					t.Fatalf("%s: TrainStep(micro=%d): %v", c.name, micro, err)
				}
				if math.Float64bits(loss) != math.Float64bits(wantLoss) {
					t.Errorf("%s deep=%v: mean loss of %d rows in %d micro-batches: got %v, want %v", c.name, deep, n, micro, loss, wantLoss)
				}
				for i, p := range m.Params() {
					if !sameBits(p.Grad, wantGrads[i]) {
						t.Errorf("%s deep=%v: %s grad of %d rows in %d micro-batches: got %v, want %v (max diff %g)",
							c.name, deep, p.Name, n, micro, p.Grad, wantGrads[i], maxDiff(p.Grad, wantGrads[i]))
					}
				}
				for i, l := range m.Layers {
					if l.InFlight() != 0 {
						t.Errorf("%s: layer %d holds %d micro-batches after TrainStep", c.name, i, l.InFlight())
					}
				}
			}
		}
	}
}
