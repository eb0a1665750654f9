package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/ops"
)

// baseConfig is a small digits model that trains in well under a second.
const baseConfig = `
seed = 7
[data]
name = "digits"
batch_size = 64
[[model.layers]]
type = "linear"
units = 32
[[model.layers]]
type = "relu"
[[model.layers]]
type = "dropout"
p = 0.1
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
micro_batches = 2
[train]
epochs = 2
[log]
every = 1
`

// runResult is what one in-process run of the command left behind.
type runResult struct {
	code   int
	stderr string
	events []map[string]any
}

// runCmd runs the command in a temporary folder with the given config text and
// extra arguments; logs and checkpoints go under dir.
func runCmd(t *testing.T, dir, cfg string, args ...string) runResult {
	t.Helper()
	path := filepath.Join(dir, "run.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "logs")
	full := append([]string{"--config", path,
		"--set", "log.dir=" + logDir,
		"--set", "train.checkpoint_dir=" + filepath.Join(dir, "checkpoints")}, args...)
	var stderr bytes.Buffer
	code := run(context.Background(), full, &stderr)
	return runResult{code: code, stderr: stderr.String(), events: readEvents(t, logDir)}
}

// readEvents returns the events of the newest log file in dir.
func readEvents(t *testing.T, dir string) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		return nil
	}
	newest := files[0]
	for _, f := range files {
		a, _ := os.Stat(f)
		b, _ := os.Stat(newest)
		if a.ModTime().After(b.ModTime()) || a.ModTime().Equal(b.ModTime()) && f > newest {
			newest = f
		}
	}
	data, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: line %q is not JSON: %v", newest, sc.Text(), err)
		}
		events = append(events, ev)
	}
	return events
}

func eventsNamed(evs []map[string]any, name string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["event"] == name {
			out = append(out, e)
		}
	}
	return out
}

