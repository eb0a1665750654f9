package nn_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// blobs returns n points in the plane from three well separated Gaussian
// clusters, with their cluster as label.
func blobs(rng *rand.Rand, dt tensor.DType, n int) (*tt, []int) {
	centers := [3][2]float64{{0, 3}, {2.6, -1.5}, {-2.6, -1.5}}
	x := tensor.Zeros(dt, n, 2)
	labels := make([]int, n)
	for i := range n {
		c := rng.IntN(3)
		labels[i] = c
		x.Set(centers[c][0]+0.6*rng.NormFloat64(), i, 0)
		x.Set(centers[c][1]+0.6*rng.NormFloat64(), i, 1)
	}
	return x, labels
}

// mlp returns a 2-16-3 perceptron with ReLU and dropout, seeded.
func mlp(t testing.TB, dt tensor.DType, seed uint64) *nn.Sequential {
	return &nn.Sequential{Loss: nn.CrossEntropy, Layers: []nn.Layer{
		mustLinear(t, dt, 2, 16, nn.HeUniform, seed),
		nn.NewReLU(),
		mustDropout(t, 0.1, seed, 2),
		mustLinear(t, dt, 16, 3, nn.XavierUniform, seed+1),
	}}
}

// sgd is plain stochastic gradient descent, w -= lr*g, then zeroes the gradients.
func sgd(ps []nn.Param, lr float64) {
	for _, p := range ps {
		if p.Value.DType() == tensor.Float32 {
			w, g := p.Value.Data32(), p.Grad.Data32()
			for i := range w {
				w[i] -= float32(lr) * g[i]
			}
		} else {
			w, g := p.Value.Data64(), p.Grad.Data64()
			for i := range w {
				w[i] -= lr * g[i]
			}
		}
		p.Grad.Zero()
	}
}

// train runs epochs of mini-batch SGD and returns the loss of every step.
func train(t testing.TB, model *nn.Sequential, x *tt, labels []int, epochs, batch, micro int, lr float64) []float64 {
	var losses []float64
	n, step := x.Shape()[0], 0
	for range epochs {
		for lo := 0; lo < n; lo += batch {
			hi := min(lo+batch, n)
			step++
			loss, err := model.TrainStep(step, nn.SliceRows(x, lo, hi), nn.Target{Labels: labels[lo:hi]}, micro)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			losses = append(losses, loss)
			sgd(model.Params(), lr)
		}
	}
	return losses
}

func TestSequentialLearns(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		rng := newRNG(121)
		xTrain, yTrain := blobs(rng, dt, 300)
		xTest, yTest := blobs(rng, dt, 150)
		model := mlp(t, dt, 8)
		loss0, acc0 := model.Evaluate(xTest, nn.Target{Labels: yTest}, 64)
		train(t, model, xTrain, yTrain, 15, 30, 3, 0.1)
		loss, acc := model.Evaluate(xTest, nn.Target{Labels: yTest}, 64)
		t.Logf("%v: test loss %.4f -> %.4f, accuracy %.3f -> %.3f", dt, loss0, loss, acc0, acc)
		if loss > 0.2*loss0 || acc < 0.97 {
			t.Errorf("%v: after training: loss %.4f (from %.4f), accuracy %.3f (from %.3f); want loss below a fifth and accuracy >= 0.97",
				dt, loss, loss0, acc, acc0)
		}
		for i, l := range model.Layers {
			if l.InFlight() != 0 {
				t.Errorf("%v: layer %d holds %d micro-batches after training", dt, i, l.InFlight())
			}
		}
	}
}

