package config

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/pipetrain/pipetrain/nn"
)

// base is a small valid config that the tests change with --set.
const base = `
[[model.layers]]
type = "linear"
units = 32

[[model.layers]]
type = "relu"

[[model.layers]]
type = "linear"
units = 10

[pipeline]
schedule = "sequential"
`

// plain returns c's layers without the record of which keys were given, so
// that configs can be compared with reflect.DeepEqual.
func plain(c *Config) *Config {
	d := *c
	d.Model.Layers = slices.Clone(c.Model.Layers)
	for i := range d.Model.Layers {
		d.Model.Layers[i].given, d.Model.Layers[i].tracked = nil, false
	}
	return &d
}

func TestDefault(t *testing.T) {
	want := &Config{
		Seed: 1,
		Data: Data{Name: "digits", Path: "", Vocab: "chars", Download: false, LabelColumn: -1, BatchSize: 64,
			Shuffle: true, TestFraction: 0.2},
		Model: Model{Layers: nil, Recompute: "none"},
		Loss:  Loss{Type: "cross_entropy"},
		Optimizer: Optimizer{Type: "sgd", LR: 0.05, Momentum: 0, Nesterov: false, WeightDecay: 0, Decay: "all",
			Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, ClipNorm: 0, ClipValue: 0},
		Schedule: Schedule{Type: "constant", WarmupSteps: 0, StepSize: 0, Gamma: 0.1},
		Pipeline: Pipeline{Schedule: "auto", MicroBatches: 0, Stages: 0, GEMMThreads: 0, SplitBackward: false, Replicas: 1, Hosts: nil},
		Train:    Train{Epochs: 1, MaxSteps: 0, EvalEvery: 0, CheckpointDir: "checkpoints", KeepCheckpoints: 5, CheckpointEvery: 0, Precision: "fp32", BF16Arithmetic: "auto", RestartWait: "60s"},
		Log:      Log{Dir: "logs", Every: 10, Trace: ""},
	}
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default():\ngot  %+v\nwant %+v", got, want)
	}
	wantLayer := Layer{Spec: nn.Spec{Type: "linear", Init: nn.XavierUniform, Shards: 1, Alpha: 0.01, P: 0.1, Approximate: false, Eps: 1e-5, Momentum: 0.1}}
	if got := NewLayer("linear"); !reflect.DeepEqual(got, wantLayer) {
		t.Errorf("NewLayer(%q): got %+v, want %+v", "linear", got, wantLayer)
	}
}

