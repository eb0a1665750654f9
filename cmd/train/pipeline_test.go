package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSchedulesGiveIdenticalLosses runs the small dropout and clip_norm model
// under every schedule, stages 0 and 2 (interleaved and zbv: 2 stages of 2
// chunks), micro-batches 1, 2, 4 and 8: every step's loss is the same, bit
// for bit.
func TestSchedulesGiveIdenticalLosses(t *testing.T) {
	// 256 rows: eight 32-row chunks, so 1, 2, 4 and 8 micro-batches all differ
	base := strings.Replace(strings.Replace(baseConfig, "batch_size = 64", "batch_size = 256", 1), "epochs = 2", "epochs = 6", 1)
	var want map[int]float64
	var wantName string
	for _, micro := range []int{1, 2, 4, 8} {
		for _, sched := range []string{"sequential", "gpipe", "1f1b", "zb-h1", "interleaved", "zbv"} {
			for _, stages := range []int{0, 2} {
				chunks := 1
				if sched == "interleaved" || sched == "zbv" {
					if stages == 0 {
						continue
					}
					chunks = 2
				}
				name := fmt.Sprintf("%s/stages=%d/micro=%d", sched, stages, micro)
				cfg := strings.Replace(base, "micro_batches = 2", fmt.Sprintf("micro_batches = %d", micro), 1)
				r := runCmd(t, t.TempDir(), cfg, "--set", "pipeline.schedule="+sched, "--set", fmt.Sprintf("pipeline.chunks=%d", chunks),
					"--set", fmt.Sprintf("pipeline.stages=%d", stages), "--set", "train.max_steps=30")
				if r.code != 0 {
					t.Fatalf("%s: exit %d:\n%s", name, r.code, r.stderr)
				}
				got := stepLosses(r.events)
				if len(got) != 30 {
					t.Fatalf("%s: %d step events, want 30", name, len(got))
				}
				if want == nil {
					want, wantName = got, name
					continue
				}
				for s, l := range want {
					if math.Float64bits(got[s]) != math.Float64bits(l) {
						t.Errorf("%s: step %d loss %v; %s gives %v", name, s, got[s], wantName, l)
					}
				}
			}
		}
	}
}

// TestAuto: pipeline "auto" tries each candidate layout in the run's first
// steps, logs a tune event, keeps the fastest, and gives the losses of a
// fixed layout bit for bit.
func TestAuto(t *testing.T) {
	base := strings.Replace(strings.Replace(baseConfig, "batch_size = 64", "batch_size = 256", 1), "epochs = 2", "epochs = 12", 1)
	fixed := runCmd(t, t.TempDir(), base, "--set", "pipeline.micro_batches=1", "--set", "pipeline.stages=1", "--set", "train.max_steps=70")
	auto := runCmd(t, t.TempDir(), base, "--set", "pipeline.schedule=auto", "--set", "pipeline.micro_batches=auto", "--set", "train.max_steps=70")
	for _, r := range []runResult{fixed, auto} {
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
	}
	want, got := stepLosses(fixed.events), stepLosses(auto.events)
	if len(got) != 70 || len(want) != 70 {
		t.Fatalf("%d and %d step events, want 70", len(got), len(want))
	}
	for s, l := range want {
		if math.Float64bits(got[s]) != math.Float64bits(l) {
			t.Errorf("auto: step %d loss %v; sequential, one stage, one micro-batch gives %v", s, got[s], l)
		}
	}
	tunes := eventsNamed(auto.events, "tune")
	if len(tunes) != 1 {
		t.Fatalf("%d tune events, want 1", len(tunes))
	}
	cands := tunes[0]["candidates"].([]any)
	wantCands := []string{"sequential/1/1", "1f1b/0/2", "1f1b/0/4", "1f1b/0/8", "zb-h1/0/2", "zb-h1/0/4", "zb-h1/0/8"}
	best, bestSPS := "", 0.0
	var names []string
	for _, c := range cands {
		m := c.(map[string]any)
		name := fmt.Sprintf("%v/%v/%v", m["schedule"], m["stages"], m["micro_batches"])
		names = append(names, name)
		if sps := m["samples_per_sec"].(float64); sps > bestSPS {
			best, bestSPS = name, sps
		}
	}
	if !slices.Equal(names, wantCands) {
		t.Errorf("tune candidates %v, want %v", names, wantCands)
	}
	ch := tunes[0]["chosen"].(map[string]any)
	if chosen := fmt.Sprintf("%v/%v/%v", ch["schedule"], ch["stages"], ch["micro_batches"]); chosen != best {
		t.Errorf("tune chose %s, the fastest candidate was %s (%v)", chosen, best, cands)
	}
	// a run that ends while tuning ends cleanly, with no choice logged
	short := runCmd(t, t.TempDir(), base, "--set", "pipeline.schedule=auto", "--set", "train.max_steps=5")
	if short.code != 0 || len(eventsNamed(short.events, "tune")) != 0 || len(stepLosses(short.events)) != 5 {
		t.Errorf("auto, 5 steps: exit %d, %d tune events, %d steps; want 0, 0, 5\n%s", short.code, len(eventsNamed(short.events, "tune")), len(stepLosses(short.events)), short.stderr)
	}
	// the config as given is what run_start records
	p := eventsNamed(auto.events, "run_start")[0]["config"].(map[string]any)["pipeline"].(map[string]any)
	if p["schedule"] != "auto" || p["micro_batches"] != "auto" {
		t.Errorf("run_start pipeline = %v, want schedule and micro_batches \"auto\"", p)
	}
}

func TestStageEventsAndTrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.json")
	r := runCmd(t, dir, baseConfig, "--set", "pipeline.schedule=1f1b", "--set", "pipeline.micro_batches=4",
		"--set", "log.trace="+trace, "--set", "model.layers.0.shards=2")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	stages := eventsNamed(r.events, "stage")
	// 2 epochs and the run's end, 5 stage actors (2 shards + 3 layers) each time
	if len(stages) != 3*5 {
		t.Fatalf("%d stage events, want 15", len(stages))
	}
	for _, e := range stages {
		for _, k := range []string{"stage", "layers", "busy_fraction", "messages"} {
			if _, ok := e[k]; !ok {
				t.Errorf("stage event lacks %q: %v", k, e)
			}
		}
		if f := e["busy_fraction"].(float64); f < 0 || f > 1 {
			t.Errorf("busy_fraction %v outside [0, 1]: %v", f, e)
		}
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name, Ph string
			Tid      int
			Dur      float64
		}
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	kinds := map[string]int{}
	tracks := map[int]bool{}
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "X" {
			kinds[strings.Fields(ev.Name)[0]]++
			tracks[ev.Tid] = true
		}
	}
	for _, k := range []string{"forward", "backward", "update", "optimizer"} {
		if kinds[k] == 0 {
			t.Errorf("trace has no %s span (kinds %v)", k, kinds)
		}
	}
	if len(tracks) < 6 {
		t.Errorf("trace has spans on %d tracks, want one per busy actor", len(tracks))
	}
}

// TestInterruptWritesCheckpoint sends SIGINT to a real train process: it writes
// a checkpoint, ends its log with run_end, and exits 130; --resume continues.
func TestInterruptWritesCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "train")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(dir, "run.toml")
	os.WriteFile(cfgPath, []byte(strings.Replace(baseConfig, "epochs = 2", "epochs = 100000", 1)), 0o644)
	cmd := exec.Command(bin, "--config", cfgPath, "--log-format", "json",
		"--set", "log.dir="+filepath.Join(dir, "logs"), "--set", "train.checkpoint_dir="+filepath.Join(dir, "ck"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	steps := 0
	for sc.Scan() && steps < 50 {
		if strings.Contains(sc.Text(), `"event":"step"`) {
			steps++
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("train did not stop within 30 s of SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d after SIGINT, want %d; stderr tail:\n%s", code, exitInterrupted, strings.Join(rest, "\n"))
	}
	if len(rest) == 0 || !strings.HasPrefix(rest[len(rest)-1], "train: interrupted") {
		t.Errorf("last stderr line %q, want train: interrupted ...", rest)
	}
	evs := readEvents(t, filepath.Join(dir, "logs"))
	if len(eventsNamed(evs, "checkpoint")) == 0 || len(eventsNamed(evs, "run_end")) != 1 {
		t.Fatalf("after SIGINT the log has %d checkpoint and %d run_end events", len(eventsNamed(evs, "checkpoint")), len(eventsNamed(evs, "run_end")))
	}
	last := eventsNamed(evs, "checkpoint")
	stepAt := int(last[len(last)-1]["step"].(float64))
	if stepAt < 50 {
		t.Errorf("the interrupt checkpoint is at step %d, before the 50 steps seen", stepAt)
	}
}

// TestReplicasResume: a run with 2 replicas stopped at step 20 and resumed
// with 4 gives the step losses and the checkpointed weights and optimizer
// state of an unbroken run with one, bit for bit; run_start records the key.
func TestReplicasResume(t *testing.T) {
	wholeDir := t.TempDir()
	whole := runCmd(t, wholeDir, baseConfig)
	want := stepLosses(whole.events)
	dir := t.TempDir()
	first := runCmd(t, dir, baseConfig, "--set", "pipeline.replicas=2", "--set", "train.max_steps=20")
	if first.code != 0 {
		t.Fatalf("replicas=2: exit %d:\n%s", first.code, first.stderr)
	}
	p := eventsNamed(first.events, "run_start")[0]["config"].(map[string]any)["pipeline"].(map[string]any)
	if p["replicas"] != 2.0 {
		t.Errorf("run_start pipeline.replicas = %v, want 2", p["replicas"])
	}
	second := runCmd(t, dir, baseConfig, "--set", "pipeline.replicas=4", "--resume")
	if second.code != 0 {
		t.Fatalf("replicas=4 resumed: exit %d:\n%s", second.code, second.stderr)
	}
	got := stepLosses(first.events)
	for s, l := range stepLosses(second.events) {
		got[s] = l
	}
	if len(got) != len(want) {
		t.Fatalf("%d steps with replicas, %d without", len(got), len(want))
	}
	for s, l := range want {
		if got[s] != l {
			t.Errorf("step %d: loss %v with replicas 2 then 4, %v with one", s, got[s], l)
		}
	}
	wantFiles, gotFiles := lastCheckpoint(t, wholeDir), lastCheckpoint(t, dir)
	for name, b := range wantFiles {
		if strings.HasSuffix(name, ".safetensors") && !bytes.Equal(gotFiles[name], b) {
			t.Errorf("checkpoint file %s differs from the run with one replica", name)
		}
	}
}