// stepLosses maps step to loss from step events.
func stepLosses(evs []map[string]any) map[int]float64 {
	out := map[int]float64{}
	for _, e := range eventsNamed(evs, "step") {
		out[int(e["step"].(float64))] = e["loss"].(float64)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestRunWritesEveryEvent(t *testing.T) {
	r := runCmd(t, t.TempDir(), baseConfig)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, name := range []string{"run_start", "step", "eval", "checkpoint", "run_end"} {
		if len(eventsNamed(r.events, name)) == 0 {
			t.Errorf("no %q event in the log", name)
		}
	}
	for _, e := range r.events {
		for _, k := range []string{"level", "time", "event", "run_id"} {
			if _, ok := e[k]; !ok {
				t.Errorf("event %v lacks %q", e, k)
			}
		}
	}
	start := eventsNamed(r.events, "run_start")[0]
	for _, k := range []string{"config", "go_version", "cpus"} {
		if _, ok := start[k]; !ok {
			t.Errorf("run_start lacks %q: %v", k, start)
		}
	}
	for _, e := range eventsNamed(r.events, "step") {
		for _, k := range []string{"epoch", "step", "loss", "lr", "samples_per_sec"} {
			if _, ok := e[k]; !ok {
				t.Errorf("step event lacks %q: %v", k, e)
			}
		}
	}
	if data := eventsNamed(r.events, "data"); len(data) != 1 || data[0]["model"] != "64-32-10" {
		t.Errorf("data events %v, want one with model 64-32-10", data)
	}
	end := eventsNamed(r.events, "run_end")
	if len(end) != 1 || end[0]["status"] != "ok" || end[0]["reason"] != "completed" {
		t.Fatalf("run_end = %v, want one with status ok, reason completed", end)
	}
	evals := eventsNamed(r.events, "eval")
	if acc := evals[len(evals)-1]["accuracy"].(float64); acc < 0.85 {
		t.Errorf("final test accuracy %v after two epochs, want >= 0.85", acc)
	}
}

// TestPipelineKeys checks that pipeline.gemm_threads, pipeline.split_backward
// and pipeline.hosts are in run_start's config, that gemm_threads reaches the
// GEMM, and that neither knob changes a loss.
func TestPipelineKeys(t *testing.T) {
	var want map[int]float64
	for _, tc := range []struct {
		sets    []string
		threads float64
		split   bool
	}{
		{nil, 0, false},
		{[]string{"--set", "pipeline.gemm_threads=3", "--set", "pipeline.split_backward=true"}, 3, true},
	} {
		args := append([]string{"--set", "pipeline.schedule=1f1b", "--set", "train.max_steps=10"}, tc.sets...)
		r := runCmd(t, t.TempDir(), baseConfig, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
		p := eventsNamed(r.events, "run_start")[0]["config"].(map[string]any)["pipeline"].(map[string]any)
		if p["gemm_threads"] != tc.threads || p["split_backward"] != tc.split {
			t.Errorf("%v: run_start pipeline = %v, want gemm_threads %v, split_backward %v", args, p, tc.threads, tc.split)
		}
		if end := eventsNamed(r.events, "run_end"); len(end) != 1 || end[0]["reason"] != "max_steps" {
			t.Errorf("%v: run_end = %v, want reason max_steps", args, end)
		}
		if h, ok := p["hosts"].([]any); !ok || len(h) != 0 {
			t.Errorf("%v: run_start pipeline.hosts = %#v, want []", args, p["hosts"])
		}
		for _, st := range eventsNamed(r.events, "stage") {
			if tc.threads > 0 && st["threads"] != tc.threads {
				t.Errorf("%v: stage event %v, want threads %v", args, st, tc.threads)
			}
		}
		got := stepLosses(r.events)
		if want == nil {
			want = got
			continue
		}
		for s, l := range want {
			if math.Float64bits(got[s]) != math.Float64bits(l) {
				t.Errorf("%v: step %d loss %v, want %v as without them", args, s, got[s], l)
			}
		}
	}
}

func TestRunIsDeterministic(t *testing.T) {
	a := stepLosses(runCmd(t, t.TempDir(), baseConfig).events)
	b := stepLosses(runCmd(t, t.TempDir(), baseConfig).events)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("runs logged %d and %d steps", len(a), len(b))
	}
	for s, l := range a {
		if b[s] != l {
			t.Fatalf("step %d: loss %v then %v", s, l, b[s])
		}
	}
}

// TestResumeIsExact stops a run at step 20 and resumes it: every later step's
// loss equals the unbroken run's, across the epoch boundary at step 23.
func TestResumeIsExact(t *testing.T) {
	for _, opt := range []string{
		`type = "sgd"` + "\nlr = 0.05\nmomentum = 0.9\nclip_norm = 5.0",
		`type = "adamw"` + "\nlr = 0.002\nweight_decay = 0.01",
	} {
		cfg := strings.Replace(baseConfig, "type = \"sgd\"\nlr = 0.05\nmomentum = 0.9\nclip_norm = 5.0", opt, 1)
		whole := stepLosses(runCmd(t, t.TempDir(), cfg).events)
		dir := t.TempDir()
		first := runCmd(t, dir, cfg, "--set", "train.max_steps=20")
		if first.code != 0 {
			t.Fatalf("%s: first half exit %d:\n%s", opt, first.code, first.stderr)
		}
		second := runCmd(t, dir, cfg, "--resume")
		if second.code != 0 {
			t.Fatalf("%s: resumed half exit %d:\n%s", opt, second.code, second.stderr)
		}
		resumed := stepLosses(second.events)
		if len(resumed) != len(whole)-20 {
			t.Fatalf("%s: resumed run logged %d steps, want %d", opt, len(resumed), len(whole)-20)
		}
		for s, l := range resumed {
			if s <= 20 {
				t.Fatalf("%s: resumed run logged step %d", opt, s)
			}
			if whole[s] != l {
				t.Errorf("%s: step %d: resumed loss %v, unbroken %v", opt, s, l, whole[s])
			}
		}
	}
}

// TestResumeBF16: a bf16 run (logged as such, its losses not fp32's)
// stopped at step 20 and resumed continues with the unbroken run's losses,
// bit for bit; resuming it as fp32 is refused, naming both precisions.
func TestResumeBF16(t *testing.T) {
	bf16 := []string{"--set", "train.precision=bf16"}
	whole := runCmd(t, t.TempDir(), baseConfig, bf16...)
	fp32 := stepLosses(runCmd(t, t.TempDir(), baseConfig).events)
	dir := t.TempDir()
	first := runCmd(t, dir, baseConfig, append(bf16, "--set", "train.max_steps=20")...)
	refused := runCmd(t, dir, baseConfig, "--resume")
	second := runCmd(t, dir, baseConfig, append(bf16, "--resume")...)
	for _, r := range []runResult{whole, first, second} {
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
	}
	if l := lastLine(refused.stderr); refused.code != exitBadInput || !strings.Contains(l, `train.precision = "bf16", not "fp32"`) {
		t.Errorf("resuming a bf16 checkpoint as fp32: exit %d, last stderr line %q", refused.code, l)
	}
	start := eventsNamed(whole.events, "run_start")
	if len(start) != 1 || start[0]["config"].(map[string]any)["train"].(map[string]any)["precision"] != "bf16" {
		t.Errorf("run_start does not log train.precision = bf16: %v", start)
	}
	want, got := stepLosses(whole.events), stepLosses(second.events)
	if len(got) != len(want)-20 {
		t.Fatalf("resumed run logged %d steps, want %d", len(got), len(want)-20)
	}
	differ := false
	for s, l := range want {
		differ = differ || fp32[s] != l
	}
	if !differ {
		t.Error("bf16 run logged fp32's losses")
	}
	for s, l := range got {
		if math.Float64bits(want[s]) != math.Float64bits(l) {
			t.Errorf("step %d: resumed loss %v, unbroken %v", s, l, want[s])
		}
	}
}

// TestResumeBF16Arithmetic: a bf16 run logs and saves the arithmetic of its
// products' sums, under "auto" this CPU's native one; resumed under "auto"
// it takes the checkpoint's, whatever this CPU runs natively, and goes on
// exactly as the unbroken run in that arithmetic; resumed pinned to the
// other arithmetic it is refused (exit 2), naming both.
func TestResumeBF16Arithmetic(t *testing.T) {
	bf16 := []string{"--set", "train.precision=bf16"}
	native := ops.NativeArithmetic().String()
	other := map[string]string{"amx": "avx512bf16", "avx512bf16": "amx"}[native]
	auto := runCmd(t, t.TempDir(), baseConfig, append(bf16, "--set", "train.max_steps=1")...)
	if start := eventsNamed(auto.events, "run_start"); len(start) != 1 || start[0]["bf16_arithmetic"] != native {
		t.Errorf("run_start under auto: bf16_arithmetic not %q: %v", native, start)
	}
	pinned := append(bf16, "--set", "train.bf16_arithmetic="+other)
	whole := runCmd(t, t.TempDir(), baseConfig, append(pinned, "--set", "train.max_steps=3")...)
	dir := t.TempDir()
	first := runCmd(t, dir, baseConfig, append(pinned, "--set", "train.max_steps=2")...)
	if whole.code != 0 || first.code != 0 {
		t.Fatalf("exit %d, %d:\n%s%s", whole.code, first.code, whole.stderr, first.stderr)
	}
	ck, ok, err := checkpoint.Latest(filepath.Join(dir, "checkpoints"))
	if err != nil || !ok {
		t.Fatalf("no checkpoint: %v", err)
	}
	if meta, err := checkpoint.ReadMeta(ck); err != nil || meta.BF16Arithmetic != other {
		t.Fatalf("%s: bf16_arithmetic %q (%v), want %q", ck, meta.BF16Arithmetic, err, other)
	}
	refused := runCmd(t, dir, baseConfig, append(bf16, "--resume", "--set", "train.max_steps=3", "--set", "train.bf16_arithmetic="+native)...)
	if refused.code != 2 || !strings.Contains(refused.stderr, native) || !strings.Contains(refused.stderr, other) {
		t.Errorf("resume pinned to %s: exit %d, want 2 naming %s and %s:\n%s", native, refused.code, native, other, refused.stderr)
	}
	second := runCmd(t, dir, baseConfig, append(bf16, "--resume", "--set", "train.max_steps=3")...)
	if second.code != 0 {
		t.Fatalf("resume: exit %d:\n%s", second.code, second.stderr)
	}
	if start := eventsNamed(second.events, "run_start"); len(start) != 1 || start[0]["bf16_arithmetic"] != other {
		t.Errorf("run_start of the resume under auto: bf16_arithmetic not the checkpoint's %q: %v", other, start)
	}
	want, got := stepLosses(whole.events), stepLosses(second.events)
	if len(got) != 1 {
		t.Fatalf("resumed run logged %d steps, want 1", len(got))
	}
	for s, l := range got {
		if math.Float64bits(want[s]) != math.Float64bits(l) {
			t.Errorf("step %d: resumed loss %v, unbroken %v", s, l, want[s])
		}
	}
}

// TestResumeUnderAuto: a run under pipeline "auto" stopped while tuning and
// resumed (which tunes again) gives the unbroken run's losses, bit for bit.
func TestResumeUnderAuto(t *testing.T) {
	auto := []string{"--set", "pipeline.schedule=auto", "--set", "pipeline.micro_batches=auto"}
	whole := runCmd(t, t.TempDir(), baseConfig, auto...)
	dir := t.TempDir()
	first := runCmd(t, dir, baseConfig, append(auto, "--set", "train.max_steps=10")...)
	second := runCmd(t, dir, baseConfig, append(auto, "--resume")...)
	for _, r := range []runResult{whole, first, second} {
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
	}
	if n := len(eventsNamed(first.events, "tune")); n != 0 {
		t.Fatalf("the first half logged %d tune events: it should stop while tuning", n)
	}
	if n := len(eventsNamed(second.events, "tune")); n != 1 {
		t.Fatalf("the resumed half logged %d tune events, want 1", n)
	}
	want, got := stepLosses(whole.events), stepLosses(second.events)
	if len(got) != len(want)-10 {
		t.Fatalf("resumed run logged %d steps, want %d", len(got), len(want)-10)
	}
	for s, l := range got {
		if math.Float64bits(want[s]) != math.Float64bits(l) {
			t.Errorf("step %d: resumed loss %v, unbroken %v", s, l, want[s])
		}
	}
}

func TestNonFiniteLossFails(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(baseConfig, "lr = 0.05", "lr = 1e30", 1)
	cfg = strings.Replace(cfg, "clip_norm = 5.0", "clip_norm = 0.0", 1)
	r := runCmd(t, dir, cfg, "--set", "train.checkpoint_every=1")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitFailed, r.stderr)
	}
	if l := lastLine(r.stderr); !strings.HasPrefix(l, "train: ") || !strings.Contains(l, "non-finite") {
		t.Errorf("last stderr line %q, want train: ... non-finite ...", l)
	}
	end := eventsNamed(r.events, "run_end")
	if len(end) != 1 || end[0]["status"] != "failed" || end[0]["error"] == "" || end[0]["reason"] != "failed" {
		t.Errorf("run_end = %v, want status failed, reason failed, with an error", end)
	}
	ck := eventsNamed(r.events, "checkpoint")
	if len(ck) == 0 {
		t.Fatal("no checkpoint was written before the failure")
	}
	last := ck[len(ck)-1]["path"].(string)
	if _, err := os.Stat(filepath.Join(last, "state.json")); err != nil {
		t.Errorf("last good checkpoint %s is gone: %v", last, err)
	}
}

