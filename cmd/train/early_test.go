package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
)

// overfitConfig is a wide MLP on 70% of the digits' training rows, at a
// high learning rate: its validation loss soon stops improving.
const overfitConfig = `
seed = 3
[data]
name = "digits"
batch_size = 16
validation_fraction = 0.3
[[model.layers]]
type = "linear"
units = 256
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
units = 10
[optimizer]
type = "sgd"
lr = 0.1
momentum = 0.9
[pipeline]
schedule = "sequential"
micro_batches = 1
[train]
epochs = 60
early_stop = 2
[log]
every = 1
`

// TestEarlyStop: with train.early_stop = 2 the run stops after two
// evaluations without a better validation loss, best/ holds the checkpoint
// of the best one, run_end says early_stop, and the final test evaluation
// uses the best weights (train eval of best/ gives the same figures). A run
// stopped midway and resumed stops at the same step with the same losses.
func TestEarlyStop(t *testing.T) {
	dir := t.TempDir()
	r := runCmd(t, dir, overfitConfig)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	end := eventsNamed(r.events, "run_end")[0]
	steps := int(end["steps"].(float64))
	if end["reason"] != "early_stop" || steps >= 60*63 {
		t.Fatalf("run_end %v: want reason early_stop before the 60 epochs' %d steps", end, 60*63)
	}
	var vals []map[string]any
	var final map[string]any
	for _, ev := range eventsNamed(r.events, "eval") {
		switch ev["split"] {
		case "validation":
			vals = append(vals, ev)
		case "test":
			if final != nil {
				t.Fatal("more than one test evaluation")
			}
			final = ev
		}
	}
	best := vals[0]
	for _, v := range vals {
		if v["loss"].(float64) < best["loss"].(float64) {
			best = v
		}
	}
	bestStep := int(best["step"].(float64))
	if last := vals[len(vals)-1]; int(last["step"].(float64)) != steps || len(vals) < 3 {
		t.Fatalf("validations %v: want the last at the stop, step %d", vals, steps)
	}
	for _, v := range vals[len(vals)-2:] {
		if v["loss"].(float64) <= best["loss"].(float64) && v["step"] != best["step"] {
			t.Errorf("validation %v is no worse than the best %v, yet the run stopped", v, best)
		}
	}
	if final == nil || final["weights"] != "best" || int(final["weights_step"].(float64)) != bestStep {
		t.Fatalf("final test evaluation %v: want the best weights, of step %d", final, bestStep)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "checkpoints", "best"))
	if len(entries) != 1 || entries[0].Name() != filepath.Base(checkpoint.StepDir("", bestStep)) {
		t.Fatalf("best/ holds %v, want only the checkpoint of step %d", entries, bestStep)
	}
	var stdout, stderr bytes.Buffer
	if code := runWith(context.Background(), []string{"eval", "--checkpoint", filepath.Join(dir, "checkpoints", "best"),
		"--set", "log.dir=" + filepath.Join(dir, "evallogs")}, &stdout, &stderr); code != 0 {
		t.Fatalf("eval of best/: exit %d\n%s", code, stderr.String())
	}
	var got struct{ Loss, Accuracy float64 }
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Loss != final["loss"] || got.Accuracy != final["accuracy"] {
		t.Errorf("eval of best/ gives %+v, the run's final test evaluation %v", got, final)
	}

	// stopped before the end and resumed, it stops at the same step
	half := t.TempDir()
	if r := runCmd(t, half, overfitConfig, "--set", "train.max_steps="+strconv.Itoa(bestStep+20)); r.code != 0 {
		t.Fatalf("first part: exit %d\n%s", r.code, r.stderr)
	}
	second := runCmd(t, half, overfitConfig, "--resume")
	if second.code != 0 {
		t.Fatalf("resumed: exit %d\n%s", second.code, lastLine(second.stderr))
	}
	want := stepLosses(r.events)
	for s, l := range stepLosses(second.events) {
		if want[s] != l {
			t.Fatalf("resumed step %d: loss %v, unbroken %v", s, l, want[s])
		}
	}
	if e := eventsNamed(second.events, "run_end")[0]; e["reason"] != "early_stop" || e["steps"] != end["steps"] {
		t.Errorf("resumed run_end %v, unbroken %v", e, end)
	}
	tests := eventsNamed(second.events, "eval")
	if last := tests[len(tests)-1]; last["loss"] != final["loss"] || last["weights_step"] != final["weights_step"] {
		t.Errorf("resumed final test %v, unbroken %v", last, final)
	}
}
