package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

var specModel = []nn.Spec{
	{Type: "linear", Units: 16, Init: nn.HeUniform},
	{Type: "prelu"},
	{Type: "dropout", P: 0.2},
	{Type: "linear", Units: 12, Init: nn.XavierNormal},
	{Type: "layernorm"},
	{Type: "gelu", Approximate: true},
	{Type: "linear", Units: 4, Init: nn.XavierUniform},
}

// TestBuildRange: any range of a model builds the layers, weights included,
// that building the whole model gives there: a stage builds only its own.
func TestBuildRange(t *testing.T) {
	whole, err := nn.Build(specModel, 9, 7, tensor.Float32, 0, len(specModel))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, 3}, {3, 7}, {2, 5}, {6, 7}, {4, 4}} {
		part, err := nn.Build(specModel, 9, 7, tensor.Float32, r[0], r[1])
		if err != nil {
			t.Fatalf("Build range %v: %v", r, err)
		}
		if len(part) != r[1]-r[0] {
			t.Fatalf("Build range %v: %d layers", r, len(part))
		}
		for k, l := range part {
			w := whole[r[0]+k]
			if l.Kind() != w.Kind() || reflect.TypeOf(l) != reflect.TypeOf(w) {
				t.Errorf("range %v: layer %d is %s, the whole model has %s", r, r[0]+k, l.Kind(), w.Kind())
			}
			ps, ws := l.Params(), w.Params()
			for j := range ps {
				if !slices.Equal(ps[j].Value.Float32s(), ws[j].Value.Float32s()) {
					t.Errorf("range %v: layer %d %s differs from the whole model's", r, r[0]+k, ps[j].Name)
				}
			}
		}
	}
	// a different seed draws different weights
	other, _ := nn.Build(specModel, 9, 8, tensor.Float32, 0, 1)
	if slices.Equal(other[0].Params()[0].Value.Float32s(), whole[0].Params()[0].Value.Float32s()) {
		t.Error("seeds 7 and 8 drew the same first-layer weights")
	}
}

func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		specs  []nn.Spec
		lo, hi int
		want   string
	}{
		{[]nn.Spec{{Type: "relu"}, {Type: "conv9d"}}, 0, 2, `nn: layer 1: unknown type "conv9d" (want one of [linear relu`},
		{[]nn.Spec{{Type: "linear", Units: 0, Init: nn.XavierUniform}}, 0, 1, "nn: layer 0 (linear): nn: linear layer needs positive sizes"},
		{[]nn.Spec{{Type: "dropout", P: 1.5}}, 0, 1, "nn: layer 0 (dropout): nn: dropout p = 1.5 is outside [0, 1)"},
		{[]nn.Spec{{Type: "relu"}}, 0, 2, "nn: layers [0, 2) of a model of 1"},
		{[]nn.Spec{{Type: "relu"}}, 1, 0, "nn: layers [1, 0) of a model of 1"},
	} {
		_, err := nn.Build(c.specs, 4, 1, tensor.Float32, c.lo, c.hi)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build(%v, [%d, %d)): error %v, want one containing %q", c.specs, c.lo, c.hi, err, c.want)
		}
	}
}