// TestDefaultMatchesContract parses testdata/contract.toml, the project's
// fixed config surface with every default spelled out: it must
// give Default() plus its one example layer.
func TestDefaultMatchesContract(t *testing.T) {
	data, err := os.ReadFile("testdata/contract.toml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse("contract.toml", data, nil)
	if err != nil {
		t.Fatalf("parse(testdata/contract.toml): got %v, want no error", err)
	}
	want := Default()
	l := NewLayer("linear")
	l.Units = 128
	want.Model.Layers = []Layer{l}
	if !reflect.DeepEqual(plain(got), want) {
		t.Errorf("parse(testdata/contract.toml):\ngot  %+v\nwant %+v", plain(got), want)
	}
	// The contract's defaults validate.
	if _, err := Parse("contract.toml", data, nil); err != nil {
		t.Errorf("Parse(testdata/contract.toml): got %v, want no error", err)
	}
}

func TestParseFull(t *testing.T) {
	c, err := Load("testdata/full.toml", nil)
	if err != nil {
		t.Fatalf("Load(testdata/full.toml): got %v, want no error", err)
	}
	layer := func(typ string, f func(*Layer)) Layer {
		l := NewLayer(typ)
		f(&l)
		return l
	}
	want := &Config{
		Seed: 42,
		Data: Data{Name: "text", Path: "testdata/iris.csv", Vocab: "bpe", VocabSize: 512, BlockSize: 16, Download: true, LabelColumn: 4, BatchSize: 32,
			Shuffle: false, TestFraction: 0.25, ValidationFraction: 0.1},
		Model: Model{Layers: []Layer{
			layer("conv2d", func(l *Layer) { l.Channels, l.Kernel, l.Stride, l.Padding, l.Init = 4, 3, 2, 1, "torch_default" }),
			layer("maxpool2d", func(l *Layer) { l.Kernel, l.Stride = 2, 1 }),
			layer("batchnorm", func(l *Layer) { l.Eps, l.Momentum = 1e-3, 0.2 }),
			layer("flatten", func(*Layer) {}),
			layer("linear", func(l *Layer) { l.Units, l.Init, l.Shards = 64, "he_normal", 2 }),
			layer("leaky_relu", func(l *Layer) { l.Alpha = 0.2 }),
			layer("softplus", func(l *Layer) { l.Beta, l.Threshold = 2, 10 }),
			layer("dropout", func(l *Layer) { l.P = 0.5 }),
			layer("layernorm", func(*Layer) {}),
			layer("linear", func(l *Layer) { l.Units, l.Init = 32, "xavier_normal" }),
			layer("gelu", func(l *Layer) { l.Approximate = true }),
			layer("embedding", func(l *Layer) { l.Dim, l.Init = 8, "gpt" }),
			layer("transformer_block", func(l *Layer) { l.Heads, l.Hidden, l.Dropout = 2, 16, 0.1 }),
			layer("linear", func(l *Layer) { l.Units, l.Init, l.Tie, l.Bias = 3, "he_uniform", true, new(false) }),
		}, Recompute: "attention"},
		Loss: Loss{Type: "mse"},
		Optimizer: Optimizer{Type: "sgd", LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4, Decay: "matrices",
			Betas: [2]float64{0.8, 0.99}, Eps: 1e-6, ClipNorm: 1, ClipValue: 5},
		Schedule: Schedule{Type: "cosine", WarmupSteps: 100, StepSize: 1000, Gamma: 0.5, MinLR: 0.01},
		Pipeline: Pipeline{Schedule: "sequential", Chunks: 1, MicroBatches: 8, Stages: 3, GEMMThreads: 2, SplitBackward: true, Replicas: 2, Hosts: nil,
			Listen: "0.0.0.0:7100", Advertise: "10.0.0.1:7100"},
		Train: Train{Epochs: 10, MaxSteps: 5000, EvalEvery: 500, CheckpointDir: "ckpt", Name: "iris-run", KeepCheckpoints: 3, CheckpointEvery: 1000, EarlyStop: 3, Precision: "bf16", BF16Arithmetic: "avx512bf16",
			Restarts: 2, SnapshotEvery: 50, RestartWait: "30s"},
		Log: Log{Dir: "runs", Every: 25, Trace: "trace.json", Metrics: "127.0.0.1:0"},
	}
	if got := plain(c); !reflect.DeepEqual(got, want) {
		t.Errorf("Load(testdata/full.toml):\ngot  %+v\nwant %+v", got, want)
	}
	// Every key of the struct is in the file: decode it with the toml
	// package's own MetaData and ask.
	var raw Config
	md, err := toml.DecodeFile("testdata/full.toml", &raw)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(rt reflect.Type, path []string)
	walk = func(rt reflect.Type, path []string) {
		for i := range rt.NumField() {
			k := key(rt.Field(i))
			if k == "" {
				continue
			}
			p := append(slices.Clip(path), k)
			switch ft := rt.Field(i).Type; {
			case ft.Kind() == reflect.Struct:
				walk(ft, p)
			case ft == reflect.TypeFor[[]Layer]():
				// Checked below: the layers cover every layer key.
			case !md.IsDefined(p...):
				missing = append(missing, strings.Join(p, "."))
			}
		}
	}
	walk(reflect.TypeFor[Config](), nil)
	for _, f := range keyFields(layerType) {
		k := f.key
		if !slices.ContainsFunc(c.Model.Layers, func(l Layer) bool { return l.isGiven(k) }) {
			missing = append(missing, "model.layers[*]."+k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("testdata/full.toml does not set %v", missing)
	}
}

func TestSyntaxError(t *testing.T) {
	for _, tc := range []struct {
		data string
		line string
	}{
		{"[data\nname = \"digits\"\n", "line 1:"},
		{"seed = 1\n[data]\nname = \"digits\nbatch_size = 3\n", "line 3:"},
		{"seed = 1\nseed = 2\n", "line 2:"},
		{"seed = 1\n\n\n\n\n\n[optimizer]\nlr = = 0.1\n", "line 8:"},
		{"[optimizer]\nbetas = [0.9,\n0.99\n", "line 3:"},
		{"a = 1\nb = \n", "line 2:"},
		{"[[model.layers]]\ntype = linear\n", "line 2:"},
	} {
		_, err := Parse("mlp.toml", []byte(tc.data), nil)
		want := "config: mlp.toml: " + tc.line
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%q): got %v, want an error starting %q", tc.data, err, want)
		}
	}
}

func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct {
		data string
		sets []string
		want string
	}{
		{base + "[optimizer]\nlearning_rate = 0.1\n", nil, `config: mlp.toml: unknown key "optimizer.learning_rate"`},
		{"epochs = 3\n" + base, nil, `config: mlp.toml: unknown key "epochs"`},
		{base + "[trainer]\nepochs = 3\n", nil, `config: mlp.toml: unknown key "trainer" (did you mean train?)`},
		{base + "[data.csv]\nsep = \",\"\n", nil, `config: mlp.toml: unknown key "data.csv"`},
		{base + "[[model.layers]]\ntype = \"relu\"\nsize = 3\n", nil, `config: mlp.toml: unknown key "model.layers[3].size"`},
		{base + "[model]\ndepth = 3\n", nil, `config: mlp.toml: unknown key "model.depth"`},
		{base, []string{"optimizer.lrr=1"}, `config: --set "optimizer.lrr=1": unknown key "optimizer.lrr" (did you mean optimizer.lr?)`},
		{base, []string{"model.layers.0.unit=64"}, `config: --set "model.layers.0.unit=64": unknown key "model.layers[0].unit" (did you mean model.layers[0].units?)`},
		{base, []string{"optimzer.lr=1"}, `config: --set "optimzer.lr=1": unknown key "optimzer" (did you mean optimizer?)`},
		{base, []string{"train.max_step=1"}, `config: --set "train.max_step=1": unknown key "train.max_step" (did you mean train.max_steps?)`},
		{base, []string{"data.batchsize=1"}, `config: --set "data.batchsize=1": unknown key "data.batchsize" (did you mean data.batch_size?)`},
		{base, []string{"optimizer.lr.max=1"}, `config: --set "optimizer.lr.max=1": unknown key "optimizer.lr.max"`},
	} {
		_, err := Parse("mlp.toml", []byte(tc.data), tc.sets)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q, %q): got %v, want %s", tc.data, tc.sets, err, tc.want)
		}
	}
}

