package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunHeals kills a worker (kill -9) in the middle of a run with
// train.restarts: the run starts again by itself, from its snapshot in
// memory or its last checkpoint, once the worker is back at its address,
// or, with pipeline.hosts_min = 1, over the worker left; either way it ends
// with exit 0 and the unbroken run's step losses and final weights, bit
// for bit, and logs the restart.
func TestRunHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTrain(t, t.TempDir())
	const end = 60
	cfg := strings.Replace(baseConfig, "epochs = 2", "epochs = 100000\ncheckpoint_every = 10\nsnapshot_every = 4\nrestarts = 2\nrestart_wait = \"30s\"", 1)
	layout := []string{"--set", "pipeline.schedule=1f1b", "--set", "pipeline.stages=2", "--set", "pipeline.micro_batches=2",
		"--set", fmt.Sprintf("train.max_steps=%d", end)}
	wholeDir := t.TempDir()
	whole := coordinate(t, bin, wholeDir, cfg, layout...)
	if whole.code != 0 {
		t.Fatalf("unbroken run: exit %d\n%s", whole.code, whole.stderr)
	}
	want, wantFiles := stepLosses(whole.events), lastCheckpoint(t, wholeDir)
	for _, tc := range []struct {
		name   string
		back   bool // the worker starts again; else the run goes on without it
		killAt int  // steps logged before the kill
		from   string
	}{
		{"worker back/snapshot", true, 12, "snapshot"},     // without checkpoints, killed well before the epoch ends at step 23
		{"worker back/checkpoint", true, 15, "checkpoint"}, // without snapshots
		{"hosts left", false, 23, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := []*worker{startWorker(t, bin, "127.0.0.1:0"), startWorker(t, bin, "127.0.0.1:0")}
			args := append(slices.Clone(layout), "--set", hostsSet(ws...))
			if !tc.back {
				args = append(args, "--set", "pipeline.hosts_min=1", "--set", `train.restart_wait="2s"`)
			}
			switch tc.from {
			case "checkpoint":
				args = append(args, "--set", "train.snapshot_every=0")
			case "snapshot":
				args = append(args, "--set", "train.checkpoint_every=0")
			}
			run := t.TempDir()
			done := make(chan runResult, 1)
			go func() { done <- coordinate(t, bin, run, cfg, args...) }()
			if !waitForSteps(filepath.Join(run, "logs"), tc.killAt, time.Minute) {
				t.Fatalf("the run did not log %d steps within a minute", tc.killAt)
			}
			dead := ws[1]
			_ = dead.cmd.Process.Kill()
			_ = dead.cmd.Wait()
			if tc.back {
				time.Sleep(time.Second)
				ws[1] = startWorker(t, bin, dead.addr, dead.args...)
			}
			res := <-done
			if res.code != 0 {
				dumpWorkerLogs(t, ws)
				t.Fatalf("killed %s after %d steps: exit %d\n%s", dead.addr, tc.killAt, res.code, lastLine(res.stderr))
			}
			restarts := eventsNamed(res.events, "restart")
			if len(restarts) != 1 || restarts[0]["host"] != dead.addr {
				t.Fatalf("restart events %v, want one naming %s", restarts, dead.addr)
			}
			r := restarts[0]
			hosts := len(r["hosts"].([]any))
			if tc.back && hosts != 2 || !tc.back && hosts != 1 {
				t.Errorf("restarted on %d hosts %v", hosts, r["hosts"])
			}
			if tc.from != "" && r["from"] != tc.from {
				t.Errorf("restarted from %v at step %v, want from the %s", r["from"], r["from_step"], tc.from)
			}
			t.Logf("killed %s after %d steps logged: restarted from step %v (%v), %v steps lost", dead.addr, tc.killAt, r["from_step"], r["from"], r["steps_lost"])
			sameAsUnbroken(t, "healed", res.events, run, end, want, wantFiles)
		})
	}
}

// waitForSteps waits until the run logging into dir has logged n step
// events, and reports whether it did within limit.
func waitForSteps(dir string, n int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, f := range files {
			if data, err := os.ReadFile(f); err == nil && bytes.Count(data, []byte(`"event":"step"`)) >= n {
				return true
			}
		}
	}
	return false
}