func TestLayerKeys(t *testing.T) {
	for _, c := range []struct {
		typ  string
		keys []string
		ok   bool
	}{
		{"linear", []string{"units", "init", "tie", "bias", "shards"}, true},
		{"embedding", []string{"dim", "init"}, true},
		{"transformer_block", []string{"heads", "hidden", "dropout", "init"}, true},
		{"conv2d", []string{"channels", "kernel", "stride", "padding", "init", "shards"}, true},
		{"maxpool2d", []string{"kernel", "stride"}, true},
		{"relu", nil, true},
		{"dropout", []string{"p"}, true},
		{"gelu", []string{"approximate"}, true},
		{"leaky_relu", []string{"alpha"}, true},
		{"softplus", []string{"beta", "threshold"}, true},
		{"conv9d", nil, false},
	} {
		keys, ok := nn.LayerKeys(c.typ)
		if ok != c.ok || !slices.Equal(keys, c.keys) {
			t.Errorf("LayerKeys(%q) = %v, %v; want %v, %v", c.typ, keys, ok, c.keys, c.ok)
		}
	}
	// every type builds: on images after a convolution, on features after
	// flatten and a linear layer, or on tokens, first or after an embedding
	conv := nn.Spec{Type: "conv2d", Channels: 2, Kernel: 3, Padding: 1, Init: nn.TorchDefault}
	flat := []nn.Spec{{Type: "flatten"}, {Type: "linear", Units: 5, Init: nn.XavierUniform}}
	emb := nn.Spec{Type: "embedding", Dim: 4, Vocab: 7, Init: nn.GPT}
	for _, typ := range nn.LayerTypes() {
		s := nn.Spec{Type: typ, Units: 3, Init: nn.XavierUniform, Alpha: 0.1, P: 0.1, Channels: 2, Kernel: 2, Dim: 4, Heads: 2, Vocab: 7}
		built := false
		for _, try := range []struct {
			prefix []nn.Spec
			sample []int
		}{{[]nn.Spec{conv}, []int{1, 6, 6}}, {append([]nn.Spec{conv}, flat...), []int{1, 6, 6}}, {nil, []int{6}}, {[]nn.Spec{emb}, []int{6}}} {
			specs := append(slices.Clone(try.prefix), s)
			if _, err := nn.OutShapes(specs, try.sample); err != nil {
				continue
			}
			ls, err := nn.BuildShape(specs, try.sample, 1, tensor.Float32, 0, len(specs))
			if err != nil || len(ls) != len(specs) || ls[len(ls)-1].Kind() != typ {
				t.Errorf("Build of a %s layer after %v: %v, %v", typ, try.prefix, ls, err)
			}
			built = true
			break
		}
		if !built {
			t.Errorf("a %s layer fits none of the models tried", typ)
		}
	}
}

// cnn is a small convolutional model of 1×8×8 samples.
var cnn = []nn.Spec{
	{Type: "conv2d", Channels: 3, Kernel: 3, Padding: 1, Init: nn.TorchDefault},
	{Type: "relu"},
	{Type: "maxpool2d", Kernel: 2},
	{Type: "conv2d", Channels: 4, Kernel: 3, Stride: 2, Init: nn.HeUniform},
	{Type: "avgpool2d", Kernel: 1},
	{Type: "flatten"},
	{Type: "linear", Units: 5, Init: nn.XavierUniform},
}

func TestOutShapes(t *testing.T) {
	got, err := nn.OutShapes(cnn, []int{1, 8, 8})
	want := [][]int{{3, 8, 8}, {3, 8, 8}, {3, 4, 4}, {4, 1, 1}, {4, 1, 1}, {4}, {5}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("OutShapes(cnn, [1 8 8]) = %v, %v; want %v", got, err, want)
	}
	for _, c := range []struct {
		specs  []nn.Spec
		sample []int
		want   string
	}{
		{cnn, []int{64}, "layer 0 (conv2d): samples [64]: not [C H W]"},
		{cnn, []int{1, 3, 3}, "layer 3 (conv2d): samples [3 1 1]: kernel 3×3 is larger than the padded input 1×1"},
		{[]nn.Spec{{Type: "layernorm"}}, []int{1, 8, 8}, "layer 0 (layernorm): needs flat samples [F] or tokens [T, D], got [1 8 8]: add a flatten layer"},
		{[]nn.Spec{{Type: "maxpool2d", Kernel: 3}}, []int{1, 2, 2}, "layer 0 (maxpool2d)"},
		{[]nn.Spec{{Type: "conv2d", Kernel: 3}}, []int{1, 8, 8}, "layer 0 (conv2d): channels 0 and kernel 3 must be at least 1"},
		{[]nn.Spec{{Type: "softmax"}}, []int{1, 2, 2}, "layer 0 (softmax): needs flat samples"},
	} {
		_, err := nn.OutShapes(c.specs, c.sample)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OutShapes(%v, %v): %v, want an error containing %q", c.specs, c.sample, err, c.want)
		}
	}
}