func TestOverrides(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		get  func(*Config) any
		want any
	}{
		{[]string{"optimizer.lr=0.1"}, func(c *Config) any { return c.Optimizer.LR }, 0.1},
		{[]string{"optimizer.lr=1"}, func(c *Config) any { return c.Optimizer.LR }, 1.0},
		{[]string{" optimizer.lr = 2e-3 "}, func(c *Config) any { return c.Optimizer.LR }, 0.002},
		{[]string{"seed=2", "seed=3"}, func(c *Config) any { return c.Seed }, uint64(3)},
		{[]string{"data.name=mnist"}, func(c *Config) any { return c.Data.Name }, "mnist"},
		{[]string{`data.name="fashion-mnist"`}, func(c *Config) any { return c.Data.Name }, "fashion-mnist"},
		{[]string{"data.name=csv", "data.path=/tmp/x y.csv"}, func(c *Config) any { return c.Data.Path }, "/tmp/x y.csv"},
		{[]string{"log.dir=2024"}, func(c *Config) any { return c.Log.Dir }, "2024"},
		{[]string{"log.dir=true"}, func(c *Config) any { return c.Log.Dir }, "true"},
		{[]string{"log.trace="}, func(c *Config) any { return c.Log.Trace }, ""},
		{[]string{"data.shuffle=false"}, func(c *Config) any { return c.Data.Shuffle }, false},
		{[]string{"data.label_column=-2"}, func(c *Config) any { return c.Data.LabelColumn }, -2},
		{[]string{"train.max_steps=100"}, func(c *Config) any { return c.Train.MaxSteps }, 100},
		{[]string{"optimizer.betas=[0.8, 0.99]"}, func(c *Config) any { return c.Optimizer.Betas }, [2]float64{0.8, 0.99}},
		{[]string{"optimizer.betas.1=0.95"}, func(c *Config) any { return c.Optimizer.Betas }, [2]float64{0.9, 0.95}},
		{[]string{`optimizer={type="adam", lr=0.001}`}, func(c *Config) any { return c.Optimizer },
			Optimizer{Type: "adam", LR: 0.001, Decay: "all", Betas: [2]float64{0.9, 0.999}, Eps: 1e-8}},
		{[]string{"model.layers.0.units=64"}, func(c *Config) any {
			return []int{c.Model.Layers[0].Units, c.Model.Layers[2].Units}
		}, []int{64, 10}},
		{[]string{"model.layers.0.init=he_normal"}, func(c *Config) any { return c.Model.Layers[0].Init }, nn.HeNormal},
		{[]string{"model.layers.0.init=torch_default"}, func(c *Config) any { return c.Model.Layers[0].Init }, nn.TorchDefault},
		{[]string{`model.layers.1={type="leaky_relu", alpha=0.3}`}, func(c *Config) any { return plain(c).Model.Layers[1] },
			Layer{Spec: nn.Spec{Type: "leaky_relu", Init: nn.XavierUniform, Shards: 1, Alpha: 0.3, P: 0.1, Eps: 1e-5, Momentum: 0.1}}},
		{[]string{`model.layers.1.type=tanh`}, func(c *Config) any { return c.Model.Layers[1].Type }, "tanh"},
		{[]string{`model.layers=[{type="linear", units=10}]`}, func(c *Config) any { return plain(c).Model.Layers },
			[]Layer{{Spec: nn.Spec{Type: "linear", Units: 10, Init: nn.XavierUniform, Shards: 1, Alpha: 0.01, P: 0.1, Eps: 1e-5, Momentum: 0.1}}}},
		{[]string{"pipeline.micro_batches=64"}, func(c *Config) any { return c.Pipeline.MicroBatches }, Auto(64)},
		{[]string{`pipeline.micro_batches="auto"`}, func(c *Config) any { return c.Pipeline.MicroBatches.IsAuto() }, true},
		{[]string{"pipeline.micro_batches=auto"}, func(c *Config) any { return c.Pipeline.MicroBatches.IsAuto() }, true},
		{[]string{"pipeline.schedule=auto"}, func(c *Config) any { return c.Pipeline.Schedule }, "auto"},
		{[]string{"pipeline.stages=3"}, func(c *Config) any { return c.Pipeline.Stages }, 3},
		{[]string{"pipeline.replicas=2", `pipeline.hosts=["h:1", "h:2"]`}, func(c *Config) any { return c.Pipeline.Replicas }, Auto(2)},
		{[]string{"data.batch_size=2", "pipeline.micro_batches=2"}, func(c *Config) any { return c.Data.BatchSize }, 2},
	} {
		c, err := Parse("mlp.toml", []byte(base), tc.sets)
		if err != nil {
			t.Errorf("Parse(base, %q): got %v, want no error", tc.sets, err)
			continue
		}
		if got := tc.get(c); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(base, %q): got %v, want %v", tc.sets, got, tc.want)
		}
	}
}

