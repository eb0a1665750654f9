package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var restartCycles = flag.Int("restart.cycles", 1, "TestWorkerRestarts: kill-and-restart cycles per worker position")

// TestWorkerRestarts kills each worker of a run in turn (kill -9, at a
// different step each cycle): the run must end within seconds with exit 1
// naming the host, its stage and the step. The worker then starts again at
// the same address and the run resumes: every resumed run must end with the
// unbroken run's step losses and final weights, bit for bit, and none may
// hang, with two replicas (every replica's stages restored) too. The workers take a token, as beyond loopback. Run it many times
// beside a busy loop with -restart.cycles=20.
func TestWorkerRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildTrain(t, dir)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const end = 90 // the step every resumed run ends at
	cfg := strings.Replace(baseConfig, "epochs = 2", "epochs = 100000\ncheckpoint_every = 10", 1)
	for _, tc := range []struct{ hosts, replicas int }{{2, 1}, {3, 1}, {2, 2}} { // two replicas: one a worker
		hosts := tc.hosts
		t.Run(fmt.Sprintf("hosts=%d/replicas=%d", hosts, tc.replicas), func(t *testing.T) {
			layout := []string{"--set", "pipeline.schedule=1f1b", "--set", fmt.Sprintf("pipeline.stages=%d", hosts), "--set", "pipeline.micro_batches=2",
				"--set", fmt.Sprintf("pipeline.replicas=%d", tc.replicas)}
			wholeDir := t.TempDir()
			whole := coordinate(t, bin, wholeDir, cfg, append(layout, "--set", fmt.Sprintf("train.max_steps=%d", end))...)
			if whole.code != 0 {
				t.Fatalf("unbroken run: exit %d\n%s", whole.code, whole.stderr)
			}
			want := stepLosses(whole.events)
			wantFiles := lastCheckpoint(t, wholeDir)
			ws := make([]*worker, hosts)
			for i := range ws {
				ws[i] = startWorker(t, bin, "127.0.0.1:0", "--token-file", tokenFile)
			}
			for k := range hosts + 1 { // each worker, then the coordinator
				for c := range *restartCycles {
					killAt := 12 + (7*c+5*k)%40
					killAndResume(t, bin, cfg, append(layout, "--token-file", tokenFile), ws, k, stagesOn(k, tc.replicas), killAt, end, want, wantFiles)
					if t.Failed() {
						t.Fatalf("victim %d, cycle %d (killed at step %d or after): see above", k, c, killAt)
					}
				}
			}
		})
	}
}