// TestCNNBuild: a convolutional model builds the same weights whatever
// range is built, trains through Sequential on flat rows, and gives the same
// bits however the mini-batch is split into micro-batches.
func TestCNNBuild(t *testing.T) {
	whole, err := nn.BuildShape(cnn, []int{1, 8, 8}, 3, tensor.Float32, 0, len(cnn))
	if err != nil {
		t.Fatal(err)
	}
	tail, err := nn.BuildShape(cnn, []int{1, 8, 8}, 3, tensor.Float32, 3, len(cnn))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole[3].Params()[0].Value.Float32s(), tail[0].Params()[0].Value.Float32s()) {
		t.Error("layer 3 built alone differs from the whole model's")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, 70, 64)
	labels := make([]int, 70)
	for i := range labels {
		labels[i] = rng.IntN(5)
	}
	var losses [][]float64
	for _, micro := range []int{1, 3} {
		layers, _ := nn.BuildShape(cnn, []int{1, 8, 8}, 3, tensor.Float32, 0, len(cnn))
		seq := &nn.Sequential{Layers: layers, Loss: nn.CrossEntropy}
		var ls []float64
		for step := 1; step <= 3; step++ {
			seq.ZeroGrad()
			loss, err := seq.TrainStep(step, x, nn.Target{Labels: labels}, micro)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range seq.Params() {
				g, v := p.Grad.Float32s(), p.Value.Float32s()
				for i := range v {
					v[i] -= 0.1 * g[i]
				}
				p.Value.CopyFrom(tensor.FromFloat64s(tensor.Float32, f64(v), p.Value.Shape()...))
			}
			ls = append(ls, loss)
		}
		losses = append(losses, ls)
	}
	if !slices.Equal(losses[0], losses[1]) {
		t.Errorf("losses with 1 and 3 micro-batches: %v, %v", losses[0], losses[1])
	}
	if !(losses[0][2] < losses[0][0]) {
		t.Errorf("three SGD steps did not lower the loss: %v", losses[0])
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// ExampleBuild builds a model from plain data, and the second half of it
// alone, as a pipeline stage on another host would.
func ExampleBuild() {
	specs := []nn.Spec{
		{Type: "linear", Units: 32, Init: nn.HeUniform},
		{Type: "relu"},
		{Type: "linear", Units: 10, Init: nn.XavierUniform},
	}
	whole, _ := nn.Build(specs, 64, 1, tensor.Float32, 0, len(specs))
	tail, _ := nn.Build(specs, 64, 1, tensor.Float32, 1, 3)
	fmt.Println(len(whole), len(tail), tail[1].Kind(), slices.Equal(whole[2].Params()[0].Value.Float32s(), tail[1].Params()[0].Value.Float32s()))
	// Output: 3 2 linear true
}

// TestCheckSpec: each type's row checks its keys and fills in the defaults
// that depend on other keys; the error names the key.
func TestCheckSpec(t *testing.T) {
	spec := func(typ string, f func(*nn.Spec)) nn.Spec {
		s := nn.DefaultSpec()
		s.Type = typ
		if f != nil {
			f(&s)
		}
		return s
	}
	for _, c := range []struct {
		name  string
		s     nn.Spec
		given []string
		want  string // the error, or "" and then wantStride
		// the stride after the check
		wantStride int
	}{
		{"linear", spec("linear", func(s *nn.Spec) { s.Units = 4 }), nil, "", 0},
		{"linear without units", spec("linear", nil), nil, "units: required for a linear layer", 0},
		{"linear units 0 given", spec("linear", nil), []string{"units"}, "units = 0: must be at least 1", 0},
		{"linear bad init", spec("linear", func(s *nn.Spec) { s.Units, s.Init = 4, "glorot" }), nil, `init = "glorot": want one of`, 0},
		{"linear too many shards", spec("linear", func(s *nn.Spec) { s.Units, s.Shards = 4, 5 }), nil, "shards = 5: more than units = 4", 0},
		{"conv stride defaults to 1", spec("conv2d", func(s *nn.Spec) { s.Channels, s.Kernel = 2, 3 }), nil, "", 1},
		{"conv stride given", spec("conv2d", func(s *nn.Spec) { s.Channels, s.Kernel, s.Stride = 2, 3, 2 }), []string{"stride"}, "", 2},
		{"conv stride 0 given", spec("conv2d", func(s *nn.Spec) { s.Channels, s.Kernel = 2, 3 }), []string{"stride"}, "stride = 0: must be at least 1", 0},
		{"conv without kernel", spec("conv2d", func(s *nn.Spec) { s.Channels = 2 }), nil, "kernel: required for a conv2d layer", 0},
		{"conv negative padding", spec("conv2d", func(s *nn.Spec) { s.Channels, s.Kernel, s.Padding = 2, 3, -1 }), nil, "padding = -1: must be at least 0", 0},
		{"conv too many shards", spec("conv2d", func(s *nn.Spec) { s.Channels, s.Kernel, s.Shards = 2, 3, 3 }), nil, "shards = 3: more than channels = 2", 0},
		{"pool stride defaults to kernel", spec("maxpool2d", func(s *nn.Spec) { s.Kernel = 3 }), nil, "", 3},
		{"pool without kernel", spec("avgpool2d", nil), nil, "kernel: required for an avgpool2d layer", 0},
		{"batchnorm eps 0", spec("batchnorm", func(s *nn.Spec) { s.Eps = 0 }), nil, "eps = 0: must be > 0", 0},
		{"batchnorm momentum nan", spec("batchnorm", func(s *nn.Spec) { s.Momentum = math.NaN() }), nil, "momentum = NaN: must be a finite number", 0},
		{"dropout p 1", spec("dropout", func(s *nn.Spec) { s.P = 1 }), nil, "p = 1: must be in [0, 1)", 0},
		{"leaky_relu alpha -1", spec("leaky_relu", func(s *nn.Spec) { s.Alpha = -1 }), nil, "alpha = -1: must be >= 0", 0},
		{"unknown type", spec("conv9d", nil), nil, `type = "conv9d": want one of linear, relu`, 0},
	} {
		s := c.s
		err := nn.CheckSpec(&s, func(k string) bool { return slices.Contains(c.given, k) })
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		case c.want == "" && s.Stride != c.wantStride:
			t.Errorf("%s: stride %d after the check, want %d", c.name, s.Stride, c.wantStride)
		}
		var ke *nn.KeyError
		if err != nil && !errors.As(err, &ke) {
			t.Errorf("%s: %T is not a *nn.KeyError", c.name, err)
		}
	}
}

