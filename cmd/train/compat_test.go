package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/model"
)

// copyTree copies the files of src into dst, folders included.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// oldLosses reads testdata's losses.txt: a step and its loss a line.
func oldLosses(t *testing.T, path string) map[int]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		step, loss, _ := strings.Cut(sc.Text(), " ")
		s, err1 := strconv.Atoi(step)
		l, err2 := strconv.ParseFloat(loss, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		out[s] = l
	}
	return out
}

// TestResumeOldCheckpoint: a checkpoint written before layers were
// nn.Specs (testdata/checkpoint-v0, by the pipetrain of 2026-11-23) resumes
// with the config it was trained with, and the resumed steps give the
// losses that pipetrain logged for them, bit for bit.
func TestResumeOldCheckpoint(t *testing.T) {
	src := filepath.Join("testdata", "checkpoint-v0")
	cfg, err := os.ReadFile(filepath.Join(src, "run.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyTree(t, filepath.Join(src, "step-00000020"), filepath.Join(dir, "checkpoints", "step-00000020"))
	r := runCmd(t, dir, string(cfg), "--resume")
	if r.code != 0 {
		t.Fatalf("resuming the old checkpoint: exit %d:\n%s", r.code, r.stderr)
	}
	want, got := oldLosses(t, filepath.Join(src, "losses.txt")), stepLosses(r.events)
	if len(got) != len(want) {
		t.Fatalf("resumed run logged %d steps, the old one %d after its checkpoint", len(got), len(want))
	}
	for s, l := range want {
		if math.Float64bits(got[s]) != math.Float64bits(l) {
			t.Errorf("step %d: loss %v, the old pipetrain's %v", s, got[s], l)
		}
	}
	// with another model the old checkpoint is refused, not misread
	changed := strings.Replace(string(cfg), "units = 32", "units = 33", 1)
	dir2 := t.TempDir()
	copyTree(t, filepath.Join(src, "step-00000020"), filepath.Join(dir2, "checkpoints", "step-00000020"))
	if r := runCmd(t, dir2, changed, "--resume"); r.code != exitBadInput || !strings.Contains(lastLine(r.stderr), "different model") {
		t.Errorf("an old checkpoint resumed with another model: exit %d, %q", r.code, lastLine(r.stderr))
	}
}

// TestLegacyConfigHash: legacyConfigHash gives the hashes the pipetrain of
// 2026-11-23 (before nn.Spec) wrote for these configs, and nothing for a
// model with a later layer type.
func TestLegacyConfigHash(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"checkpoint-v0/run.toml", "9dd3b6340b80c930"},
		{"legacy-hash.toml", "d57565a1b837e37b"},
		{"../internal/config/testdata/full.toml", ""},
	} {
		cfg, err := config.Load(filepath.Join("testdata", c.file), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := legacyConfigHash(cfg); got != c.want {
			t.Errorf("%s: legacyConfigHash = %q, want %q", c.file, got, c.want)
		}
	}
}

// TestEvalOldCheckpoint: train eval --config evaluates a checkpoint that
// records neither its model nor its data (testdata/checkpoint-v0) as the
// same run's checkpoint written today evaluates, to the bit; without
// --config, or with another model's config, it is refused naming why.
func TestEvalOldCheckpoint(t *testing.T) {
	src := filepath.Join("testdata", "checkpoint-v0")
	cfgPath := filepath.Join(src, "run.toml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logs := "log.dir=" + filepath.Join(dir, "eval-logs")
	if r := runCmd(t, dir, string(cfg), "--set", "train.max_steps=20"); r.code != 0 {
		t.Fatalf("training: exit %d:\n%s", r.code, r.stderr)
	}
	today := runSub("eval", "--checkpoint", filepath.Join(dir, "checkpoints"), "--set", logs)
	old := runSub("eval", "--checkpoint", filepath.Join(src, "step-00000020"), "--config", cfgPath, "--set", logs)
	if today.code != 0 || old.code != 0 {
		t.Fatalf("eval: exit %d and %d:\n%s\n%s", today.code, old.code, today.stderr, old.stderr)
	}
	// a checkpoint that describes its model but not its data
	noData := rewriteCheckpoint(t, filepath.Join(dir, "checkpoints"), func(d *model.Description) { d.Data = nil })
	v1 := runSub("eval", "--checkpoint", noData, "--config", cfgPath, "--set", logs)
	var a evalResult
	if err := json.Unmarshal([]byte(today.stdout), &a); err != nil {
		t.Fatal(err)
	}
	for _, r := range []subResult{old, v1} {
		var b evalResult
		if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
			t.Fatalf("%v:\n%s", err, r.stderr)
		}
		if math.Float64bits(a.Loss) != math.Float64bits(b.Loss) || *a.Accuracy != *b.Accuracy || a.Rows != b.Rows || b.Step != 20 {
			t.Errorf("older checkpoint: %+v, today's: %+v", b, a)
		}
	}
	checkBadInput(t, runSub("eval", "--checkpoint", filepath.Join(src, "step-00000020"), "--set", logs), "train eval --config FILE evaluates it")
	other := filepath.Join(dir, "other.toml")
	if err := os.WriteFile(other, []byte(strings.Replace(string(cfg), "units = 32", "units = 33", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	checkBadInput(t, runSub("eval", "--checkpoint", filepath.Join(src, "step-00000020"), "--config", other, "--set", logs), "different model, data or optimizer")
}
