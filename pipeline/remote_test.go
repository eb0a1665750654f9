package pipeline_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/pipeline/remote"
	"github.com/pipetrain/pipetrain/tensor"
)

// The test binary runs as a worker when workerEnv names the address to
// listen on: one process per worker, as in use (and protoactor's remote,
// which sets gRPC's process-wide logger when it starts, is started once
// per process).
const (
	workerEnv          = "PIPETRAIN_TEST_WORKER"
	workerTokenEnv     = "PIPETRAIN_TEST_WORKER_TOKEN"
	workerAdvertiseEnv = "PIPETRAIN_TEST_WORKER_ADVERTISE"
)

// serveWorker runs a worker until its stdin closes (the test process is
// gone) and returns the exit status. A line "mem" on stdin is answered on
// stdout with the bytes the process has allocated so far.
func serveWorker(listen, token string) int {
	w, err := remote.NewWorker(remote.WorkerConfig{Listen: listen, Token: token, Advertise: os.Getenv(workerAdvertiseEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(w.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "mem" {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Println(ms.TotalAlloc)
		}
	}
	w.Close()
	return 0
}

// worker is a worker process started by a test.
type worker struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.Writer
	lines chan string // its stdout after the address
}

// allocated returns the bytes the worker process has allocated so far.
func (w *worker) allocated(t testing.TB) uint64 {
	t.Helper()
	if _, err := io.WriteString(w.stdin, "mem\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-w.lines:
		n, err := strconv.ParseUint(l, 10, 64)
		if err != nil {
			t.Fatalf("the worker answered %q", l)
		}
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not answer within 5 s")
	}
	return 0
}

// startWorker starts a worker process on 127.0.0.1 at a free port, and
// kills it at the test's end. A worker behind a proxy listens on listen and
// advertises the proxy's address.
func startWorker(t testing.TB, token string, listenAdvertise ...string) *worker {
	t.Helper()
	listen, advertise := "127.0.0.1:0", ""
	if len(listenAdvertise) == 2 {
		listen, advertise = listenAdvertise[0], listenAdvertise[1]
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+listen, workerTokenEnv+"="+token, workerAdvertiseEnv+"="+advertise)
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
	w := &worker{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() { // ends when the worker exits
		r := bufio.NewReader(out)
		s, _ := r.ReadString('\n')
		line <- strings.TrimSpace(s)
		for {
			s, err := r.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case w.lines <- strings.TrimSpace(s):
			default: // nobody asked
			}
		}
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
	cfg.Loss, cfg.Optimizer, cfg.ClipNorm, cfg.RunID = nn.CrossEntropy, sgd, clipNorm, "test-run"
	return trainEngine(t, testModel, cfg)
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

// TestRemoteListen: with Config.Listen the coordinator takes its workers'
// connections at that port, held while the engine is open.
func TestRemoteListen(t *testing.T) {
	hosts := workers(t, 2, "")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eng := newEngine(t, testModel, pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Hosts: hosts, Listen: addr,
		RunID: "listen", Hang: 5 * time.Second})
	x, tg := batch(1)
	if _, err := eng.Step(1, lr(1), x, tg); err != nil {
		t.Fatal(err)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Errorf("%s is free while the engine runs: it does not listen there", addr)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRemoteToken: a coordinator without the workers' token is refused
// before anything is spawned, with an error naming the host, and the
// worker then serves a coordinator with the right token.
func TestRemoteToken(t *testing.T) {
	hosts := workers(t, 1, "s3cret")
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Hosts: hosts,
		Loss: nn.CrossEntropy, Optimizer: sgd, RunID: "r"}
	for _, token := range []string{"", "wrong"} {
		cfg.Token = token
		_, err := pipeline.New(testModel, cfg)
		var he *remote.HandshakeError
		if !errors.As(err, &he) || he.Host != hosts[0] || !strings.Contains(err.Error(), "token") {
			t.Fatalf("token %q: got %v, want a handshake error naming %s and the token", token, err, hosts[0])
		}
	}
	cfg.Token = "s3cret"
	train(t, cfg)
}

// TestRemoteLargeActivation: a 64 MiB activation (16384 rows of 1024
// float32) and its gradient cross between workers, in the data plane's
// 1 MiB pieces, as in one process.
func TestRemoteLargeActivation(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 64 MiB between processes")
	}
	big := []nn.Spec{{Type: "linear", Units: 1024, Init: nn.XavierUniform}, {Type: "relu"}, {Type: "linear", Units: classes, Init: nn.XavierUniform}}
	rng := rand.New(rand.NewPCG(seed, 9))
	const rows = 16384
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, rows, features)
	labels := make([]int, rows)
	for i := range labels {
		labels[i] = rng.IntN(classes)
	}
	hosts := workers(t, 2, "")
	var losses []float64
	for _, h := range [][]string{nil, hosts} {
		// stage 0 (the 1024-wide linear) on the first worker, the rest on the second
		eng, err := pipeline.New(pipeline.Model{Specs: big, Sample: []int{features}, Seed: seed}, pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 1, Loss: nn.CrossEntropy,
			Optimizer: sgd, Hosts: h, RunID: "big", Hang: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		loss, err := eng.Step(1, 0.1, x, nn.Target{Labels: labels})
		if err != nil {
			t.Fatalf("hosts %v: %v", h, err)
		}
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
	}
	if losses[0] != losses[1] {
		t.Errorf("loss %v on workers, %v in one process", losses[1], losses[0])
	}
}

// relay forwards TCP connections to a target until cut: then it reads and
// drops everything without closing, as a silent link does.
type relay struct {
	l      net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func startRelay(t testing.TB, target string) *relay {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{l: l, target: target}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, in, out)
			r.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); r.pipe(out, in) }()
			go func() { defer wg.Done(); r.pipe(in, out) }()
		}
	}()
	return r
}