// TestOverrideAfterFile checks that a --set overrides the file, not the
// default: keys the --set does not name keep the file's values.
func TestOverrideAfterFile(t *testing.T) {
	data := base + "[optimizer]\ntype = \"adam\"\nlr = 0.01\nbetas = [0.8, 0.9]\n"
	c, err := Parse("mlp.toml", []byte(data), []string{"optimizer.betas.0=0.7", "optimizer.lr=0.02"})
	if err != nil {
		t.Fatalf("Parse: got %v, want no error", err)
	}
	got := c.Optimizer
	want := Optimizer{Type: "adam", LR: 0.02, Decay: "all", Betas: [2]float64{0.7, 0.9}, Eps: 1e-8}
	if got != want {
		t.Errorf("Parse(%q, sets): got %+v, want %+v", data, got, want)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestGoLayers checks layers built in Go rather than parsed: there is no
// record of which keys were given, so a key counts as given when it holds
// neither its zero value nor NewLayer's default.
func TestGoLayers(t *testing.T) {
	lin := NewLayer("linear")
	lin.Units = 10
	for _, tc := range []struct {
		layer Layer
		want  string
	}{
		{NewLayer("relu"), ""},
		{Layer{Spec: nn.Spec{Type: "relu"}}, ""},
		{Layer{Spec: nn.Spec{Type: "relu", Units: 5}}, `config: model.layers[0].units = 5: not a key of a relu layer (it takes only type)`},
		{Layer{Spec: nn.Spec{Type: "tanh", P: 0.3}}, `config: model.layers[0].p = 0.3: not a key of a tanh layer (it takes only type)`},
		{lin, ""},
		{Layer{Spec: nn.Spec{Type: "linear", Units: 10}}, `config: model.layers[0].init = "": want one of xavier_uniform, xavier_normal, he_uniform, he_normal, torch_default, gpt`},
		{Layer{Spec: nn.Spec{Type: "linear"}}, `config: model.layers[0].units: required for a linear layer`},
	} {
		c := Default()
		c.Pipeline.Schedule = "sequential"
		c.Model.Layers = append(c.Model.Layers, tc.layer, lin)
		if got := errText(c.Validate()); got != tc.want {
			t.Errorf("Validate() of layers %+v: got %q, want %q", c.Model.Layers, got, tc.want)
		}
	}
}

func TestCheckData(t *testing.T) {
	for _, tc := range []struct {
		sets              []string
		features, classes int
		want              string // "" for no error
	}{
		{nil, 64, 10, ""},
		{nil, 64, 12, `config: model.layers[2].units = 10 does not match the 12 classes of data "digits"`},
		{[]string{"model.layers.2.units=12"}, 64, 10, `config: model.layers[2].units = 12 does not match the 10 classes of data "digits"`},
		{[]string{`model.layers=[{type="linear", units=8}, {type="relu"}, {type="linear", units=10}, {type="dropout"}, {type="linear", units=12}]`},
			64, 10, `config: model.layers[4].units = 12 does not match the 10 classes of data "digits"`},
		{[]string{`model.layers.2={type="softmax"}`}, 64, 32, ""},
		{[]string{`model.layers=[{type="relu"}]`}, 4, 3, `config: the model has no linear layer, so its output is the 4 features of data "digits", which does not match its 3 classes`},
		{nil, 0, 10, `config: data "digits" has 0 features per sample; want at least 1`},
		{[]string{"loss.type=mse"}, 64, 10, ""},
		{[]string{"loss.type=bce_with_logits"}, 64, 10, ""},
		{[]string{"loss.type=bce_with_logits"}, 64, 2, `config: model.layers[2].units = 10 does not match the 2 classes of data "digits"`},
		{[]string{"data.name=csv", "data.path=x.csv", "loss.type=mse", "model.layers.2.units=1"}, 5, 0, ""},
		{[]string{"data.name=csv", "data.path=x.csv", "loss.type=mse"}, 5, 0, `config: model.layers[2].units = 10 does not match the single numeric target of data "csv" (want 1)`},
		{[]string{"data.name=csv", "data.path=x.csv", "model.layers.2.units=1"}, 5, 0, `config: loss.type = "cross_entropy": needs class labels, but data "csv" has a numeric target (use mse)`},
		{[]string{"data.name=csv", "data.path=x.csv", "loss.type=mse", `model.layers=[{type="tanh"}]`}, 5, 0, `config: the model has no linear layer, so its output is the 5 features of data "csv"; its numeric target needs 1 output`},
	} {
		c, err := Parse("mlp.toml", []byte(base), tc.sets)
		if err != nil {
			t.Errorf("Parse(base, %q): got %v, want no error", tc.sets, err)
			continue
		}
		if got := errText(c.CheckData(tc.features, tc.classes)); got != tc.want {
			t.Errorf("CheckData(%d, %d) after --set %q: got %q, want %q", tc.features, tc.classes, tc.sets, got, tc.want)
		}
	}
}

func TestSetData(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string // "" for no error
		data Data   // the [data] table after, when no error
	}{
		{nil, "", Data{Name: "mnist", Path: "/d", Vocab: "chars", LabelColumn: -1, BatchSize: 64, Shuffle: true, TestFraction: 0.2}},
		{[]string{"data.path=/e", "data.test_fraction=0.5", "seed=3", "log.dir=out"}, "",
			Data{Name: "mnist", Path: "/e", Vocab: "chars", LabelColumn: -1, BatchSize: 64, Shuffle: true, TestFraction: 0.5}},
		{[]string{`data={name="csv", path="x.csv"}`}, "", Data{Name: "csv", Path: "x.csv", Vocab: "chars", LabelColumn: -1, BatchSize: 64, Shuffle: true, TestFraction: 0.2}},
		{[]string{"optimizer.lr=0.1"}, `config: --set "optimizer.lr=0.1": only seed, data.* and log.dir apply here`, Data{}},
		{[]string{"log.every=3"}, `config: --set "log.every=3": only seed, data.* and log.dir apply here`, Data{}},
		{[]string{"data.bogus=1"}, `config: --set "data.bogus=1": unknown key "data.bogus"`, Data{}},
		{[]string{"data.test_fraction=1.5"}, "config: data.test_fraction = 1.5: must be in [0, 1)", Data{}},
		{[]string{"data.name=csv", `data.path=""`}, `config: data.path: required for data.name = "csv"`, Data{}},
		{[]string{`log.dir=""`}, `config: log.dir = "": must not be empty`, Data{}},
	} {
		c := Default()
		c.Seed, c.Data.Name, c.Data.Path = 2, "mnist", "/d"
		err := c.SetData(tc.sets)
		if got := errText(err); got != tc.want {
			t.Errorf("SetData(%q): got %q, want %q", tc.sets, got, tc.want)
		}
		if err == nil && c.Data != tc.data {
			t.Errorf("SetData(%q): data %+v, want %+v", tc.sets, c.Data, tc.data)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mlp.toml")
	if err := os.WriteFile(path, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, []string{"seed=7"})
	if err != nil || c.Seed != 7 {
		t.Errorf("Load(%q, seed=7): got %v, %v, want seed 7, no error", path, c, err)
	}
	missing := filepath.Join(dir, "nope.toml")
	_, err = Load(missing, nil)
	want := "config: " + missing + ": no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Load(%q): got %v, want %s", missing, err, want)
	}
}

// TestResolvedRoundTrip checks that Resolved is keyed by the TOML names, that
// it survives encoding/json, and that the JSON, read back and written as TOML,
// parses to the same config.
func TestResolvedRoundTrip(t *testing.T) {
	for _, file := range []string{"testdata/full.toml", "testdata/contract.toml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c, err := parse(file, data, []string{"pipeline.schedule=sequential"})
		if err != nil {
			t.Fatal(err)
		}
		r := c.Resolved()
		wantKeys := []string{"data", "log", "loss", "model", "optimizer", "pipeline", "schedule", "seed", "train"}
		if got := slices.Sorted(maps.Keys(r)); !slices.Equal(got, wantKeys) {
			t.Errorf("%s: Resolved() keys: got %v, want %v", file, got, wantKeys)
		}
		js, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%s: json.Marshal(Resolved()): %v", file, err)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		var back map[string]any
		if err := dec.Decode(&back); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(fromJSON(back)); err != nil {
			t.Fatal(err)
		}
		c2, err := Parse(file+" (round trip)", buf.Bytes(), nil)
		if err != nil {
			t.Fatalf("%s: Parse(TOML of Resolved()): got %v, want no error; TOML:\n%s", file, err, buf.String())
		}
		if !reflect.DeepEqual(plain(c2), plain(c)) {
			t.Errorf("%s: round trip through Resolved and JSON:\ngot  %+v\nwant %+v", file, plain(c2), plain(c))
		}
		js2, _ := json.Marshal(c2.Resolved())
		if !bytes.Equal(js, js2) {
			t.Errorf("%s: Resolved() JSON: got %s, want %s", file, js2, js)
		}
	}
	// A layer shows only the keys of its type.
	c, _ := Load("testdata/full.toml", nil)
	layers := c.Resolved()["model"].(map[string]any)["layers"].([]any)
	for i, want := range [][]string{{"channels", "init", "kernel", "padding", "shards", "stride", "type"}, {"kernel", "stride", "type"},
		{"eps", "momentum", "type"}, {"type"},
		{"init", "shards", "tie", "type", "units"}, {"alpha", "type"}, {"beta", "threshold", "type"}, {"p", "type"}, {"type"}, nil,
		{"approximate", "type"}} {
		if want == nil {
			continue
		}
		if got := slices.Sorted(maps.Keys(layers[i].(map[string]any))); !slices.Equal(got, want) {
			t.Errorf("Resolved() model.layers[%d] keys: got %v, want %v", i, got, want)
		}
	}
}

// fromJSON turns json.Numbers into int64 or float64, as TOML has both.
func fromJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case []any:
		for i := range v {
			v[i] = fromJSON(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = fromJSON(v[k])
		}
	}
	return v
}

