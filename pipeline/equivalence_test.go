package pipeline_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

const (
	features = 8
	classes  = 4
	rows     = 256
	steps    = 6
	seed     = 11
)

// testModel is the model of the tests: linear, relu, dropout, linear
// without a bias, tanh, linear. Torch's default init draws non-zero
// biases, so that their gradients and updates show.
var testModel = pipeline.Model{Specs: []nn.Spec{
	{Type: "linear", Units: 16, Init: nn.TorchDefault}, {Type: "relu"}, {Type: "dropout", P: 0.25},
	{Type: "linear", Units: 12, Init: nn.TorchDefault, Bias: new(false)}, {Type: "tanh"}, {Type: "linear", Units: classes, Init: nn.TorchDefault},
}, Sample: []int{features}, Seed: seed}

// layersOf builds m's layers, as the engine does, for nn.Sequential.
func layersOf(t testing.TB, m pipeline.Model) []nn.Layer {
	t.Helper()
	layers, err := nn.BuildShape(m.Specs, m.Sample, m.Seed, m.DType, 0, len(m.Specs))
	if err != nil {
		t.Fatal(err)
	}
	return layers
}

// batch returns the mini-batch of a step.
func batch(step int) (*tensor.Tensor, nn.Target) {
	rng := rand.New(rand.NewPCG(seed, 1000+uint64(step)))
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, rows, features)
	labels := make([]int, rows)
	for i := range labels {
		labels[i] = rng.IntN(classes)
	}
	return x, nn.Target{Labels: labels}
}

func lr(step int) float64 { return 0.1 / float64(step) }

// sgd is the optimizer of the tests: momentum and weight decay, so that its
// state and its reading of the weights both matter.
var sgd = optim.Spec{Kind: "sgd", Momentum: 0.9, WeightDecay: 1e-3}

const clipNorm = 0.5

// reference trains the model with nn.Sequential on one goroutine.
func reference(t testing.TB, micro int) ([]float64, map[string][]float32) {
	return referenceOn(t, layersOf(t, testModel), batch, micro)
}

// referenceOn trains layers with nn.Sequential on one goroutine on the
// mini-batches batchOf gives, and returns the step losses and the final
// parameters and buffers.
func referenceOn(t testing.TB, layers []nn.Layer, batchOf func(step int) (*tensor.Tensor, nn.Target), micro int, granule ...int) ([]float64, map[string][]float32) {
	seq := &nn.Sequential{Layers: layers, Loss: nn.CrossEntropy}
	if len(granule) > 0 {
		seq.Granule = granule[0]
	}
	return trainSequential(t, seq, batchOf, micro)
}

// trainSequential trains seq on one goroutine as referenceOn does. With
// ties it trains as a trainer of tied weights does: the copies' gradients
// summed, the norm counting each weight once.
func trainSequential(t testing.TB, seq *nn.Sequential, batchOf func(step int) (*tensor.Tensor, nn.Target), micro int, ties ...nn.Tie) ([]float64, map[string][]float32) {
	return trainSequentialWith(t, seq, sgd, clipNorm, batchOf, micro, ties...)
}

// trainSequentialWith is trainSequential with the optimizer of spec and the
// norm clip, as three passes: ScaleGrads, Step, and the next step's ZeroGrad.
func trainSequentialWith(t testing.TB, seq *nn.Sequential, spec optim.Spec, clip float64, batchOf func(step int) (*tensor.Tensor, nn.Target), micro int, ties ...nn.Tie) ([]float64, map[string][]float32) {
	opt, err := spec.New()
	if err != nil {
		t.Fatal(err)
	}
	ps := seq.Params() // optimizers take the layers' parameters as they are
	var losses []float64
	for step := 1; step <= steps; step++ {
		seq.ZeroGrad()
		x, tg := batchOf(step)
		loss, err := seq.TrainStep(step, x, tg, micro)
		if err != nil {
			t.Fatal(err)
		}
		if len(ties) == 0 {
			optim.ClipGradNorm(ps, clip)
		} else {
			nn.SumTied(ps, ties)
			optim.ScaleGrads(ps, optim.ClipCoef(optim.GradNorm(nn.Untied(ps, ties)), clip))
		}
		if err := opt.Step(ps, lr(step)); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
	}
	w := map[string][]float32{}
	for _, p := range seq.Params() {
		w[p.Name] = p.Value.Float32s()
	}
	for i, l := range seq.Layers {
		for _, b := range nn.BuffersOf(l) {
			w[fmt.Sprintf("%d.%s", i, b.Name)] = b.Value.Float32s()
		}
	}
	return losses, w
}

func runPipeline(t testing.TB, sched actors.Schedule, stages, micro int, shards []int, split ...bool) ([]float64, map[string][]float32) {
	return trainEngine(t, testModel, pipeline.Config{
		Schedule: sched, MicroBatches: micro, Stages: stages, Shards: shards, SplitBackward: len(split) > 0 && split[0],
		Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm,
	})
}