func (r *relay) pipe(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		if r.cut.Load() {
			continue // dropped: no RST, no FIN
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestRemoteCutLink: a link that stops carrying anything without closing is
// found within 5 s by the heartbeat; the step fails naming the host, nothing
// hangs, and closing the engine leaves no goroutine behind (TestMain's goleak).
func TestRemoteCutLink(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	real := fmt.Sprintf("127.0.0.1:%d", port)
	rl := startRelay(t, real)
	w := startWorker(t, "", real, rl.l.Addr().String())
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Loss: nn.CrossEntropy, Optimizer: sgd,
		Hosts: []string{w.addr}, RunID: "cut", Hang: time.Minute}
	eng, err := pipeline.New(testModel, cfg)
	if err != nil {
		t.Fatal(err)
	}
	step := 1
	for ; step <= 3; step++ {
		x, tg := batch(step)
		if _, err := eng.Step(step, lr(step), x, tg); err != nil {
			t.Fatal(err)
		}
	}
	rl.cut.Store(true)
	cut := time.Now()
	for ; ; step++ {
		x, tg := batch(step)
		_, err = eng.Step(step, lr(step), x, tg)
		if err != nil || time.Since(cut) > 30*time.Second {
			break
		}
	}
	took := time.Since(cut)
	t.Logf("the cut link was found %v after the cut: %v", took.Round(10*time.Millisecond), err)
	if err == nil || !strings.Contains(err.Error(), w.addr) {
		t.Fatalf("after the cut: %v, want an error naming %s", err, w.addr)
	}
	if took > 5*time.Second {
		t.Errorf("the cut link was found after %v, want within 5 s", took)
	}
	closed := time.Now()
	if err := eng.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if d := time.Since(closed); d > 10*time.Second {
		t.Errorf("closing took %v", d)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a log sink safe for the actors' goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUndelivered: a message between processes sent to an actor that does
// not exist, on a worker or in the coordinator's process, fails its step
// within 5 s with an error naming the host where it was dropped, the
// sender, the target and the message, and the coordinator's process logs
// an "undelivered" event for one dropped there.
func TestUndelivered(t *testing.T) {
	hosts := workers(t, 2, "")
	for _, tc := range []struct {
		name     string
		position int    // the stage whose next neighbour is gone
		host     string // where the message is dropped
	}{
		{"to a worker", 2, hosts[1]},
		{"to the coordinator's process", 5, ""},
	} {
		var log lockedBuffer
		logger := zerolog.New(&log)
		cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 0, Hosts: hosts, Loss: nn.CrossEntropy,
			Optimizer: sgd, RunID: "undelivered", Logger: &logger}
		eng, err := pipeline.New(testModel, cfg)
		if err != nil {
			t.Fatal(err)
		}
		x, tg := batch(1)
		if _, err := eng.Step(1, lr(1), x, tg); err != nil {
			t.Fatalf("%s: step 1: %v", tc.name, err)
		}
		if err := eng.Misroute(tc.position); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		start := time.Now()
		_, err = eng.Step(2, lr(2), x, tg)
		took := time.Since(start)
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
		host := tc.host
		if host == "" { // the coordinator's process: the address it reported
			i := strings.Index(log.String(), `"host":"`)
			if i < 0 {
				t.Fatalf("%s: no undelivered event names a host in the coordinator's log:\n%s", tc.name, log.String())
			}
			host, _, _ = strings.Cut(log.String()[i+len(`"host":"`):], `"`)
		}
		t.Logf("%s: after %v: %v", tc.name, took.Round(time.Millisecond), err)
		if err == nil || !strings.Contains(err.Error(), "host "+host) || !strings.Contains(err.Error(), "not delivered") ||
			!strings.Contains(err.Error(), "-gone") || !strings.Contains(err.Error(), "Forward step 2") ||
			!strings.Contains(err.Error(), fmt.Sprintf("from stage %d", tc.position)) {
			t.Errorf("%s: step 2 gave %v; want an error naming host %s, the sender, the gone target and the forward", tc.name, err, host)
		}
		if took > 5*time.Second {
			t.Errorf("%s: the step failed after %v, want within 5 s", tc.name, took)
		}
		if tc.host == "" {
			for _, field := range []string{`"event":"undelivered"`, `"from":"stage 5 on `, `-gone"`, `"type":"Forward step 2 micro-batch `, `"reason":"no such actor there"`, `"level":"warn"`} {
				if !strings.Contains(log.String(), field) {
					t.Errorf("%s: the coordinator's log lacks %s:\n%s", tc.name, field, log.String())
				}
			}
		}
	}
}

// TestRemoteGPT: a GPT's blocks on two workers give the losses and weights
// of the same pipeline in one process, bit for bit, with a head tied to the
// embedding on the other worker.
func TestRemoteGPT(t *testing.T) {
	hosts := workers(t, 2, "")
	for _, m := range []pipeline.Model{tinyGPT, tied} {
		cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 3, Loss: nn.CrossEntropy, Optimizer: sgd,
			ClipNorm: clipNorm, RunID: "gpt", Hang: 5 * time.Second}
		wantLoss, wantW := trainEngineOn(t, m, cfg, gptBatch)
		cfg.Hosts = hosts
		gotLoss, gotW := trainEngineOn(t, m, cfg, gptBatch)
		if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
			t.Errorf("tie=%v on hosts: %s", m.Specs[len(m.Specs)-1].Tie, why)
		}
	}
}

