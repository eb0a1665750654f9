package model_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// cnn is a small CNN on 1×8×8 samples, with batch norm and dropout.
var cnn = model.Description{
	Format: model.Format, Sample: []int{1, 8, 8}, Seed: 3, Loss: nn.CrossEntropy,
	Classes: []string{"a", "b", "c"}, Input: model.Input{Data: "digits", Divide: 16},
	Layers: []nn.Spec{{Type: "conv2d", Channels: 4, Kernel: 3, Padding: 1, Init: nn.TorchDefault}, {Type: "batchnorm"},
		{Type: "relu"}, {Type: "maxpool2d", Kernel: 2}, {Type: "flatten"}, {Type: "dropout", P: 0.5},
		{Type: "linear", Units: 3, Init: nn.TorchDefault}},
}

// trained returns the layers of d after a few training passes (so batch
// norm's running statistics are not their start values) and their tensors
// named as a checkpoint names them.
func trained(t testing.TB, d model.Description) ([]nn.Layer, map[string]*tensor.Tensor) {
	layers, err := nn.BuildShape(d.Layers, d.Sample, d.Seed, tensor.Float32, 0, len(d.Layers))
	if err != nil {
		t.Fatal(err)
	}
	seq := &nn.Sequential{Layers: layers, Loss: d.Loss}
	rng := rand.New(rand.NewPCG(1, 1))
	for step := 1; step <= 3; step++ {
		x := tensor.RandNormal(rng, tensor.Float32, 0, 1, 32, d.Features())
		labels := make([]int, 32)
		for i := range labels {
			labels[i] = rng.IntN(len(d.Classes))
		}
		if _, err := seq.TrainStep(step, x, nn.Target{Labels: labels}, 1); err != nil {
			t.Fatal(err)
		}
	}
	weights := map[string]*tensor.Tensor{}
	for i, l := range layers {
		for _, p := range l.Params() {
			weights[fmt.Sprintf("%d.%s", i, p.Name)] = p.Value.Clone()
		}
		for _, b := range nn.BuffersOf(l) {
			weights[fmt.Sprintf("%d.%s", i, b.Name)] = b.Value.Clone()
		}
	}
	return layers, weights
}

func inputs(n int) *tensor.Tensor {
	return tensor.RandNormal(rand.New(rand.NewPCG(2, 2)), tensor.Float32, 0, 1, n, 64)
}

// TestPredictIsTheLayersEvaluation: Predict gives the softmax of the
// layers' evaluation forward (running statistics, no dropout) bit for bit,
// for flat and shaped inputs, and Classify its argmax.
func TestPredictIsTheLayersEvaluation(t *testing.T) {
	layers, weights := trained(t, cnn)
	m, err := model.New(cnn, weights)
	if err != nil {
		t.Fatal(err)
	}
	x := inputs(10)
	want := ops.Softmax((&nn.Sequential{Layers: layers}).Forward(nn.Pass{}, x), 1)
	for _, in := range []*tensor.Tensor{x, x.Reshape(10, 1, 8, 8)} {
		got, err := m.Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		if !tensor.EqualShapes(got.Shape(), []int{10, 3}) || !slices.Equal(got.Float32s(), want.Float32s()) {
			t.Fatalf("Predict %v: got %v, want %v", in.Shape(), got.Float32s(), want.Float32s())
		}
	}
	classes, err := m.Classify(x)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(classes) != fmt.Sprint(nn.Predict(want)) {
		t.Errorf("Classify: %v, want %v", classes, nn.Predict(want))
	}
	out, err := m.Outputs(x)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.FromOutputs(out); !slices.Equal(got.Float32s(), want.Float32s()) {
		t.Errorf("FromOutputs(Outputs): got %v, want Predict's %v", got.Float32s(), want.Float32s())
	}
}