// closedPort returns 127.0.0.1 and a port nothing listens on, the same
// for the whole test binary.
var closedPort = sync.OnceValue(func() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
})

func emptyFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(p, nil, 0o600)
	return p
}

func TestBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "ragged.csv")
	os.WriteFile(csv, []byte("a,b,label\n1,2,x\n3,4\n"), 0o644)
	tests := []struct {
		name string
		args []string
		cfg  string
		want string // in the last stderr line
	}{
		{"no config flag", []string{}, "", "--config"},
		{"unknown flag", []string{"--bogus"}, "", "bogus"},
		{"bad log format", []string{"--config", "x.toml", "--log-format", "xml"}, "", "xml"},
		{"stray argument", []string{"--config", "x.toml", "extra"}, "", "extra"},
		{"missing file", []string{"--config", filepath.Join(dir, "nope.toml")}, "", "nope.toml"},
		{"unknown key", nil, baseConfig + "\nbogus_key = 1\n", "bogus_key"},
		{"bad set", nil, baseConfig, "optimizer.lrr"},
		{"ragged csv", nil, strings.Replace(baseConfig, `name = "digits"`, `name = "csv"`+"\npath = \""+csv+"\"", 1), "ragged.csv"},
		{"missing idx folder", nil, strings.Replace(baseConfig, `name = "digits"`, `name = "mnist"`+"\npath = \""+filepath.Join(dir, "none")+"\"", 1), "none"},
		{"mnist without path", nil, strings.Replace(baseConfig, `name = "digits"`, `name = "mnist"`, 1), "data.path"},
		{"classes do not fit", nil, strings.Replace(baseConfig, "units = 10", "units = 7", 1), "units"},
		{"old pipeline.nodes", nil, strings.Replace(baseConfig, "[pipeline]\n", "[pipeline]\nnodes = []\n", 1), "pipeline.nodes was renamed pipeline.hosts"},
		{"no worker at host", nil, strings.Replace(baseConfig, "[pipeline]\n", "[pipeline]\nhosts = [\""+closedPort()+"\"]\n", 1), "host " + closedPort()},
		{"bad host", nil, strings.Replace(baseConfig, "[pipeline]\n", "[pipeline]\nhosts = [\"127.0.0.1:0\"]\n", 1), `pipeline.hosts[0] = "127.0.0.1:0"`},
		{"negative gemm_threads", nil, strings.Replace(baseConfig, "[pipeline]\n", "[pipeline]\ngemm_threads = -1\n", 1), "pipeline.gemm_threads = -1"},
		{"split_backward not a bool", nil, strings.Replace(baseConfig, "[pipeline]\n", "[pipeline]\nsplit_backward = 1\n", 1), "pipeline.split_backward = 1"},
		{"resume without checkpoint", []string{"--resume"}, baseConfig, "--resume"},
		{"bad recompute", nil, strings.Replace(baseConfig, "[[model.layers]]", "[model]\nrecompute = \"all\"\n[[model.layers]]", 1), `model.recompute = "all": want one of none, attention, blocks`},
		{"bad precision", nil, strings.Replace(baseConfig, "[train]\n", "[train]\nprecision = \"fp16\"\n", 1), `train.precision = "fp16": want one of fp32, bf16`},
		{"worker beyond loopback without token", []string{"worker", "--listen", "0.0.0.0:0", "--log-dir", t.TempDir()}, "", "only with a token"},
		{"worker empty token file", []string{"worker", "--listen", "127.0.0.1:0", "--token-file", emptyFile(t)}, "", "--token-file"},
		{"missing token file", []string{"--token-file", filepath.Join(dir, "none")}, baseConfig, "--token-file"},
		{"worker without listen", []string{"worker"}, "", "--listen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := tc.args
			if tc.cfg != "" {
				d := t.TempDir()
				path := filepath.Join(d, "run.toml")
				os.WriteFile(path, []byte(tc.cfg), 0o644)
				args = append([]string{"--config", path, "--set", "log.dir=" + filepath.Join(d, "logs"),
					"--set", "train.checkpoint_dir=" + filepath.Join(d, "ck")}, args...)
				if tc.name == "bad set" {
					args = append(args, "--set", "optimizer.lrr=1")
				}
			}
			code := run(context.Background(), args, &stderr)
			if code != exitBadInput {
				t.Fatalf("args %v: exit %d, want 2; stderr:\n%s", args, code, stderr.String())
			}
			l := lastLine(stderr.String())
			if !strings.HasPrefix(l, "train: ") || !strings.Contains(l, tc.want) {
				t.Errorf("args %v: last stderr line %q, want train: ...%s...", args, l, tc.want)
			}
			if strings.Contains(stderr.String(), "goroutine ") {
				t.Errorf("stderr holds a stack trace:\n%s", stderr.String())
			}
		})
	}
}