// TestRemoteReplicas: replicas over two workers, whose stages hold their
// own weights (the gradients travel with the turn, the owner sends the
// updated weights), give the losses and weights of one replica in one
// process, bit for bit: 1, 2 and 4 replicas under every schedule, at 0, 1
// and 2 stages and 1, 2 and 4 micro-batches a replica, for the MLP, the
// CNN and the GPT with a tied head (its embedding and head on different
// workers). Under -race, two stages and two micro-batches only.
func TestRemoteReplicas(t *testing.T) {
	hosts := workers(t, 2, "")
	stagesOf, microOf := []int{0, 1, 2}, []int{1, 2, 4}
	if raceEnabled {
		stagesOf, microOf = []int{2}, []int{2}
	}
	for _, c := range []struct {
		name    string
		m       pipeline.Model
		batchOf func(int) (*tensor.Tensor, nn.Target)
	}{{"mlp", testModel, batch}, {"cnn", cnnModel(cnnSpecs(false)), cnnBatch}, {"gpt", tied, gptBatch}} {
		for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
			for _, stages := range stagesOf {
				for _, micro := range microOf {
					one := pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages, Loss: nn.CrossEntropy, Optimizer: sgd,
						ClipNorm: clipNorm, RunID: "replicas", Hang: 10 * time.Second}
					wantLoss, wantW := trainEngineOn(t, c.m, one, c.batchOf)
					for _, r := range []int{1, 2, 4} {
						t.Run(fmt.Sprintf("%s/replicas=%d/%v/stages=%d/micro=%d", c.name, r, sched, stages, micro), func(t *testing.T) {
							cfg := one
							cfg.Replicas, cfg.Hosts = r, hosts
							gotLoss, gotW := trainEngineOn(t, c.m, cfg, c.batchOf)
							if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
								t.Error(why)
							}
						})
					}
				}
			}
		}
	}
}