// TestConcurrentPredict: 8 goroutines predicting at once get what one gets.
func TestConcurrentPredict(t *testing.T) {
	_, weights := trained(t, cnn)
	m, err := model.New(cnn, weights)
	if err != nil {
		t.Fatal(err)
	}
	x := inputs(33)
	want, err := m.Predict(x)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, err := m.Predict(x)
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(got.Float32s(), want.Float32s()) {
					errs <- fmt.Errorf("a concurrent Predict differs")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLoad: a checkpoint with a description loads as the model it was; one
// without, or a missing folder, is a clear error.
func TestLoad(t *testing.T) {
	_, weights := trained(t, cnn)
	desc, _ := json.Marshal(cnn)
	root := t.TempDir()
	if _, err := checkpoint.Save(root, checkpoint.Meta{Step: 5, Model: desc}, weights, nil); err != nil {
		t.Fatal(err)
	}
	old := t.TempDir()
	if _, err := checkpoint.Save(old, checkpoint.Meta{Step: 5}, weights, nil); err != nil {
		t.Fatal(err)
	}
	x := inputs(4)
	ref, _ := model.New(cnn, weights)
	want, _ := ref.Predict(x)
	for _, dir := range []string{root, checkpoint.StepDir(root, 5)} {
		m, err := model.Load(dir)
		if err != nil {
			t.Fatalf("Load(%s): %v", dir, err)
		}
		got, err := m.Predict(x)
		if err != nil || !slices.Equal(got.Float32s(), want.Float32s()) {
			t.Errorf("Load(%s): Predict differs from the model saved (%v)", dir, err)
		}
	}
	bad := cnn
	bad.Format = 99
	future, _ := json.Marshal(bad)
	other := t.TempDir()
	if _, err := checkpoint.Save(other, checkpoint.Meta{Step: 1, Model: future}, weights, nil); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir() // checkpoints/ with a folder a run
	if _, err := checkpoint.Save(filepath.Join(runs, "mlp"), checkpoint.Meta{Step: 5, Model: desc}, weights, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{old, "holds no model description"},
		{filepath.Join(root, "nowhere"), "no checkpoint there"},
		{other, "description format 99"},
		{runs, "no checkpoint there, but runs' folders: " + filepath.Join(runs, "mlp") + ": name one"},
	} {
		if _, err := model.Load(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s): %v, want an error containing %q", c.dir, err, c.want)
		}
	}
	// weights of another model
	delete(weights, "6.bias")
	if _, err := model.New(cnn, weights); err == nil || !strings.Contains(err.Error(), `"6.bias" is missing`) {
		t.Errorf("New without 6.bias: %v", err)
	}
}

// TestBadInputs: a wrong width or dtype is an error naming the shape, not a
// panic.
func TestBadInputs(t *testing.T) {
	_, weights := trained(t, cnn)
	m, _ := model.New(cnn, weights)
	for _, x := range []*tensor.Tensor{tensor.Zeros(tensor.Float32, 2, 63), tensor.Zeros(tensor.Float32, 2, 8, 8), tensor.Zeros(tensor.Float64, 2, 64)} {
		if _, err := m.Predict(x); err == nil {
			t.Errorf("Predict(%v %v): no error", x.DType(), x.Shape())
		}
	}
}

// TestPrepare: raw values become features as the data set made them.
func TestPrepare(t *testing.T) {
	d := model.Description{Sample: []int{2}, Input: model.Input{Divide: 2, Mean: []float64{1, 0}, Std: []float64{2, 1}}}
	raw := tensor.FromFloat32s([]float32{4, 6, 0, -2}, 2, 2)
	got, err := d.Prepare(raw)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Float32s()) != "[0.5 3 -0.5 -1]" {
		t.Errorf("Prepare: %v", got.Float32s())
	}
	if _, err := d.Prepare(tensor.Zeros(tensor.Float32, 1, 3)); err == nil {
		t.Error("Prepare of 3 features for 2: no error")
	}
}