// trainEngine runs the test's steps on an engine of m and cfg and returns
// the losses and final weights.
func trainEngine(t testing.TB, m pipeline.Model, cfg pipeline.Config) ([]float64, map[string][]float32) {
	t.Helper()
	return trainEngineOn(t, m, cfg, batch)
}

// trainEngineOn is trainEngine on the mini-batches batchOf gives.
func trainEngineOn(t testing.TB, m pipeline.Model, cfg pipeline.Config, batchOf func(step int) (*tensor.Tensor, nn.Target)) ([]float64, map[string][]float32) {
	t.Helper()
	eng, err := pipeline.New(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, st := range eng.Stages() {
		remote := slices.Contains(cfg.Hosts, st.Host)
		if remote != (len(cfg.Hosts) > 0) {
			t.Fatalf("stage %d runs on %q with hosts %v", st.Actor, st.Host, cfg.Hosts)
		}
		if held := eng.Plan().Slots[st.Actor].Layers != nil; held == remote {
			t.Fatalf("stage %d runs on %q and its layers are held here: %v", st.Actor, st.Host, held)
		}
	}
	var losses []float64
	for step := 1; step <= steps; step++ {
		x, tg := batchOf(step)
		loss, err := eng.Step(step, lr(step), x, tg)
		if err != nil {
			t.Fatalf("%v stages=%d micro=%d hosts=%v step %d: %v", cfg.Schedule, cfg.Stages, cfg.MicroBatches, cfg.Hosts, step, err)
		}
		losses = append(losses, loss)
	}
	return losses, weightsOf(t, eng)
}

// weightsOf returns the engine's weights as float32s, by name.
func weightsOf(t testing.TB, eng *pipeline.Engine) map[string][]float32 {
	t.Helper()
	snap, _, err := eng.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	w := map[string][]float32{}
	for name, v := range snap {
		w[name] = v.Float32s()
	}
	return w
}

// TestEquivalence is the invariant the pipeline rests on: every schedule at
// every stage count, with or without the split backward (dX sent before dW),
// and every split of the 256-row mini-batch into 1, 2, 4 or 8 micro-batches,
// gives the step losses and final weights of nn.Sequential with one
// micro-batch, bit for bit.
func TestEquivalence(t *testing.T) {
	wantLoss, wantW := reference(t, 1)
	check := func(t *testing.T, gotLoss []float64, gotW map[string][]float32) {
		t.Helper()
		for i := range wantLoss {
			if math.Float64bits(gotLoss[i]) != math.Float64bits(wantLoss[i]) {
				t.Errorf("step %d: got loss %v, want %v (nn.Sequential, micro=1)", i+1, gotLoss[i], wantLoss[i])
			}
		}
		if len(gotW) != len(wantW) {
			t.Fatalf("got %d parameters, want %d", len(gotW), len(wantW))
		}
		for name, want := range wantW {
			got := gotW[name]
			for j := range want {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Errorf("%s[%d]: got %v, want %v (nn.Sequential, micro=1)", name, j, got[j], want[j])
					break
				}
			}
		}
	}
	for _, micro := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("nn.Sequential/micro=%d", micro), func(t *testing.T) {
			gotLoss, gotW := reference(t, micro)
			check(t, gotLoss, gotW)
		})
		for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
			for _, cfg := range [][2]int{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {0, 1}, {2, 1}} {
				stages, split := cfg[0], cfg[1] == 1
				t.Run(fmt.Sprintf("%v/stages=%d/micro=%d/split=%v", sched, stages, micro, split), func(t *testing.T) {
					gotLoss, gotW := runPipeline(t, sched, stages, micro, nil, split)
					check(t, gotLoss, gotW)
				})
			}
		}
	}
}

// TestShards splits linear layers' columns over actors: results stay within
// 1e-6 relative of the unsharded model.
func TestShards(t *testing.T) {
	wantLoss, wantW := reference(t, 4)
	for _, shards := range [][]int{{2, 1, 1, 3, 1, 2}, {4, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 4}} {
		for _, sched := range []actors.Schedule{actors.Sequential, actors.OneFOneB} {
			gotLoss, gotW := runPipeline(t, sched, 0, 4, shards)
			for i := range wantLoss {
				if rel := math.Abs(gotLoss[i]-wantLoss[i]) / math.Abs(wantLoss[i]); rel > 1e-6 {
					t.Errorf("shards %v %v step %d: loss %v, want %v (relative %.2g)", shards, sched, i+1, gotLoss[i], wantLoss[i], rel)
				}
			}
			for name, want := range wantW {
				got := gotW[name]
				if len(got) != len(want) {
					t.Fatalf("shards %v: %s has %d values, want %d", shards, name, len(got), len(want))
				}
				for j := range want {
					if d := math.Abs(float64(got[j] - want[j])); d > 1e-6*math.Max(1, math.Abs(float64(want[j]))) {
						t.Errorf("shards %v %v: %s[%d] = %v, want %v", shards, sched, name, j, got[j], want[j])
						break
					}
				}
			}
		}
	}
}