// killAndResume runs cfg on ws and, once the run has logged killAt steps,
// kills ws[k], or the coordinator if k is len(ws). A killed worker must end
// the run with exit 1 naming the host, and is started again at its address.
// The run then resumes to step end, at once, and is checked against want
// and wantFiles.
func killAndResume(t *testing.T, bin, cfg string, layout []string, ws []*worker, k int, stages string, killAt, end int, want map[int]float64, wantFiles map[string][]byte) {
	t.Helper()
	run := t.TempDir()
	path := filepath.Join(run, "run.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--config", path, "--log-format", "json",
		"--set", "log.dir=" + filepath.Join(run, "logs"), "--set", "train.checkpoint_dir=" + filepath.Join(run, "checkpoints"),
		"--set", hostsSet(ws...)}, layout...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var rest []string
	for steps := 0; steps < killAt && sc.Scan(); {
		if strings.Contains(sc.Text(), `"event":"step"`) {
			steps++
		}
		rest = append(rest, sc.Text())
	}
	if k == len(ws) { // the coordinator; the workers drop its run on their own
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		resume(t, bin, run, cfg, layout, ws, "the coordinator", end, want, wantFiles)
		return
	}
	dead := ws[k]
	_ = dead.cmd.Process.Kill()
	killed := time.Now()
	_ = dead.cmd.Wait()
	drained := make(chan struct{})
	go func() {
		for sc.Scan() {
			rest = append(rest, sc.Text())
		}
		close(drained)
	}()
	select {
	case <-drained:
		_ = cmd.Wait()
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-drained
		var own []string // the coordinator's own events, not protoactor's
		for _, l := range rest {
			if !strings.Contains(l, `"event":"protoactor"`) {
				own = append(own, l)
			}
		}
		t.Fatalf("the coordinator did not end within 20 s of the death of %s:\n%s", dead.addr, strings.Join(own[max(0, len(own)-8):], "\n"))
	}
	if took := time.Since(killed); took > 10*time.Second {
		t.Errorf("the coordinator took %v to end after %s was killed, want a few seconds", took, dead.addr)
	}
	last := lastLine(strings.Join(rest, "\n"))
	// the engine's monitor names every stage of the host; a neighbour on
	// another worker that saw the connection go first, the one it watched
	named := strings.Contains(last, "("+stages+")")
	for _, one := range strings.Split(stages, ", ") {
		named = named || strings.Contains(last, "("+one+")")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitFailed || !strings.Contains(last, dead.addr) || !named || !strings.Contains(last, "at step") {
		t.Fatalf("after killing %s: exit %d, last stderr line %q; want 1 naming the host, its stages (%s) or one of them, and the step", dead.addr, code, last, stages)
	}
	ws[k] = startWorker(t, bin, dead.addr, dead.args...)
	resume(t, bin, run, cfg, layout, ws, dead.addr, end, want, wantFiles)
}

// stagesOn names the stage actors worker k runs under a layout of one
// position a host and replicas chains, as a lost host's error lists them:
// position k's, each replica's copy beside its owner (the plan's choice for
// the digits MLP, whose turn would send its 2,410 weights twice a step, the
// gradients across and the weights back: more than the 4,096 activation
// values of two replicas at the cut).
func stagesOn(k, replicas int) string {
	names := []string{fmt.Sprintf("stage %d", k)}
	for r := 1; r < replicas; r++ {
		names = append(names, fmt.Sprintf("replica %d stage %d", r, k))
	}
	return strings.Join(names, ", ")
}

// resume resumes the run in folder run on ws after victim was killed, to
// step end, and checks its losses and final weights against want and
// wantFiles.
func resume(t *testing.T, bin, run, cfg string, layout []string, ws []*worker, victim string, end int, want map[int]float64, wantFiles map[string][]byte) {
	t.Helper()
	evs := readEvents(t, filepath.Join(run, "logs"))
	cks := eventsNamed(evs, "checkpoint")
	if len(cks) == 0 {
		t.Fatalf("the failed run logged no checkpoint")
	}
	at := int(cks[len(cks)-1]["step"].(float64))
	if at >= end {
		t.Fatalf("the run was killed after step %d, past %d", at, end)
	}
	resumed := coordinate(t, bin, run, cfg, append(layout, "--resume", "--set", hostsSet(ws...), "--set", fmt.Sprintf("train.max_steps=%d", end))...)
	if resumed.code != 0 {
		dumpWorkerLogs(t, ws)
		t.Fatalf("resumed at step %d after killing %s: exit %d\n%s", at, victim, resumed.code, resumed.stderr)
	}
	t.Logf("killed %s; resumed from step %d", victim, at)
	sameAsUnbroken(t, "resumed", resumed.events, run, end-at, want, wantFiles)
}

// sameAsUnbroken checks that a broken run, its events and its folder run,
// logged steps step losses, each the unbroken run's (want), and ended with
// its final weights and optimizer state (wantFiles).
func sameAsUnbroken(t *testing.T, what string, events []map[string]any, run string, steps int, want map[int]float64, wantFiles map[string][]byte) {
	t.Helper()
	got := stepLosses(events)
	if len(got) != steps {
		t.Errorf("the %s run logged %d steps, want %d", what, len(got), steps)
	}
	for s, l := range got {
		if want[s] != l {
			t.Errorf("step %d: %s loss %v, unbroken %v", s, what, l, want[s])
		}
	}
	files := lastCheckpoint(t, run)
	for _, name := range []string{"model.safetensors", "optimizer.safetensors"} {
		if !bytes.Equal(files[name], wantFiles[name]) {
			t.Errorf("the %s run's final %s differs from the unbroken run's", what, name)
		}
	}
}

// dumpWorkerLogs logs the workers' logs, for a failure.
func dumpWorkerLogs(t *testing.T, ws []*worker) {
	t.Helper()
	for _, w := range ws {
		files, _ := filepath.Glob(filepath.Join(w.logDir, "*.jsonl"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			t.Logf("worker %s, %s:\n%s", w.addr, f, b)
		}
	}
}
