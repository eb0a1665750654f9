package pipeline_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// specs is a model as data, for stages built on workers.
var specs = []nn.Spec{
	{Type: "linear", Units: 16, Init: nn.XavierUniform}, {Type: "relu"}, {Type: "dropout", P: 0.25},
	{Type: "linear", Units: 12, Init: "torch_default"}, {Type: "tanh"}, {Type: "linear", Units: classes, Init: "torch_default"},
}

func specModel(t testing.TB) []nn.Layer {
	t.Helper()
	layers, err := nn.Build(specs, features, seed, tensor.Float32, 0, len(specs))
	if err != nil {
		t.Fatal(err)
	}
	return layers
}

// The test binary runs as a worker when workerEnv names the address to
// listen on: one process per worker, as in use (and protoactor's remote,
// which sets gRPC's process-wide logger when it starts, is started once
// per process).
const (
	workerEnv      = "PIPETRAIN_TEST_WORKER"
	workerTokenEnv = "PIPETRAIN_TEST_WORKER_TOKEN"
)

// serveWorker runs a worker until its stdin closes (the test process is
// gone) and returns the exit status.
func serveWorker(listen, token string) int {
	w, err := pipeline.NewWorker(pipeline.WorkerConfig{Listen: listen, Token: token})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(w.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	w.Close()
	return 0
}

// worker is a worker process started by a test.
type worker struct {
	addr string
	cmd  *exec.Cmd
}

// startWorker starts a worker process on 127.0.0.1 at a free port, and
// kills it at the test's end.
func startWorker(t testing.TB, token string) *worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"=127.0.0.1:0", workerTokenEnv+"="+token)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case w.addr = <-line:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not print its address within 20 s")
	}
	if w.addr == "" {
		t.Fatal("the worker exited without listening")
	}
	return w
}

// workers starts n worker processes and returns their addresses.
func workers(t testing.TB, n int, token string) []string {
	t.Helper()
	var hosts []string
	for range n {
		hosts = append(hosts, startWorker(t, token).addr)
	}
	return hosts
}

// train runs the test's steps on an engine of cfg over the spec model.
func train(t testing.TB, cfg pipeline.Config) ([]float64, map[string][]float32) {
	t.Helper()
	cfg.Loss, cfg.Optimizer, cfg.ClipNorm, cfg.Features = nn.CrossEntropy, sgd, clipNorm, features
	cfg.Specs, cfg.Seed, cfg.RunID = specs, seed, "test-run"
	return trainEngine(t, specModel(t), cfg)
}

// TestRemoteEquivalence: stages on two workers give the losses and weights
// of the same pipeline in one process, bit for bit, with dropout, momentum
// and clip_norm, under every schedule and stage count.
func TestRemoteEquivalence(t *testing.T) {
	hosts := workers(t, 2, "")
	for _, tc := range []struct {
		sched  actors.Schedule
		stages int
		shards []int
	}{
		{actors.OneFOneB, 2, nil},
		{actors.OneFOneB, 4, nil},
		{actors.GPipe, 2, nil},
		{actors.GPipe, 4, nil},
		{actors.OneFOneB, 0, []int{1, 1, 1, 2}},
	} {
		cfg := pipeline.Config{Schedule: tc.sched, MicroBatches: 4, Stages: tc.stages, Shards: tc.shards, Hang: 5 * time.Second}
		wantLoss, wantW := train(t, cfg)
		cfg.Hosts = hosts
		t.Logf("%v stages=%d shards=%v", tc.sched, tc.stages, tc.shards)
		gotLoss, gotW := train(t, cfg)
		if !slices.Equal(gotLoss, wantLoss) {
			t.Errorf("%v stages=%d shards=%v: losses on hosts %v, in one process %v", tc.sched, tc.stages, tc.shards, gotLoss, wantLoss)
		}
		for name, w := range wantW {
			if !slices.Equal(gotW[name], w) {
				t.Errorf("%v stages=%d shards=%v: %s differs on hosts", tc.sched, tc.stages, tc.shards, name)
			}
		}
	}
}

// TestRemoteToken: a coordinator without the workers' token is refused
// before anything is spawned, with an error naming the host, and the
// worker then serves a coordinator with the right token.
func TestRemoteToken(t *testing.T) {
	hosts := workers(t, 1, "s3cret")
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Hosts: hosts,
		Loss: nn.CrossEntropy, Optimizer: sgd, Features: features, Specs: specs, Seed: seed, RunID: "r"}
	for _, token := range []string{"", "wrong"} {
		cfg.Token = token
		_, err := pipeline.New(specModel(t), cfg)
		var he *pipeline.HandshakeError
		if !errors.As(err, &he) || he.Host != hosts[0] || !strings.Contains(err.Error(), "token") {
			t.Fatalf("token %q: got %v, want a handshake error naming %s and the token", token, err, hosts[0])
		}
	}
	cfg.Token = "s3cret"
	train(t, cfg)
}