// TestCheckpointDirDefault: an unset train.checkpoint_dir is
// checkpoints/<train.name, else the config file's name>; a set one is kept
// as it is.
func TestCheckpointDirDefault(t *testing.T) {
	for _, tc := range []struct {
		file, data string
		sets       []string
		want       string
	}{
		{"configs/mnist.toml", base, nil, filepath.Join("checkpoints", "mnist")},
		{"/a/b/mlp.toml", base, nil, filepath.Join("checkpoints", "mlp")},
		{"mlp.toml", base + "[train]\nname = \"exp1\"\n", nil, filepath.Join("checkpoints", "exp1")},
		{"mlp.toml", base, []string{"train.name=exp2"}, filepath.Join("checkpoints", "exp2")},
		{"mlp.toml", base + "[train]\ncheckpoint_dir = \"mine\"\nname = \"exp1\"\n", nil, "mine"},
		{"mlp.toml", base + "[train]\ncheckpoint_dir = \"checkpoints\"\n", nil, "checkpoints"},
		{"mlp.toml", base, []string{"train.checkpoint_dir=ck"}, "ck"},
	} {
		c, err := Parse(tc.file, []byte(tc.data), tc.sets)
		if err != nil {
			t.Fatalf("Parse(%s, %v): %v", tc.file, tc.sets, err)
		}
		if c.Train.CheckpointDir != tc.want {
			t.Errorf("Parse(%s, %q, %v): checkpoint_dir %q, want %q", tc.file, tc.data[len(base):], tc.sets, c.Train.CheckpointDir, tc.want)
		}
	}
	for _, set := range []string{"train.name=a/b", "train.name=..", "train.keep_checkpoints=-1"} {
		if _, err := Parse("mlp.toml", []byte(base), []string{set}); err == nil || !strings.Contains(err.Error(), strings.Split(set, "=")[0]) {
			t.Errorf("--set %s: got %v, want an error naming the key", set, err)
		}
	}
}