// TestSpecColumns: the table answers what callers used to learn from type
// names: the output width a layer sets, and whether its results depend on
// the micro-batches.
func TestSpecColumns(t *testing.T) {
	for _, c := range []struct {
		s              nn.Spec
		width          int
		sets, perBatch bool
	}{
		{nn.Spec{Type: "linear", Units: 7}, 7, true, false},
		{nn.Spec{Type: "relu"}, 0, false, false},
		{nn.Spec{Type: "conv2d", Channels: 8, Kernel: 3}, 0, false, false},
		{nn.Spec{Type: "batchnorm"}, 0, false, true},
		{nn.Spec{Type: "flatten"}, 0, false, false},
		{nn.Spec{Type: "no such type"}, 0, false, false},
	} {
		w, ok := c.s.Width()
		if w != c.width || ok != c.sets || c.s.PerMicroBatch() != c.perBatch {
			t.Errorf("%+v: Width() = %d, %v; PerMicroBatch() = %v; want %d, %v, %v", c.s, w, ok, c.s.PerMicroBatch(), c.width, c.sets, c.perBatch)
		}
	}
}

// TestParamCount: the count without building is that of the built layers'
// parameters, a tied head's copy once.
func TestParamCount(t *testing.T) {
	for _, c := range []struct {
		name   string
		specs  []nn.Spec
		sample []int
	}{
		{"mlp", specModel, []int{7}},
		{"cnn", []nn.Spec{{Type: "conv2d", Channels: 4, Kernel: 3, Padding: 1, Init: nn.TorchDefault}, {Type: "batchnorm"}, {Type: "prelu"},
			{Type: "maxpool2d", Kernel: 2}, {Type: "flatten"}, {Type: "batchnorm"}, {Type: "linear", Units: 10, Init: nn.GPT, Bias: new(false)}}, []int{2, 8, 8}},
		{"gpt tied", []nn.Spec{{Type: "embedding", Dim: 16, Vocab: 30, Init: nn.GPT}, {Type: "transformer_block", Heads: 2, Init: nn.GPT},
			{Type: "transformer_block", Heads: 4, Hidden: 24, Init: nn.GPT}, {Type: "layernorm"}, {Type: "linear", Units: 30, Init: nn.GPT, Tie: true, Bias: new(false)}}, []int{9}},
		{"gpt", []nn.Spec{{Type: "embedding", Dim: 16, Vocab: 30, Init: nn.GPT}, {Type: "transformer_block", Heads: 2, Init: nn.GPT},
			{Type: "linear", Units: 30, Init: nn.GPT}}, []int{9}},
	} {
		got, err := nn.ParamCount(c.specs, c.sample)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		layers, err := nn.BuildShape(c.specs, c.sample, 1, tensor.Float32, 0, len(c.specs))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := 0
		for i, l := range layers {
			for _, p := range l.Params() {
				if !(c.specs[i].Tie && p.Name == "weight") {
					want += p.Value.Size()
				}
			}
		}
		if got != want {
			t.Errorf("%s: ParamCount %d, the built layers hold %d", c.name, got, want)
		}
	}
}