// TestPredictAllocatesOnlyItsResult: a warm model, an MLP or a CNN with
// batch norm, allocates the result of each call and nothing else of its own.
func TestPredictAllocatesOnlyItsResult(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	mlp := model.Description{Format: model.Format, Sample: []int{64}, Loss: nn.CrossEntropy, Classes: []string{"a", "b", "c"},
		Input: model.Input{Divide: 1}, Layers: []nn.Spec{{Type: "linear", Units: 32, Init: nn.HeUniform}, {Type: "relu"},
			{Type: "dropout", P: 0.2}, {Type: "linear", Units: 3, Init: nn.XavierUniform}}}
	for _, d := range []model.Description{mlp, cnn} {
		_, weights := trained(t, d)
		m, _ := model.New(d, weights)
		x := inputs(16)
		m.Predict(x)
		allocs := testing.AllocsPerRun(20, func() { m.Outputs(x) })
		if allocs > 3 { // the result: its header, shape and data
			t.Errorf("%v: Outputs allocates %.0f times a call, want at most 3 (the result)", d.Sample, allocs)
		}
	}
}

// TestEvaluate: Evaluate gives nn.Sequential.Evaluate's loss and accuracy
// bit for bit, for any chunk size, flat or shaped inputs; a wrong input or
// target is an error, not a panic.
func TestEvaluate(t *testing.T) {
	layers, weights := trained(t, cnn)
	m, err := model.New(cnn, weights)
	if err != nil {
		t.Fatal(err)
	}
	x := inputs(50)
	labels := make([]int, 50)
	for i := range labels {
		labels[i] = i % 3
	}
	target := nn.Target{Labels: labels}
	for _, rows := range []int{1, 7, 50, 1024} {
		wantLoss, wantAcc := (&nn.Sequential{Layers: layers, Loss: cnn.Loss}).Evaluate(x, target, rows)
		for _, in := range []*tensor.Tensor{x, x.Reshape(50, 1, 8, 8)} {
			loss, acc, err := m.Evaluate(in, target, rows)
			if err != nil || math.Float64bits(loss) != math.Float64bits(wantLoss) || acc != wantAcc {
				t.Errorf("rows %d, input %v: got %v, %v, %v, want %v, %v", rows, in.Shape(), loss, acc, err, wantLoss, wantAcc)
			}
		}
	}
	bad := slices.Clone(labels)
	bad[3] = 7
	for _, c := range []struct {
		name string
		x    *tensor.Tensor
		t    nn.Target
	}{
		{"63 features", tensor.Zeros(tensor.Float32, 50, 63), target},
		{"49 labels", x, nn.Target{Labels: labels[:49]}},
		{"label 7 of 3 classes", x, nn.Target{Labels: bad}},
	} {
		if _, _, err := m.Evaluate(c.x, c.t, 16); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, _, err := m.Evaluate(x, target, 16); err != nil { // the model still works
		t.Errorf("after the errors: %v", err)
	}
}

// TestDescriptionData: the data record survives a checkpoint, one without
// it still loads, and Check refuses a record that disagrees with the input.
func TestDescriptionData(t *testing.T) {
	_, weights := trained(t, cnn)
	with := cnn
	with.Data = &model.Data{Seed: 1 << 60, Name: "digits", TestFraction: 0.25}
	for _, d := range []model.Description{with, cnn} {
		desc, _ := json.Marshal(d)
		root := t.TempDir()
		if _, err := checkpoint.Save(root, checkpoint.Meta{Step: 9, Epoch: 2, Batch: 3, Model: desc}, weights, nil); err != nil {
			t.Fatal(err)
		}
		m, err := model.Load(root)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Data, d.Data) {
			t.Errorf("Data: got %+v, want %+v", m.Data, d.Data)
		}
		want := model.Checkpoint{Dir: checkpoint.StepDir(root, 9), Step: 9, Epoch: 2, Batch: 3}
		if m.Checkpoint != want {
			t.Errorf("Checkpoint: got %+v, want %+v", m.Checkpoint, want)
		}
	}
	other := with
	other.Data = &model.Data{Name: "mnist"}
	if err := other.Check(); err == nil || !strings.Contains(err.Error(), `"mnist"`) {
		t.Errorf("Check of data mnist for a digits input: %v", err)
	}
}