// TestConfigHashStable: the hash checkpoints record of a config is what it
// was when the layer keys lived in config.Layer itself, so that older
// checkpoints still resume (the value was computed by that code).
func TestConfigHashStable(t *testing.T) {
	cfg := `seed = 3
[data]
name = "digits"
batch_size = 32
[[model.layers]]
type = "conv2d"
channels = 4
kernel = 3
padding = 1
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "leaky_relu"
alpha = 0.2
[[model.layers]]
type = "maxpool2d"
kernel = 2
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "dropout"
p = 0.2
[[model.layers]]
type = "linear"
units = 10
init = "he_normal"
`
	c, err := config.Parse("hash.toml", []byte(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := configHash(c), "d6723ceb7d24ce67"; got != want {
		t.Errorf("configHash = %s, want %s", got, want)
	}
	// model.recompute changes no bit: a run resumes under another
	c.Model.Recompute = "blocks"
	if got, want := configHash(c), "d6723ceb7d24ce67"; got != want {
		t.Errorf("configHash with model.recompute = blocks: %s, want %s", got, want)
	}
}

// TestHelp: --help, -h and help list every command and exit 0 on stdout;
// help COMMAND and COMMAND --help give its usage and flags; --version
// names the Go that built it; a command help does not know exits 2.
func TestHelp(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runWith(context.Background(), args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, errs := run(args...)
		if code != exitOK || errs != "" || !strings.Contains(out, "usage:") || !strings.Contains(out, "exit status") {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
		}
		for _, c := range commands {
			if !strings.Contains(out, "\n  "+c.name+" ") {
				t.Errorf("%v does not list %s:\n%s", args, c.name, out)
			}
		}
	}
	for _, c := range commands {
		for _, args := range [][]string{{"help", c.name}, {c.name, "--help"}} {
			code, out, errs := run(args...)
			if code != exitOK || errs != "" || !strings.HasPrefix(out, "usage: train "+c.name) || !strings.Contains(out, "flags:\n  -") {
				t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
			}
		}
	}
	if code, out, _ := run("--version"); code != exitOK || !strings.HasPrefix(out, "train ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	for _, args := range [][]string{{"help", "nope"}, {"help", "eval", "plan"}, {}} {
		if code, out, errs := run(args...); code != exitBadInput || out != "" || !strings.Contains(lastLine(errs), "train --help") && !strings.Contains(lastLine(errs), "usage: train help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want 2 pointing at the help", args, code, out, errs)
		}
	}
}

// TestWarmupBeyondRun: a warm-up the run never finishes is refused, exit
// 2 naming the key, whatever the schedule's type.
func TestWarmupBeyondRun(t *testing.T) {
	for _, typ := range []string{"constant", "step", "cosine"} {
		for _, warmup := range []string{"5", "100000"} {
			res := runCmd(t, t.TempDir(), baseConfig, "--set", "schedule.type="+typ, "--set", "schedule.step_size=2",
				"--set", "schedule.warmup_steps="+warmup, "--set", "train.max_steps=5")
			if l := lastLine(res.stderr); res.code != exitBadInput || !strings.Contains(l, "schedule.warmup_steps = "+warmup+": the run has 5 steps") {
				t.Errorf("%s, warmup %s over 5 steps: exit %d, %q: want 2 naming schedule.warmup_steps", typ, warmup, res.code, l)
			}
		}
		if res := runCmd(t, t.TempDir(), baseConfig, "--set", "schedule.type="+typ, "--set", "schedule.step_size=2",
			"--set", "schedule.warmup_steps=4", "--set", "train.max_steps=5"); res.code != exitOK {
			t.Errorf("%s, warmup 4 over 5 steps: exit %d\n%s", typ, res.code, res.stderr)
		}
	}
}

// TestMicroBatchesBeyondBatch: micro-batches the batch cannot give (they
// are whole chunks of 32 rows) run as many as it can, with a warning
// naming the key, under every schedule.
func TestMicroBatchesBeyondBatch(t *testing.T) {
	for _, sched := range []string{"sequential", "gpipe", "1f1b"} {
		for _, micro := range []string{"2", "3"} { // a batch of 64 rows: 2 chunks
			res := runCmd(t, t.TempDir(), baseConfig, "--set", "pipeline.schedule="+sched, "--set", "pipeline.micro_batches="+micro,
				"--set", "train.max_steps=2")
			if res.code != exitOK {
				t.Fatalf("%s, micro_batches %s: exit %d\n%s", sched, micro, res.code, res.stderr)
			}
			w := eventsNamed(res.events, "warning")
			if micro == "2" {
				if len(w) != 0 {
					t.Errorf("%s, micro_batches 2 of a batch of 64: warnings %v, want none", sched, w)
				}
				continue
			}
			if len(w) != 1 || w[0]["key"] != "pipeline.micro_batches" || !strings.Contains(fmt.Sprint(w[0]["message"]), "a batch of 64 gives at most 2, so 2 run") {
				t.Errorf("%s, micro_batches 3 of a batch of 64: warnings %v, want one naming pipeline.micro_batches", sched, w)
			}
		}
	}
}

// TestRunFolders: two configs trained one after the other with default
// settings keep their checkpoints apart (checkpoints/<config name>) and
// eval of each gives its own model; a folder holding another model's
// checkpoints is refused before training; keep_checkpoints leaves the
// newest and the best.
func TestRunFolders(t *testing.T) {
	dir := t.TempDir()
	other := strings.Replace(baseConfig, "units = 32", "units = 24", 1)
	for name, cfg := range map[string]string{"a.toml": baseConfig, "b.toml": other} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	evals := map[string]string{}
	for _, name := range []string{"a", "b"} {
		code, _, stderr := runIn(t, dir, "--config", name+".toml", "--log-format", "json", "--set", "train.max_steps=4")
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", name, code, lastLine(stderr))
		}
		code, out, stderr := runIn(t, dir, "eval", "--checkpoint", filepath.Join("checkpoints", name))
		if code != exitOK {
			t.Fatalf("eval of %s: exit %d\n%s", name, code, lastLine(stderr))
		}
		evals[name] = out
	}
	for _, name := range []string{"a", "b"} {
		if !strings.Contains(evals[name], filepath.Join("checkpoints", name, "step-00000004")) {
			t.Errorf("eval of checkpoints/%s read %s", name, evals[name])
		}
	}
	if evals["a"] == evals["b"] {
		t.Errorf("the two models evaluate alike: %s", evals["a"])
	}
	code, _, stderr := runIn(t, dir, "--config", "b.toml", "--set", "train.checkpoint_dir=checkpoints/a", "--set", "train.max_steps=2")
	if l := lastLine(stderr); code != exitBadInput || !strings.Contains(l, `train.checkpoint_dir = "checkpoints/a" holds`) || !strings.Contains(l, "another model") {
		t.Errorf("b into a's folder: exit %d, %q: want 2 naming the folder", code, l)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "a", "step-*")); len(names) != 1 {
		t.Errorf("the refused run touched a's folder: %v", names)
	}

	code, _, stderr = runIn(t, dir, "--config", "a.toml", "--set", "train.name=kept", "--set", "train.max_steps=20",
		"--set", "train.checkpoint_every=1", "--set", "train.keep_checkpoints=3", "--set", "data.validation_fraction=0.2", "--set", "train.eval_every=5")
	if code != exitOK {
		t.Fatalf("keep_checkpoints = 3: exit %d\n%s", code, lastLine(stderr))
	}
	steps, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "kept", "step-*"))
	best, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "kept", "best", "step-*"))
	var names []string
	for _, s := range steps {
		names = append(names, filepath.Base(s))
	}
	if !slices.Equal(names, []string{"step-00000018", "step-00000019", "step-00000020"}) || len(best) != 1 {
		t.Errorf("keep_checkpoints = 3 over 20: %v and best %v, want steps 18-20 and one best", names, best)
	}
}