func TestSequentialDeterministic(t *testing.T) {
	x, labels := blobs(newRNG(131), tensor.Float32, 120)
	run := func() ([]float64, []*tt) {
		model := mlp(t, tensor.Float32, 99)
		losses := train(t, model, x, labels, 3, 24, 4, 0.05)
		var ws []*tt
		for _, p := range model.Params() {
			ws = append(ws, p.Value.Clone())
		}
		return losses, ws
	}
	l1, w1 := run()
	l2, w2 := run()
	for i := range l1 {
		if math.Float64bits(l1[i]) != math.Float64bits(l2[i]) {
			t.Errorf("step %d: losses of two runs: got %v and %v, want bit-identical", i+1, l1[i], l2[i])
		}
	}
	for i := range w1 {
		if !sameBits(w1[i], w2[i]) {
			t.Errorf("parameter %d after two runs: %v and %v, want bit-identical", i, w1[i], w2[i])
		}
	}
}

func TestSequentialNonFinite(t *testing.T) {
	const n = 3 * nn.ChunkRows
	rng := newRNG(141)
	labels := make([]int, n)
	for i := range labels {
		labels[i] = i % 3
	}
	newModel := func(mid nn.Layer) *nn.Sequential {
		return &nn.Sequential{Loss: nn.CrossEntropy, Layers: []nn.Layer{
			mustLinear(t, tensor.Float64, 2, 4, nn.HeNormal, 1), mid,
			mustLinear(t, tensor.Float64, 4, 3, nn.HeNormal, 2),
		}}
	}
	x := randN(rng, tensor.Float64, 1, n, 2)
	nanX := x.Clone()
	nanX.Set(math.NaN(), nn.ChunkRows+4, 1) // in micro-batch 1 of 3
	nanW := newModel(nn.NewReLU())
	nanW.Layers[2].(*nn.Linear).W.Set(math.NaN(), 1, 1)
	infY := nn.Target{Values: tensor.Zeros(tensor.Float64, n, 3)}
	infY.Values.Set(math.Inf(1), 0, 0)

	for _, c := range []struct {
		name    string
		model   *nn.Sequential
		x       *tt
		target  nn.Target
		want    nn.NonFiniteError
		wantMsg string
	}{
		{"NaN input", newModel(nn.NewTanh()), nanX, nn.Target{Labels: labels},
			nn.NonFiniteError{Layer: 0, Kind: "linear", Step: 6, Where: "forward"}, "layer 0 (linear)"},
		{"NaN weight", nanW, x, nn.Target{Labels: labels},
			nn.NonFiniteError{Layer: 2, Kind: "linear", Step: 6, Where: "forward"}, "layer 2 (linear)"},
		{"NaN input gradient", newModel(&nanBackward{n: map[int]bool{}}), x, nn.Target{Labels: labels},
			nn.NonFiniteError{Layer: 1, Kind: "nan_backward", Step: 6, Where: "backward"}, "layer 1 (nan_backward)"},
		{"infinite target", &nn.Sequential{Loss: nn.MSE, Layers: []nn.Layer{mustLinear(t, tensor.Float64, 2, 3, nn.HeNormal, 1)}}, x, infY,
			nn.NonFiniteError{Step: 6, Where: "loss"}, "non-finite loss"},
	} {
		_, err := c.model.TrainStep(6, c.x, c.target, 3)
		var nf *nn.NonFiniteError
		if !errors.As(err, &nf) {
			t.Errorf("%s: TrainStep error %v, want a *NonFiniteError", c.name, err)
			continue
		}
		if *nf != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, *nf, c.want)
		}
		if !strings.Contains(err.Error(), c.wantMsg) {
			t.Errorf("%s: error %q does not contain %q", c.name, err, c.wantMsg)
		}
		for i, l := range c.model.Layers {
			if l.InFlight() != 0 {
				t.Errorf("%s: layer %d holds %d micro-batches after the failed step", c.name, i, l.InFlight())
			}
		}
	}
}

