package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
)

// cnnConfig is a small convolutional network on the 8×8 digits.
const cnnConfig = `
seed = 5
[data]
name = "digits"
batch_size = 64
[[model.layers]]
type = "conv2d"
channels = 4
kernel = 3
padding = 1
init = "torch_default"
[[model.layers]]
type = "relu"
[[model.layers]]
type = "maxpool2d"
kernel = 2
[[model.layers]]
type = "conv2d"
channels = 8
kernel = 3
stride = 2
padding = 1
[[model.layers]]
type = "relu"
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
units = 10
[optimizer]
type = "sgd"
lr = 0.05
momentum = 0.9
clip_norm = 5.0
[pipeline]
schedule = "sequential"
micro_batches = 1
[train]
epochs = 5
[log]
every = 1
`

// TestCNN: a convolutional network trains on the digits from the config,
// with the same losses bit for bit under every schedule and split, logs
// every layer's output shape, and resumes exactly.
func TestCNN(t *testing.T) {
	baseDir := t.TempDir()
	base := runCmd(t, baseDir, cnnConfig)
	if base.code != 0 {
		t.Fatalf("exit %d\n%s", base.code, base.stderr)
	}
	data := eventsNamed(base.events, "data")[0]
	start := eventsNamed(base.events, "run_start")[0]
	for _, ev := range []map[string]any{start, data} {
		if got := fmt.Sprint(ev["sample_shape"], ev["layer_shapes"]); got != "[1 8 8] [[4 8 8] [4 8 8] [4 4 4] [8 2 2] [8 2 2] [32] [10]]" {
			t.Errorf("%s event shapes: %s", ev["event"], got)
		}
	}
	if got := data["model"]; got != "1x8x8-4x8x8-4x4x4-8x2x2-32-10" {
		t.Errorf("data event model %q, want the shapes the layers change", got)
	}
	evals := eventsNamed(base.events, "eval")
	if acc := evals[len(evals)-1]["accuracy"].(float64); acc < 0.85 {
		t.Errorf("test accuracy %v after 5 epochs, want at least 0.85", acc)
	}
	want := stepLosses(base.events)
	for _, layout := range [][]string{
		{"pipeline.schedule=1f1b", "pipeline.stages=0", "pipeline.micro_batches=2"},
		{"pipeline.schedule=gpipe", "pipeline.stages=2", "pipeline.micro_batches=4"},
		{"pipeline.schedule=1f1b", "pipeline.stages=3", "pipeline.micro_batches=2", "pipeline.split_backward=true"},
	} {
		var args []string
		for _, s := range layout {
			args = append(args, "--set", s)
		}
		dir := t.TempDir()
		r := runCmd(t, dir, cnnConfig, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s", layout, r.code, r.stderr)
		}
		if !bytes.Equal(lastCheckpoint(t, dir)["model.safetensors"], lastCheckpoint(t, baseDir)["model.safetensors"]) {
			t.Errorf("%v: the final weights differ from sequential's", layout)
		}
		got := stepLosses(r.events)
		if len(got) != len(want) {
			t.Fatalf("%v: %d steps, want %d", layout, len(got), len(want))
		}
		for s, l := range want {
			if got[s] != l {
				t.Fatalf("%v: step %d: loss %v, sequential %v", layout, s, got[s], l)
			}
		}
	}
	dir := t.TempDir()
	if r := runCmd(t, dir, cnnConfig, "--set", "train.max_steps=30"); r.code != 0 {
		t.Fatalf("first half: exit %d\n%s", r.code, r.stderr)
	}
	second := runCmd(t, dir, cnnConfig, "--resume")
	if second.code != 0 {
		t.Fatalf("resume: exit %d\n%s", second.code, lastLine(second.stderr))
	}
	for s, l := range stepLosses(second.events) {
		if want[s] != l {
			t.Errorf("resumed step %d: loss %v, unbroken %v", s, l, want[s])
		}
	}
}

// TestCNNBadShapes: image layers on flat data, or a layer of features on
// images, are config errors naming the layer (exit 2).
func TestCNNBadShapes(t *testing.T) {
	for _, c := range []struct {
		name, cfg, want string
	}{
		{"conv on spirals", strings.Replace(strings.Replace(cnnConfig, `name = "digits"`, `name = "spirals"`, 1), "units = 10", "units = 3", 1), "model.layers: nn: layer 0 (conv2d): samples [2]: not [C H W]"},
		{"layer norm on images", strings.Replace(cnnConfig, "type = \"flatten\"", "type = \"layernorm\"", 1), "layer 5 (layernorm): needs flat samples [F] or tokens [T, D], got [8 2 2]: add a flatten layer before it"},
		{"kernel too large", strings.Replace(cnnConfig, "kernel = 3\nstride = 2\npadding = 1", "kernel = 5\nstride = 2", 1), "layer 3 (conv2d): samples [4 4 4]: kernel 5×5 is larger than the padded input 4×4"},
	} {
		r := runCmd(t, t.TempDir(), c.cfg)
		if r.code != exitBadInput || !strings.Contains(lastLine(r.stderr), c.want) {
			t.Errorf("%s: exit %d, last line %q; want 2 and %q", c.name, r.code, lastLine(r.stderr), c.want)
		}
	}
}