// TestRemoteReplicasIdle: more replicas than the mini-batch has chunks
// (the GPT's 4 over 8 replicas): the idle replicas' stages still take each
// update's weights, and the bits are those of one replica in one process.
func TestRemoteReplicasIdle(t *testing.T) {
	hosts := workers(t, 2, "")
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Loss: nn.CrossEntropy, Optimizer: sgd,
		ClipNorm: clipNorm, RunID: "idle", Hang: 10 * time.Second}
	wantLoss, wantW := trainEngineOn(t, tied, cfg, gptBatch)
	cfg.Replicas, cfg.Hosts = 8, hosts
	gotLoss, gotW := trainEngineOn(t, tied, cfg, gptBatch)
	if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
		t.Error(why)
	}
}

// TestRemoteReplicasBatchNorm: with batch norm, whose running statistics
// travel with the turn, replicas on two workers give the bits of the same
// replicas in one process (TestReplicasBatchNorm: those of one replica of
// R·M micro-batches).
func TestRemoteReplicasBatchNorm(t *testing.T) {
	hosts := workers(t, 2, "")
	m := cnnModel(cnnSpecs(true))
	for _, c := range []struct{ replicas, micro int }{{2, 1}, {2, 2}, {4, 1}} {
		for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
			cfg := pipeline.Config{Schedule: sched, MicroBatches: c.micro, Stages: 2, Replicas: c.replicas, Loss: nn.CrossEntropy,
				Optimizer: sgd, ClipNorm: clipNorm, RunID: "batchnorm", Hang: 10 * time.Second}
			wantLoss, wantW := trainEngineOn(t, m, cfg, cnnBatch)
			cfg.Hosts = hosts
			gotLoss, gotW := trainEngineOn(t, m, cfg, cnnBatch)
			if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
				t.Errorf("replicas=%d micro=%d %v on hosts: %s", c.replicas, c.micro, sched, why)
			}
		}
	}
}

// TestRemoteReplicasLostWorker: a worker killed under two replicas, one a
// worker (the owner's on the second), fails the next step within 5 s naming the host, as without
// replicas, and the engine closes within bounds.
func TestRemoteReplicasLostWorker(t *testing.T) {
	w0, w1 := startWorker(t, ""), startWorker(t, "")
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Replicas: 2, Loss: nn.CrossEntropy, Optimizer: sgd,
		Hosts: []string{w0.addr, w1.addr}, RunID: "lost", Hang: time.Minute}
	eng, err := pipeline.New(testModel, cfg)
	if err != nil {
		t.Fatal(err)
	}
	x, tg := batch(1)
	if _, err := eng.Step(1, lr(1), x, tg); err != nil {
		t.Fatal(err)
	}
	_ = w1.cmd.Process.Kill()
	_ = w1.cmd.Wait()
	killed := time.Now()
	for step := 2; err == nil && time.Since(killed) < 30*time.Second; step++ {
		_, err = eng.Step(step, lr(step), x, tg)
	}
	took := time.Since(killed)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	// the owner's chain is on the second worker, where the turn ends: the
	// error names the host and the stages it lost (all or those a peer saw go)
	var lost string
	if err != nil {
		_, after, _ := strings.Cut(err.Error(), "lost host "+w1.addr+" (")
		lost, _, _ = strings.Cut(after, ")")
	}
	if !strings.HasPrefix(lost, "stage ") || strings.Contains(lost, "replica") {
		t.Errorf("after the kill: %v, want an error naming %s and the owner's stages", err, w1.addr)
	}
	if took > 5*time.Second {
		t.Errorf("the lost worker was found after %v, want within 5 s", took)
	}
	closed := time.Now()
	if err := eng.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if d := time.Since(closed); d > 10*time.Second {
		t.Errorf("closing took %v", d)
	}
}

