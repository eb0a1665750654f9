package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gptConfig is a tiny GPT on the text at path, in two stages under 1F1B
// with two micro-batches and dropout.
func gptConfig(path string) string {
	return tinyGPT{path: path, block: 16, batch: 8, dim: 16, blocks: 2, dropout: 0.1, gptInit: true, norm: true, lr: 0.003, steps: 4,
		afterward: "[pipeline]\nschedule = \"1f1b\"\nstages = 2\nmicro_batches = 2\n[log]\nevery = 1\n"}.toml()
}

// TestRecomputeRun: model.recompute is in run_start's config, leaves every
// step's loss as it is without it, bit for bit, and lowers the stages'
// peak_activation_bytes: attention below none, blocks below attention.
func TestRecomputeRun(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("to be or not to be, that is the question. ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := gptConfig(text)
	var want map[int]float64
	var prev int64
	for _, r := range []string{"none", "attention", "blocks"} {
		res := runCmd(t, t.TempDir(), cfg, "--set", "model.recompute="+r)
		if res.code != 0 {
			t.Fatalf("recompute %s: exit %d, stderr:\n%s", r, res.code, res.stderr)
		}
		if got := eventsNamed(res.events, "run_start")[0]["config"].(map[string]any)["model"].(map[string]any)["recompute"]; got != r {
			t.Errorf("recompute %s: run_start's model.recompute = %v", r, got)
		}
		if w := eventsNamed(res.events, "warning"); len(w) != 0 {
			t.Errorf("recompute %s on a GPT: warnings %v, want none", r, w)
		}
		losses := stepLosses(res.events)
		if len(losses) != 4 {
			t.Fatalf("recompute %s: %d step losses, want 4", r, len(losses))
		}
		var peak int64
		for _, st := range eventsNamed(res.events, "stage") {
			peak = max(peak, int64(st["peak_activation_bytes"].(float64)))
		}
		if want == nil {
			want, prev = losses, peak
			continue
		}
		for s, l := range want {
			if math.Float64bits(losses[s]) != math.Float64bits(l) {
				t.Errorf("recompute %s: step %d loss %v, want %v as with none", r, s, losses[s], l)
			}
		}
		if peak >= prev {
			t.Errorf("recompute %s: peak_activation_bytes %d, want fewer than the mode before's %d", r, peak, prev)
		}
		prev = peak
	}
}

// TestRecomputeWarning: a recompute other than none on a model without
// transformer blocks is allowed, with a warning naming the key.
func TestRecomputeWarning(t *testing.T) {
	for _, r := range []string{"none", "blocks"} {
		res := runCmd(t, t.TempDir(), baseConfig, "--set", "model.recompute="+r, "--set", "train.max_steps=2")
		if res.code != 0 {
			t.Fatalf("recompute %s: exit %d, stderr:\n%s", r, res.code, res.stderr)
		}
		w := eventsNamed(res.events, "warning")
		if r == "none" {
			if len(w) != 0 {
				t.Errorf("recompute none: warnings %v, want none", w)
			}
			continue
		}
		if len(w) != 1 || w[0]["key"] != "model.recompute" || w[0]["level"] != "warn" ||
			!strings.Contains(fmt.Sprint(w[0]["message"]), `model.recompute = "blocks"`) || !strings.Contains(fmt.Sprint(w[0]["message"]), "no transformer_block") {
			t.Errorf("recompute blocks on an MLP: warnings %v, want one with key model.recompute saying the model has no transformer_block", w)
		}
	}
}