// TestShippedConfigs: every config in configs/ loads and validates.
func TestShippedConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.toml")
	if len(files) < 3 {
		t.Fatalf("found %d configs", len(files))
	}
	for _, f := range files {
		if _, err := config.Load(f, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// bnConfig is cnnConfig with batch norm after each convolution and dropout
// before the last layer.
var bnConfig = strings.Replace(strings.Replace(strings.Replace(cnnConfig,
	"init = \"torch_default\"\n[[model.layers]]\ntype = \"relu\"", "init = \"torch_default\"\n[[model.layers]]\ntype = \"batchnorm\"\n[[model.layers]]\ntype = \"relu\"", 1),
	"padding = 1\n[[model.layers]]\ntype = \"relu\"", "padding = 1\n[[model.layers]]\ntype = \"batchnorm\"\nmomentum = 0.2\n[[model.layers]]\ntype = \"relu\"", 1),
	"type = \"flatten\"", "type = \"flatten\"\n[[model.layers]]\ntype = \"dropout\"\np = 0.1", 1)

// TestBatchNorm: a CNN with batch norm and dropout gives the same losses bit
// for bit under every schedule and stage count at a given number of
// micro-batches; auto leaves that number alone; the running statistics are
// in the checkpoint and a resumed run continues exactly.
func TestBatchNorm(t *testing.T) {
	if strings.Count(bnConfig, "batchnorm") != 2 || !strings.Contains(bnConfig, "dropout") {
		t.Fatalf("bnConfig:\n%s", bnConfig)
	}
	fixed := []string{"--set", "pipeline.micro_batches=2"}
	dir := t.TempDir()
	base := runCmd(t, dir, bnConfig, append(fixed, "--set", "train.epochs=2")...)
	if base.code != 0 {
		t.Fatalf("exit %d\n%s", base.code, base.stderr)
	}
	want := stepLosses(base.events)
	for _, layout := range [][]string{
		{"pipeline.schedule=gpipe", "pipeline.stages=0"},
		{"pipeline.schedule=1f1b", "pipeline.stages=2"},
		{"pipeline.schedule=1f1b", "pipeline.stages=3", "pipeline.split_backward=true"},
	} {
		args := append([]string{"--set", "train.epochs=2"}, fixed...)
		for _, s := range layout {
			args = append(args, "--set", s)
		}
		ldir := t.TempDir()
		r := runCmd(t, ldir, bnConfig, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s", layout, r.code, r.stderr)
		}
		if !bytes.Equal(lastCheckpoint(t, ldir)["model.safetensors"], lastCheckpoint(t, dir)["model.safetensors"]) {
			t.Errorf("%v: the final weights or running statistics differ from sequential's", layout)
		}
		for s, l := range stepLosses(r.events) {
			if want[s] != l {
				t.Fatalf("%v: step %d: loss %v, sequential %v", layout, s, l, want[s])
			}
		}
	}
	// the running statistics are saved under PyTorch's names
	ck := lastCheckpoint(t, dir)
	if !bytes.Contains(ck["model.safetensors"], []byte("1.running_mean")) || !bytes.Contains(ck["model.safetensors"], []byte("5.running_var")) {
		t.Error("the checkpoint holds no running statistics")
	}
	// a resumed run continues exactly: the running statistics came back too
	half := t.TempDir()
	if r := runCmd(t, half, bnConfig, append(fixed, "--set", "train.epochs=2", "--set", "train.max_steps=30")...); r.code != 0 {
		t.Fatalf("first half: exit %d\n%s", r.code, r.stderr)
	}
	second := runCmd(t, half, bnConfig, append(fixed, "--set", "train.epochs=2", "--resume")...)
	if second.code != 0 {
		t.Fatalf("resume: exit %d\n%s", second.code, lastLine(second.stderr))
	}
	got := stepLosses(second.events)
	if len(got) != len(want)-30 {
		t.Fatalf("resumed %d steps, want %d", len(got), len(want)-30)
	}
	for s, l := range got {
		if want[s] != l {
			t.Errorf("resumed step %d: loss %v, unbroken %v", s, l, want[s])
		}
	}
	evalWant, evalGot := eventsNamed(base.events, "eval"), eventsNamed(second.events, "eval")
	if fmt.Sprint(evalWant[len(evalWant)-1]["loss"]) != fmt.Sprint(evalGot[len(evalGot)-1]["loss"]) {
		t.Errorf("final test loss %v resumed, %v unbroken (evaluation reads the running statistics)", evalGot[len(evalGot)-1]["loss"], evalWant[len(evalWant)-1]["loss"])
	}
	// auto tunes the schedule but not the number of micro-batches
	auto := runCmd(t, t.TempDir(), bnConfig, "--set", "pipeline.schedule=auto", "--set", "pipeline.micro_batches=auto", "--set", "train.max_steps=40")
	if auto.code != 0 {
		t.Fatalf("auto: exit %d\n%s", auto.code, auto.stderr)
	}
	tune := eventsNamed(auto.events, "tune")
	if len(tune) != 1 {
		t.Fatalf("auto logged %d tune events", len(tune))
	}
	for _, c := range tune[0]["candidates"].([]any) {
		if m := c.(map[string]any)["micro_batches"].(float64); m != 1 {
			t.Errorf("auto tried %v micro-batches on a model with batch norm", m)
		}
	}
}