// TestOptimizerStateGathered: the stages' own optimizers, gathered by
// Snapshot, hold exactly the state of one optimizer over nn.Sequential's
// parameters, and that state restored into another stage layout continues
// exactly as nn.Sequential does.
func TestOptimizerStateGathered(t *testing.T) {
	adam := optim.Spec{Kind: "adam", Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 1e-3}
	seq := &nn.Sequential{Layers: layersOf(t, testModel), Loss: nn.CrossEntropy}
	opt, err := adam.New()
	if err != nil {
		t.Fatal(err)
	}
	ps := seq.Params() // optimizers take the layers' parameters as they are
	refStep := func(step int) float64 {
		seq.ZeroGrad()
		x, tg := batch(step)
		loss, err := seq.TrainStep(step, x, tg, 2)
		if err != nil {
			t.Fatal(err)
		}
		optim.ClipGradNorm(ps, clipNorm)
		if err := opt.Step(ps, lr(step)); err != nil {
			t.Fatal(err)
		}
		return loss
	}
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Loss: nn.CrossEntropy, Optimizer: adam, ClipNorm: clipNorm}
	a, err := pipeline.New(testModel, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for step := 1; step <= 3; step++ {
		refStep(step)
		x, tg := batch(step)
		if _, err := a.Step(step, lr(step), x, tg); err != nil {
			t.Fatal(err)
		}
	}
	w, st, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := opt.State()
	if st.Kind != want.Kind || st.Step != want.Step || st.NumParams != want.NumParams || len(st.Tensors) != len(want.Tensors) {
		t.Fatalf("gathered state %s step %d, %d params, %d tensors; one optimizer has %s step %d, %d params, %d tensors",
			st.Kind, st.Step, st.NumParams, len(st.Tensors), want.Kind, want.Step, want.NumParams, len(want.Tensors))
	}
	for name, wt := range want.Tensors {
		got, ok := st.Tensors[name]
		if !ok || !slices.Equal(got.Float64s(), wt.Float64s()) {
			t.Errorf("state tensor %s differs from one optimizer's over nn.Sequential", name)
		}
	}
	cfg.Stages = 2
	b, err := pipeline.New(testModel, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Restore(w, st); err != nil {
		t.Fatal(err)
	}
	for step := 4; step <= 6; step++ {
		wantLoss := refStep(step)
		x, tg := batch(step)
		got, err := b.Step(step, lr(step), x, tg)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got) != math.Float64bits(wantLoss) {
			t.Errorf("step %d after restoring into 2 stages: loss %v, nn.Sequential %v", step, got, wantLoss)
		}
	}
	// a state that names a parameter the model does not have is refused
	st.Tensors["99.exp_avg"] = st.Tensors["0.exp_avg"]
	if err := b.Restore(w, st); err == nil || !strings.Contains(err.Error(), "names no parameter") {
		t.Errorf("Restore with a stray state tensor: error %v, want one saying it names no parameter", err)
	}
}

// TestMoveToContinues: training that moves back and forth between engines of
// different layouts after every step (as pipeline "auto" does while it
// tunes) gives nn.Sequential's losses, bit for bit.
func TestMoveToContinues(t *testing.T) {
	wantLoss, wantW := reference(t, 2)
	var engines []*pipeline.Engine
	for _, c := range []pipeline.Config{
		{Schedule: actors.Sequential, MicroBatches: 1, Stages: 1},
		{Schedule: actors.OneFOneB, MicroBatches: 2, SplitBackward: true},
		{Schedule: actors.GPipe, MicroBatches: 4, Stages: 2},
	} {
		c.Loss, c.Optimizer, c.ClipNorm = nn.CrossEntropy, sgd, clipNorm
		e, err := pipeline.New(testModel, c)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		engines = append(engines, e)
	}
	cur := engines[0]
	for step := 1; step <= steps; step++ {
		next := engines[step%len(engines)]
		if next != cur {
			if err := cur.MoveTo(next); err != nil {
				t.Fatal(err)
			}
			cur = next
		}
		x, tg := batch(step)
		loss, err := cur.Step(step, lr(step), x, tg)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(loss) != math.Float64bits(wantLoss[step-1]) {
			t.Errorf("step %d: loss %v, want %v (nn.Sequential)", step, loss, wantLoss[step-1])
		}
	}
	w, _, err := cur.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range wantW {
		if got := w[name].Float32s(); !slices.Equal(got, want) {
			t.Errorf("%s differs from nn.Sequential's after the moves", name)
		}
	}
}
