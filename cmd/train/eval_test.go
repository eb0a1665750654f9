package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/model"
)

// subResult is what one in-process run of a subcommand left behind.
type subResult struct {
	code           int
	stdout, stderr string
}

// runSub runs the command with args, its output captured.
func runSub(args ...string) subResult {
	var stdout, stderr bytes.Buffer
	code := runWith(context.Background(), args, &stdout, &stderr)
	return subResult{code, stdout.String(), stderr.String()}
}

// trainIn trains cfg in dir (logs and checkpoints under it) and returns the
// run's last eval event.
func trainIn(t *testing.T, dir, cfg string, args ...string) map[string]any {
	t.Helper()
	r := runCmd(t, dir, cfg, args...)
	if r.code != 0 {
		t.Fatalf("training: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	evals := eventsNamed(r.events, "eval")
	if len(evals) == 0 {
		t.Fatal("training logged no eval event")
	}
	return evals[len(evals)-1]
}

// digitsCSV writes the embedded digits as a CSV file of their raw pixel
// counts (0..16) and label, with a header, and returns its path.
func digitsCSV(t *testing.T, dir string, s *dataset.Set) string {
	t.Helper()
	var b strings.Builder
	for j := range s.Features {
		fmt.Fprintf(&b, "p%d,", j)
	}
	b.WriteString("digit\n")
	x := s.X.Data32()
	for i := range s.Len() {
		for _, v := range x[i*s.Features : (i+1)*s.Features] {
			fmt.Fprintf(&b, "%g,", v*16)
		}
		fmt.Fprintf(&b, "%s\n", s.Classes[s.Labels[i]])
	}
	return writeText(t, filepath.Join(dir, "digits.csv"), b.String())
}

func writeText(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// regressionCSV writes 300 rows of y = x1 − 2·x2 + 0.5·x3 + noise.
func regressionCSV(t *testing.T, dir string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("x1,x2,x3,y\n")
	for range 300 {
		x1, x2, x3 := rng.NormFloat64()*10+5, rng.NormFloat64(), rng.Float64()*100
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f,%.4f\n", x1, x2, x3, x1-2*x2+0.5*x3+rng.NormFloat64()*0.1)
	}
	return writeText(t, filepath.Join(dir, "reg.csv"), b.String())
}

func shippedConfig(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEvalReproducesTheRun: train eval on a run's last checkpoint gives the
// loss and accuracy of the run's last eval event bit for bit, for the
// shipped configs/mlp.toml as it is, a pipelined and sharded model with
// dropout, a CNN, and CSV sets (standardized, regression), printed as one
// JSON line and logged as an eval event.
func TestEvalReproducesTheRun(t *testing.T) {
	digits, err := dataset.Digits()
	if err != nil {
		t.Fatal(err)
	}
	csvDir := t.TempDir()
	digitsPath, regPath := digitsCSV(t, csvDir, digits), regressionCSV(t, csvDir)
	csvConfig := strings.Replace(baseConfig, `name = "digits"`, `name = "csv"`+"\npath = \""+digitsPath+"\"\ntest_fraction = 0.3", 1)
	regConfig := strings.Replace(strings.Replace(baseConfig, `name = "digits"`, `name = "csv"`+"\npath = \""+regPath+"\"", 1),
		"units = 10", "units = 1", 1) + "[loss]\ntype = \"mse\"\n"
	for _, tc := range []struct {
		name string
		cfg  string
		args []string
		data string
	}{
		{"configs/mlp.toml", shippedConfig(t, "mlp.toml"), nil, "digits"},
		{"sharded under gpipe", baseConfig, []string{"--set", "model.layers.0.shards=2", "--set", "pipeline.schedule=gpipe", "--set", "seed=11"}, "digits"},
		{"cnn with batch norm", strings.Replace(cnnConfig, "init = \"torch_default\"\n", "init = \"torch_default\"\n[[model.layers]]\ntype = \"batchnorm\"\n", 1),
			[]string{"--set", "train.epochs=2"}, "digits"},
		{"csv classes", csvConfig, nil, "csv"},
		{"csv regression", regConfig, nil, "csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want := trainIn(t, dir, tc.cfg, tc.args...)
			evalLogs := filepath.Join(dir, "eval-logs")
			r := runSub("eval", "--checkpoint", filepath.Join(dir, "checkpoints"), "--set", "log.dir="+evalLogs)
			if r.code != 0 {
				t.Fatalf("eval: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			if strings.Count(r.stdout, "\n") != 1 {
				t.Fatalf("eval printed %q, want one line", r.stdout)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("eval printed %q: %v", r.stdout, err)
			}
			evs := eventsNamed(readEvents(t, evalLogs), "eval")
			if len(evs) != 1 {
				t.Fatalf("eval logged %d eval events, want 1", len(evs))
			}
			for _, k := range []string{"step", "loss", "accuracy"} {
				w, g, logged := want[k], got[k], evs[0][k]
				if wf, ok := w.(float64); ok && (math.Float64bits(wf) != math.Float64bits(g.(float64)) || math.Float64bits(wf) != math.Float64bits(logged.(float64))) {
					t.Errorf("%s: eval printed %v and logged %v, the run logged %v", k, g, logged, w)
				} else if !ok && (g != nil || logged != nil) {
					t.Errorf("%s: eval printed %v and logged %v, the run logged none", k, g, logged)
				}
			}
			if evs[0]["epoch"] != want["epoch"] || evs[0]["split"] != "test" {
				t.Errorf("eval event %v, want epoch %v and split test", evs[0], want["epoch"])
			}
			if got["split"] != "test" || got["data"] != tc.data || got["rows"].(float64) < 1 ||
				!strings.HasPrefix(got["checkpoint"].(string), filepath.Join(dir, "checkpoints", "step-")) {
				t.Errorf("eval printed %v", got)
			}
			if ws := eventsNamed(readEvents(t, evalLogs), "standardization"); len(ws) != 0 {
				t.Errorf("the refit standardization differs from the checkpoint's: %v", ws)
			}
		})
	}
}

// TestEvalSet: --set data.… evaluates on other rows, and a CSV file whose
// training rows changed since training is standardized as the checkpoint
// says, with a warning.
func TestEvalSet(t *testing.T) {
	digits, err := dataset.Digits()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := digitsCSV(t, dir, digits)
	cfg := strings.Replace(baseConfig, `name = "digits"`, `name = "csv"`+"\npath = \""+path+"\"", 1)
	trainIn(t, dir, cfg, "--set", "train.epochs=1")
	ck := filepath.Join(dir, "checkpoints")
	r := runSub("eval", "--checkpoint", ck, "--set", "data.test_fraction=0.5", "--set", "log.dir="+filepath.Join(dir, "a"))
	if r.code != 0 || !strings.Contains(r.stdout, `"rows":899,`) {
		t.Errorf("eval with data.test_fraction=0.5: exit %d, printed %q, want 899 rows; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// the same rows, every value doubled: the training split's statistics change
	other := filepath.Join(dir, "doubled.csv")
	doubled := digits.Subset(identity(digits.Len()))
	for i, v := range doubled.X.Data32() {
		doubled.X.Data32()[i] = 2 * v
	}
	if err := os.Rename(digitsCSV(t, t.TempDir(), doubled), other); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "b")
	r = runSub("eval", "--checkpoint", ck, "--set", "data.path="+other, "--set", "log.dir="+logs)
	if r.code != 0 {
		t.Fatalf("eval on the doubled file: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if ws := eventsNamed(readEvents(t, logs), "standardization"); len(ws) != 1 || ws[0]["level"] != "warn" {
		t.Errorf("eval on changed data logged %v, want one standardization warning", ws)
	}
}

// checkBadInput fails unless r exited 2 with a last stderr line that begins
// "train: " and holds want, and no stack trace.
func checkBadInput(t *testing.T, r subResult, want string) {
	t.Helper()
	if r.code != exitBadInput {
		t.Fatalf("exit %d, want 2; stderr:\n%s", r.code, r.stderr)
	}
	if l := lastLine(r.stderr); !strings.HasPrefix(l, "train: ") || !strings.Contains(l, want) {
		t.Errorf("last stderr line %q, want train: ...%s...", l, want)
	}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
		t.Errorf("stderr holds a stack trace:\n%s", r.stderr)
	}
}

// rewriteCheckpoint saves the newest checkpoint under root again under a new
// root, its description changed by edit (nil: none), and returns the new root.
func rewriteCheckpoint(t *testing.T, root string, edit func(*model.Description)) string {
	t.Helper()
	dir, _, err := checkpoint.Latest(root)
	if err != nil {
		t.Fatal(err)
	}
	meta, weights, opt, err := checkpoint.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		meta.Model = nil
	} else {
		var d model.Description
		if err := json.Unmarshal(meta.Model, &d); err != nil {
			t.Fatal(err)
		}
		edit(&d)
		meta.Model, _ = json.Marshal(d)
	}
	out := t.TempDir()
	if _, err := checkpoint.Save(out, meta, weights, opt); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEvalBadInput(t *testing.T) {
	dir := t.TempDir()
	trainIn(t, dir, baseConfig, "--set", "train.epochs=1")
	ck := filepath.Join(dir, "checkpoints")
	old := rewriteCheckpoint(t, ck, nil)
	noData := rewriteCheckpoint(t, ck, func(d *model.Description) { d.Data = nil })
	missingCSV := rewriteCheckpoint(t, ck, func(d *model.Description) {
		d.Input = model.Input{Data: "csv", Divide: 1, Mean: make([]float64, 64), Std: make([]float64, 64)}
		d.Data = &model.Data{Name: "csv", Path: filepath.Join(dir, "gone.csv"), LabelColumn: -1, TestFraction: 0.2}
	})
	logs := "log.dir=" + filepath.Join(dir, "eval-logs")
	for _, tc := range []struct {
		name string
		args []string
		want string // in the last stderr line
	}{
		{"no checkpoint flag", nil, "--checkpoint DIR is required"},
		{"missing checkpoint", []string{"--checkpoint", filepath.Join(dir, "nowhere")}, "nowhere: no checkpoint there"},
		{"checkpoint without description", []string{"--checkpoint", old}, "holds no model description"},
		{"checkpoint without its data", []string{"--checkpoint", noData}, "does not record the data set"},
		{"unknown flag", []string{"--checkpoint", ck, "--bogus"}, "eval: flag provided but not defined: -bogus"},
		{"stray argument", []string{"--checkpoint", ck, "extra"}, `eval: unexpected argument "extra"`},
		{"a training key", []string{"--checkpoint", ck, "--set", "optimizer.lr=1"}, `"optimizer.lr=1": only seed, data.* and log.dir apply here`},
		{"unknown data key", []string{"--checkpoint", ck, "--set", "data.bogus=1"}, `unknown key "data.bogus"`},
		{"empty test split", []string{"--checkpoint", ck, "--set", "data.test_fraction=0"}, "the test split is empty"},
		{"data scaled otherwise", []string{"--checkpoint", ck, "--set", "data.name=spirals"}, `data.name = "spirals": the model was trained on "digits"`},
		{"missing csv", []string{"--checkpoint", missingCSV}, "gone.csv: no such file"},
		{"bad log format", []string{"--checkpoint", ck, "--log-format", "xml"}, `--log-format "xml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBadInput(t, runSub(append([]string{"eval", "--set", logs}, tc.args...)...), tc.want)
		})
	}
}

// identity returns 0..n-1.
func identity(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
