package pipeline_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/internal/leakcheck"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/pipeline/remote"
	"github.com/pipetrain/pipetrain/tensor"
)

func TestMain(m *testing.M) {
	if listen := os.Getenv(workerEnv); listen != "" {
		os.Exit(serveWorker(listen, os.Getenv(workerTokenEnv)))
	}
	code := m.Run()
	remote.CloseEndpoint() // the process's endpoint for workers, if a test started it
	os.Exit(leakcheck.After(code))
}

// passLayer is an identity layer for tests: it caches nothing but counts, can
// spin to cost a fixed time (or sleep it, standing for a device of its own),
// panic at a step, or block until released.
type passLayer struct {
	fwd, bwd time.Duration
	sleep    bool
	panicAt  int
	nanAt    int
	block    chan struct{}
	blockAt  int
	inFlight map[int]bool
}

func newPass() *passLayer {
	return &passLayer{inFlight: map[int]bool{}, panicAt: -1, nanAt: -1, blockAt: -1}
}

func (l *passLayer) Kind() string       { return "pass" }
func (l *passLayer) Params() []nn.Param { return nil }
func (l *passLayer) ZeroGrad()          {}
func (l *passLayer) InFlight() int      { return len(l.inFlight) }
func (l *passLayer) Reset()             { clear(l.inFlight) }

func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func (l *passLayer) cost(d time.Duration) {
	if l.sleep {
		time.Sleep(d)
		return
	}
	spin(d)
}

func (l *passLayer) Forward(p nn.Pass, x *tensor.Tensor) *tensor.Tensor {
	if l.panicAt == p.Step && p.Train {
		panic("kernel exploded")
	}
	if l.block != nil && l.blockAt == p.Step {
		<-l.block
	}
	l.cost(l.fwd)
	if p.Train {
		l.inFlight[p.Micro] = true
	}
	y := p.Arena.Like(x) // counted in the stage's activation bytes
	copy(y.Data32(), x.Data32())
	if l.nanAt == p.Step && p.Train {
		y.Data32()[0] = float32(math.NaN())
	}
	return y
}

func (l *passLayer) Backward(p nn.Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	delete(l.inFlight, p.Micro)
	l.cost(l.bwd)
	if !needDX {
		return nil
	}
	return dy.Clone()
}