func TestEvaluate(t *testing.T) {
	rng := newRNG(151)
	x, labels := blobs(rng, tensor.Float64, 37)
	model := mlp(t, tensor.Float64, 5)
	target := nn.Target{Labels: labels}
	wantLoss, _ := model.Loss.Compute(model.Forward(nn.Pass{}, x), target, 1)
	correct := 0
	for i, p := range nn.Predict(model.Forward(nn.Pass{}, x)) {
		if p == labels[i] {
			correct++
		}
	}
	wantAcc := float64(correct) / 37
	for _, batch := range []int{1, 5, 10, 36, 37, 100, 0} {
		loss, acc := model.Evaluate(x, target, batch)
		if math.Abs(loss-wantLoss) > 1e-12 || acc != wantAcc {
			t.Errorf("Evaluate(37 rows, batch %d) = %v, %v, want %v, %v", batch, loss, acc, wantLoss, wantAcc)
		}
	}
	for i, l := range model.Layers {
		if l.InFlight() != 0 {
			t.Errorf("layer %d holds %d micro-batches after Evaluate, want 0", i, l.InFlight())
		}
	}
	// Values only: no accuracy.
	values := nn.Target{Values: randN(rng, tensor.Float64, 1, 37, 3)}
	model.Loss = nn.MSE
	if _, acc := model.Evaluate(x, values, 8); !math.IsNaN(acc) {
		t.Errorf("Evaluate with values only: accuracy %v, want NaN", acc)
	}
	// No rows.
	if loss, acc := model.Evaluate(tensor.Zeros(tensor.Float64, 0, 2), nn.Target{Labels: []int{}}, 8); !math.IsNaN(loss) || !math.IsNaN(acc) {
		t.Errorf("Evaluate of no rows = %v, %v, want NaN, NaN", loss, acc)
	}
}

// TestGPipeScheduleMatchesTrainStep drives the layers by hand as a pipeline
// would under GPipe (every forward, then every backward) and wants the losses
// and gradients of Sequential.TrainStep to the bit, dropout included: masks are
// keyed by micro-batch, and gradients accumulate in micro-batch order.
func TestGPipeScheduleMatchesTrainStep(t *testing.T) {
	const n, micro, step = 100, 4, 3
	x, labels := blobs(newRNG(161), tensor.Float32, n)
	target := nn.Target{Labels: labels}

	ref := mlp(t, tensor.Float32, 17)
	wantLoss, err := ref.TrainStep(step, x, target, micro)
	if err != nil {
		t.Fatal(err)
	}

	model := mlp(t, tensor.Float32, 17)
	spans := nn.SplitRows(n, micro)
	if len(spans) != micro {
		t.Fatalf("SplitRows(%d, %d): got %d micro-batches, want %d", n, micro, len(spans), micro)
	}
	outs := make([]*tt, len(spans))
	for m, sp := range spans {
		h := nn.SliceRows(x, sp.Lo, sp.Hi)
		for _, l := range model.Layers {
			h = l.Forward(nn.Pass{Step: step, Micro: m, Row: sp.Lo, Train: true}, h)
		}
		outs[m] = h
	}
	for i, l := range model.Layers {
		if got := l.InFlight(); got != len(spans) {
			t.Errorf("layer %d: InFlight() = %d with every micro-batch forwarded, want %d", i, got, len(spans))
		}
	}
	sum := nn.LossSum{Loss: model.Loss, Total: n}
	for m, sp := range spans {
		g := sum.Add(nil, outs[m], target.Slice(sp.Lo, sp.Hi))
		for i := len(model.Layers) - 1; i >= 0; i-- {
			g = model.Layers[i].Backward(nn.Pass{Step: step, Micro: m, Row: sp.Lo, Train: true}, g, i > 0)
		}
	}
	if loss := sum.Mean(); math.Float64bits(loss) != math.Float64bits(wantLoss) {
		t.Errorf("GPipe loss: got %v, want TrainStep's %v", loss, wantLoss)
	}
	want := ref.Params()
	for i, p := range model.Params() {
		if !sameBits(p.Grad, want[i].Grad) {
			t.Errorf("GPipe %s grad: got %v, want TrainStep's %v", p.Name, p.Grad, want[i].Grad)
		}
	}
}