// TestRemoteReplicasRestore: an engine of two replicas on workers that
// restores a snapshot taken in one process (as a run resumed after a lost
// worker does) gives every replica the restored weights: it continues with
// nn.Sequential's losses and ends with its weights, bit for bit.
func TestRemoteReplicasRestore(t *testing.T) {
	hosts := workers(t, 2, "")
	wantLoss, wantW := reference(t, 1)
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Loss: nn.CrossEntropy, Optimizer: sgd,
		ClipNorm: clipNorm, RunID: "restore", Hang: 10 * time.Second}
	a, err := pipeline.New(testModel, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cfg.Replicas, cfg.Hosts = 2, hosts
	b, err := pipeline.New(testModel, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for step := 1; step <= steps; step++ {
		eng := a
		if step > steps/2 {
			eng = b
		}
		if step == steps/2+1 {
			if err := a.MoveTo(b); err != nil {
				t.Fatal(err)
			}
		}
		x, tg := batch(step)
		loss, err := eng.Step(step, lr(step), x, tg)
		if err != nil {
			t.Fatal(err)
		}
		if loss != wantLoss[step-1] {
			t.Errorf("step %d: loss %v, nn.Sequential %v", step, loss, wantLoss[step-1])
		}
	}
	w, _, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range wantW {
		if !slices.Equal(w[name].Float32s(), want) {
			t.Errorf("%s differs from nn.Sequential's after the restore", name)
		}
	}
}

// TestRemoteReplicasWire: the replicas are placed on the hosts where they
// send fewer values a step, so two replicas never send much more than one
// chain: a wide model (69k weights, which the turn would send three times
// a step, gradients there and back and weights out: more than the
// activations at the cut) keeps each replica's copy of a stage beside its
// owner, and the turn off the wire; the test model (400 weights) keeps
// each replica's chain on one host, and its activations off the wire.
func TestRemoteReplicasWire(t *testing.T) {
	hosts := workers(t, 2, "")
	wide := pipeline.Model{Specs: []nn.Spec{
		{Type: "linear", Units: 256, Init: nn.TorchDefault}, {Type: "relu"},
		{Type: "linear", Units: 256, Init: nn.TorchDefault}, {Type: "relu"}, {Type: "linear", Units: classes, Init: nn.TorchDefault},
	}, Sample: []int{features}, Seed: seed}
	for _, c := range []struct {
		name string
		m    pipeline.Model
	}{{"wide", wide}, {"narrow", testModel}} {
		sent := func(replicas int) (bytes int64) {
			eng, err := pipeline.New(c.m, pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Replicas: replicas,
				Loss: nn.CrossEntropy, Optimizer: sgd, Hosts: hosts, RunID: fmt.Sprintf("wire-%d", replicas), Hang: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			for step := 1; step <= steps; step++ {
				x, tg := batch(step)
				if _, err := eng.Step(step, lr(step), x, tg); err != nil {
					t.Fatal(err)
				}
			}
			stats, err := eng.Stats(false)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range stats {
				bytes += s.WireBytes
			}
			return bytes
		}
		weights := 0
		for _, l := range layersOf(t, c.m) {
			for _, p := range l.Params() {
				weights += 4 * p.Value.Size()
			}
		}
		one, two := sent(1), sent(2)
		t.Logf("%s: bytes sent over %d steps: one chain %d, two replicas %d; the weights %d bytes", c.name, steps, one, two, weights)
		if two > one+one/10+int64(weights*steps/4) {
			t.Errorf("%s: two replicas sent %d bytes over %d steps, one chain %d (the weights: %d bytes)", c.name, two, steps, one, weights)
		}
	}
}

// frameHeader bounds a data-plane frame's header with the test's names.
const frameHeader = 320

// TestRemoteStepAllocations: a worker allocates nothing the size of a
// tensor in a steady training step: the activations and gradients it
// takes from the data plane land in memory it kept from the step before.
// And the bytes sent a step are the tensors' and a header a frame, within
// 5% (the rest is the control messages: BackwardDone, Update,
// UpdateApplied).
// The MNIST MLP at batch 128 on two workers, whose largest tensors
// crossing are the 128x784 input and the activation at the cut and its
// gradient (128x512: 256 KiB at one micro-batch, 64 KiB at 4).
func TestRemoteStepAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	ws := []*worker{startWorker(t, ""), startWorker(t, "")}
	hosts := []string{ws[0].addr, ws[1].addr}
	for _, micro := range []int{1, 8} {
		eng, err := pipeline.New(mnistMLP(), pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: micro, Stages: 2, Hosts: hosts,
			Loss: nn.CrossEntropy, Optimizer: sgd, RunID: fmt.Sprintf("alloc-%d", micro), Hang: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		step := stepper(t, eng, 128, 784)
		for range 10 { // warm up: arenas, slots and connections reach their steady size
			step()
		}
		const steps = 50
		if _, err := eng.Stats(true); err != nil {
			t.Fatal(err)
		}
		before := []uint64{ws[0].allocated(t), ws[1].allocated(t)}
		for range steps {
			step()
		}
		stats, err := eng.Stats(false)
		if err != nil {
			t.Fatal(err)
		}
		sent := int64(0)
		for _, s := range stats {
			sent += s.WireBytes
		}
		// the input, the activation at the cut and its gradient, the logits
		// and theirs cross, in five frames a micro-batch (whole 32-row
		// chunks: 8 asked of 128 rows are 4)
		micros := min(micro, 128/nn.ChunkRows)
		layers := eng.Plan().Positions[0].Layers
		cut := mnistMLP().Specs[layers[len(layers)-1]&^1].Units
		tensors, frames := int64(4*128*(784+2*cut+2*10)), int64(5*micros)
		over := sent/steps - tensors
		t.Logf("micro-batches %d: %d bytes sent a step for %d bytes of tensors in %d frames: %d more, %d a frame",
			micros, sent/steps, tensors, frames, over, over/frames)
		if over < 0 || over > tensors/20+frames*frameHeader {
			t.Errorf("micro-batches %d: %d bytes sent a step, want the tensors' %d and at most %d a frame", micros, sent/steps, tensors, frameHeader)
		}
		smallest := uint64(128 / micros * cut * 4) // the activation's bytes a micro-batch
		for i, w := range ws {
			per := (w.allocated(t) - before[i]) / steps
			t.Logf("micro-batches %d: worker %d allocated %d bytes a step, %d a micro-batch; a micro-batch's activation is %d bytes",
				micros, i, per, per/uint64(micros), smallest)
			if per/uint64(micros) >= smallest/4 {
				t.Errorf("micro-batches %d: worker %d allocated %d bytes a micro-batch, near the activation's %d", micros, i, per/uint64(micros), smallest)
			}
		}
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRemoteReplicaTurnParts: a model whose middle layers each pass
// actors' turn bucket, so that on workers the turn goes in parts and the
// replicas' weight gradients overlap: the bits of one chain in one
// process, for 2 and 4 replicas, in one process (one part) and on two
// workers.
func TestRemoteReplicaTurnParts(t *testing.T) {
	hosts := workers(t, 2, "")
	wide := pipeline.Model{Specs: []nn.Spec{
		{Type: "linear", Units: 576, Init: nn.TorchDefault}, {Type: "relu"},
		{Type: "linear", Units: 576, Init: nn.TorchDefault}, {Type: "relu"},
		{Type: "linear", Units: 576, Init: nn.TorchDefault}, {Type: "relu"}, {Type: "linear", Units: classes, Init: nn.TorchDefault},
	}, Sample: []int{features}, Seed: seed}
	for _, c := range []struct {
		sched         actors.Schedule
		stages, micro int
		split         bool
	}{{actors.Sequential, 1, 1, false}, {actors.OneFOneB, 1, 2, true}, {actors.OneFOneB, 2, 2, false}} {
		one := pipeline.Config{Schedule: c.sched, MicroBatches: c.micro, Stages: c.stages, SplitBackward: c.split, Loss: nn.CrossEntropy,
			Optimizer: sgd, ClipNorm: clipNorm, RunID: "parts", Hang: 10 * time.Second}
		wantLoss, wantW := trainEngineOn(t, wide, one, batch)
		for _, r := range []int{2, 4} {
			for _, h := range [][]string{nil, hosts} {
				cfg := one
				cfg.Replicas, cfg.Hosts = r, h
				gotLoss, gotW := trainEngineOn(t, wide, cfg, batch)
				if why := within(gotLoss, wantLoss, gotW, wantW, 0); why != "" {
					t.Errorf("%v stages=%d micro=%d split=%v replicas=%d hosts=%v: %s", c.sched, c.stages, c.micro, c.split, r, h, why)
				}
			}
		}
	}
}