// passModel is a linear layer followed by n pass layers.
func passModel(t testing.TB, n int) ([]nn.Layer, []*passLayer) {
	lin, err := nn.NewLinear(tensor.Float32, features, classes, nn.XavierUniform, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	layers := []nn.Layer{lin}
	var passes []*passLayer
	for range n {
		p := newPass()
		layers = append(layers, p)
		passes = append(passes, p)
	}
	return layers, passes
}

// newEngine starts an engine of m, with the tests' loss and optimizer
// unless cfg names one.
func newEngine(t testing.TB, m pipeline.Model, cfg pipeline.Config) *pipeline.Engine {
	t.Helper()
	return started(t)(pipeline.New(m, testConfig(cfg)))
}

// newPassEngine is newEngine for layers built by hand.
func newPassEngine(t testing.TB, layers []nn.Layer, cfg pipeline.Config) *pipeline.Engine {
	t.Helper()
	return started(t)(pipeline.NewWithLayers(layers, features, testConfig(cfg)))
}

func testConfig(cfg pipeline.Config) pipeline.Config {
	if cfg.Optimizer.Kind == "" {
		cfg.Optimizer = sgd
	}
	cfg.Loss = nn.CrossEntropy
	return cfg
}

// started fails the test when an engine did not start.
func started(t testing.TB) func(*pipeline.Engine, error) *pipeline.Engine {
	return func(eng *pipeline.Engine, err error) *pipeline.Engine {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
}

// TestEveryShapeCompletes runs every (stages, micro-batches) pair with p <= 6
// and m <= 8, m < p included, under every schedule: nothing hangs.
func TestEveryShapeCompletes(t *testing.T) {
	for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
		for p := 1; p <= 6; p++ {
			for m := 1; m <= 8; m++ {
				layers, _ := passModel(t, 5)
				eng := newPassEngine(t, layers, pipeline.Config{Schedule: sched, Stages: p, MicroBatches: m, Hang: 5 * time.Second})
				if eng.Positions() != p {
					t.Errorf("stages=%d built %d positions", p, eng.Positions())
				}
				for step := 1; step <= 2; step++ {
					x, tg := batch(step)
					if _, err := eng.Step(step, 0.01, x, tg); err != nil {
						t.Errorf("%v p=%d m=%d step %d: %v", sched, p, m, step, err)
					}
				}
				if err := eng.Close(); err != nil {
					t.Error(err)
				}
			}
		}
	}
}

// TestOneFOneBMemory checks that under 1F1B stage s of p holds at most
// min(p-s, m) micro-batches' activations, and under GPipe all m, and that
// its peak activation bytes are those micro-batches' outputs.
func TestOneFOneBMemory(t *testing.T) {
	const p = 4
	for _, m := range []int{2, 4, 8} {
		for _, sched := range []actors.Schedule{actors.OneFOneB, actors.GPipe} {
			layers, passes := passModel(t, p-1)
			for _, l := range passes {
				l.fwd = 200 * time.Microsecond // let micro-batches pile up if they can
			}
			eng := newPassEngine(t, layers, pipeline.Config{Schedule: sched, MicroBatches: m})
			for step := 1; step <= 3; step++ {
				x, tg := batch(step)
				if _, err := eng.Step(step, 0.01, x, tg); err != nil {
					t.Fatal(err)
				}
			}
			stats, err := eng.Stats(true)
			if err != nil {
				t.Fatal(err)
			}
			for _, info := range eng.Stages() {
				if info.Position == 0 {
					continue // the linear layer caches; pass layers count for the others
				}
				got := stats[info.Actor].MaxInFlight
				want := min(p-info.Position, m)
				if sched == actors.GPipe {
					want = m
				}
				if got > want || sched == actors.GPipe && got != want {
					t.Errorf("%v m=%d: stage %d held %d micro-batches at once, want at most %d", sched, m, info.Position, got, want)
				}
				perMicro := int64(rows / m * classes * 4) // a pass layer's float32 output
				if b := stats[info.Actor].PeakActivationBytes; b != int64(got)*perMicro {
					t.Errorf("%v m=%d: stage %d peaked at %d activation bytes, want %d micro-batches of %d", sched, m, info.Position, b, got, perMicro)
				}
			}
			eng.Close()
		}
	}
}

// TestFailureStopsCleanly makes a kernel panic, and another produce NaN: the
// step fails with an error naming the layer and step, later steps fail too, and
// Close leaves no goroutine behind (TestMain checks with goleak).
func TestFailureStopsCleanly(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*passLayer)
		want []string
	}{
		{"panic", func(l *passLayer) { l.panicAt = 3 }, []string{"layer 2 (pass) forward at step 3", "panicked", "kernel exploded"}},
		{"nan", func(l *passLayer) { l.nanAt = 3 }, []string{"layer 2 (pass)", "non-finite", "step 3"}},
	} {
		for _, sched := range []actors.Schedule{actors.Sequential, actors.GPipe, actors.OneFOneB} {
			layers, passes := passModel(t, 3)
			tc.set(passes[1])
			eng := newPassEngine(t, layers, pipeline.Config{Schedule: sched, MicroBatches: 4})
			var err error
			for step := 1; step <= 3 && err == nil; step++ {
				x, tg := batch(step)
				_, err = eng.Step(step, 0.01, x, tg)
				if step < 3 && err != nil {
					t.Fatalf("%s %v: step %d failed early: %v", tc.name, sched, step, err)
				}
			}
			if err == nil {
				t.Fatalf("%s %v: step 3 succeeded", tc.name, sched)
			}
			if strings.Contains(err.Error(), "goroutine ") || strings.Contains(err.Error(), ".go:") {
				t.Errorf("%s %v: the error carries a stack trace: %q", tc.name, sched, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s %v: error %q does not mention %q", tc.name, sched, err, w)
				}
			}
			x, tg := batch(4)
			if _, err := eng.Step(4, 0.01, x, tg); !errors.Is(err, err) || err == nil {
				t.Errorf("%s %v: a step after the failure succeeded", tc.name, sched)
			}
			if err := eng.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestWatchdog blocks a kernel: the watchdog fails the step within its limit.
func TestWatchdog(t *testing.T) {
	layers, passes := passModel(t, 2)
	passes[0].block, passes[0].blockAt = make(chan struct{}), 2
	eng := newPassEngine(t, layers, pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2, Hang: 200 * time.Millisecond})
	x, tg := batch(1)
	if _, err := eng.Step(1, 0.01, x, tg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	x, tg = batch(2)
	_, err := eng.Step(2, 0.01, x, tg)
	if err == nil || !strings.Contains(err.Error(), "no message moved") || !strings.Contains(err.Error(), "stage 1") {
		t.Fatalf("step 2 with a stuck kernel: %v, want a hang naming stage 1", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the watchdog took %v", d)
	}
	close(passes[0].block) // let the stuck kernel return so Close can stop it
	if err := eng.Close(); err != nil {
		t.Error(err)
	}
}

// TestEvaluateMatchesSequential compares evaluation through the actors with
// nn.Sequential.Evaluate, chunked the same way: in chunks of 5 rows, and of
// 1, more chunks than the coordinator lets out at once.
// With an evaluation window the chunks' outputs live in arenas, reused
// chunk after chunk and shared with no training step.
func TestEvaluateMatchesSequential(t *testing.T) {
	seq := &nn.Sequential{Layers: layersOf(t, testModel), Loss: nn.CrossEntropy}
	x, tg := batch(9)
	for _, rows := range []int{5, 1} {
		wantLoss, wantAcc := seq.Evaluate(x, tg, rows)
		for _, stages := range []int{0, 2} {
			for _, window := range []int{0, 1, 3} {
				eng := newEngine(t, testModel, pipeline.Config{Schedule: actors.OneFOneB, Stages: stages, MicroBatches: 2, EvalWindow: window})
				loss, acc, err := eng.Evaluate(x, tg, rows)
				if err != nil {
					t.Fatal(err)
				}
				if loss != wantLoss || acc != wantAcc {
					t.Errorf("stages=%d, window=%d, chunks of %d rows: Evaluate = %v, %v; nn.Sequential gives %v, %v", stages, window, rows, loss, acc, wantLoss, wantAcc)
				}
				eng.Close()
			}
		}
	}
}

// TestGPTEvaluateBetweenSteps evaluates a GPT between its training steps in
// arenas: the losses and weights are those of training alone, and each
// evaluation those of nn.Sequential on the same weights.
func TestGPTEvaluateBetweenSteps(t *testing.T) {
	wantLoss, wantW := referenceGPT(t, tied, 2)
	x, tg := gptBatch(100)
	for _, sched := range []actors.Schedule{actors.Sequential, actors.OneFOneB} {
		for _, window := range []int{1, 2} {
			t.Run(fmt.Sprintf("%v/window=%d", sched, window), func(t *testing.T) {
				cfg := pipeline.Config{Schedule: sched, MicroBatches: 2, Stages: 2, Loss: nn.CrossEntropy, Optimizer: sgd,
					ClipNorm: clipNorm, EvalWindow: window}
				eng := newEngine(t, tied, cfg)
				defer eng.Close()
				var losses []float64
				for step := 1; step <= len(wantLoss); step++ {
					bx, bt := gptBatch(step)
					l, err := eng.Step(step, lr(step), bx, bt)
					if err != nil {
						t.Fatal(err)
					}
					losses = append(losses, l)
					got, _, err := eng.Evaluate(x, tg, 3)
					if err != nil {
						t.Fatal(err)
					}
					w, _, err := eng.Snapshot()
					if err != nil {
						t.Fatal(err)
					}
					seq := &nn.Sequential{Layers: layersOf(t, tied), Loss: nn.CrossEntropy}
					for _, p := range seq.Params() {
						p.Value.CopyFrom(w[p.Name])
					}
					if want, _ := seq.Evaluate(x, tg, 3); got != want {
						t.Errorf("after step %d: Evaluate = %v; nn.Sequential gives %v", step, got, want)
					}
				}
				if why := within(losses, wantLoss, weightsOf(t, eng), wantW, 0); why != "" {
					t.Error(why)
				}
			})
		}
	}
}

// TestSnapshotRestoreContinues restores a snapshot into a fresh engine and
// checks that it continues exactly as the original; ReadState lends the
// same weights and state, and a restore from them continues the same way.
func TestSnapshotRestoreContinues(t *testing.T) {
	cfg := pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 3, Shards: []int{2}, Optimizer: optim.Spec{Kind: "adam", Betas: [2]float64{0.9, 0.999}, Eps: 1e-8}}
	a := newEngine(t, testModel, cfg)
	defer a.Close()
	for step := 1; step <= 3; step++ {
		x, tg := batch(step)
		if _, err := a.Step(step, lr(step), x, tg); err != nil {
			t.Fatal(err)
		}
	}
	w, st, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := w["0.weight"].Shape(); got[0] != 16 || got[1] != features {
		t.Fatalf("snapshot joins the shards of 0.weight into shape %v, want [16 %d]", got, features)
	}
	b := newEngine(t, testModel, cfg)
	defer b.Close()
	if err := b.Restore(w, st); err != nil {
		t.Fatal(err)
	}
	c := newEngine(t, testModel, cfg)
	defer c.Close()
	err = a.ReadState(func(lw map[string]*tensor.Tensor, lst optim.State) error {
		if len(lw) != len(w) || len(lst.Tensors) != len(st.Tensors) || len(st.Tensors) == 0 || lst.Step != st.Step {
			t.Errorf("ReadState gives %d weights and %d state tensors at step %d; Snapshot %d, %d at step %d", len(lw), len(lst.Tensors), lst.Step, len(w), len(st.Tensors), st.Step)
		}
		for name, v := range w {
			if lw[name] == nil || !slices.Equal(lw[name].Float64s(), v.Float64s()) {
				t.Errorf("ReadState's %s differs from Snapshot's", name)
			}
		}
		for name, v := range st.Tensors {
			if lst.Tensors[name] == nil || !slices.Equal(lst.Tensors[name].Float64s(), v.Float64s()) {
				t.Errorf("ReadState's %s differs from Snapshot's", name)
			}
		}
		return c.Restore(lw, lst)
	})
	if err != nil {
		t.Fatal(err)
	}
	for step := 4; step <= 6; step++ {
		x, tg := batch(step)
		la, err := a.Step(step, lr(step), x, tg)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := b.Step(step, lr(step), x.Clone(), tg)
		if err != nil {
			t.Fatal(err)
		}
		lc, err := c.Step(step, lr(step), x.Clone(), tg)
		if err != nil {
			t.Fatal(err)
		}
		if la != lb || la != lc {
			t.Errorf("step %d: restored engines give %v (Snapshot) and %v (ReadState), original %v", step, lb, lc, la)
		}
	}
}

// TestActorsCounters: after steps every actor has taken messages, none has
// any left waiting, and the stages were busy.
func TestActorsCounters(t *testing.T) {
	eng := newEngine(t, testModel, pipeline.Config{Schedule: actors.OneFOneB, MicroBatches: 2})
	defer eng.Close()
	for step := 1; step <= 3; step++ {
		x, tg := batch(step)
		if _, err := eng.Step(step, lr(step), x, tg); err != nil {
			t.Fatal(err)
		}
	}
	as := eng.Actors()
	if len(as) != len(eng.Stages())+3 {
		t.Fatalf("%d actors for %d stages", len(as), len(eng.Stages()))
	}
	for i, a := range as {
		if a.Messages == 0 || a.Mailbox != 0 {
			t.Errorf("%s: %d messages taken, %d waiting; want some, and none", a.Name, a.Messages, a.Mailbox)
		}
		if i < len(eng.Stages()) && (a.Busy <= 0 || a.Name != fmt.Sprintf("stage %d", i)) {
			t.Errorf("actor %d: %q busy %v", i, a.Name, a.Busy)
		}
	}
}

// TestGEMMBudgets: with two cores, stage actors that run at once get one
// each; a fixed budget gives every stage the same, and with one actor busy
// at a time each gets every core.
func TestGEMMBudgets(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, c := range []struct {
		name    string
		sched   actors.Schedule
		micro   int
		threads int
		want    []int
	}{
		{"stages at once", actors.OneFOneB, 2, 0, []int{1, 1, 1}},
		{"fixed budget", actors.OneFOneB, 2, 1, []int{1, 1, 1}},
		{"sequential", actors.Sequential, 2, 0, []int{2, 2, 2}},
		{"one micro-batch", actors.OneFOneB, 1, 0, []int{2, 2, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng, err := pipeline.New(mlp(1024, 10), pipeline.Config{Schedule: c.sched, MicroBatches: c.micro, Stages: 0,
				GEMMThreads: c.threads, Loss: nn.CrossEntropy, Optimizer: optim.Spec{Kind: "sgd"}})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			var got []int
			for _, s := range eng.Stages() {
				got = append(got, s.Threads)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("stage thread budgets %v, want %v", got, c.want)
			}
		})
	}
}
