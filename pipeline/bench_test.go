package pipeline_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// mnistMLP is 784-512-256-10 with ReLU, the MNIST recipe.
func mnistMLP() pipeline.Model { return mlp(512, 256, 10) }

// mlp is a float32 MLP on 784 inputs with the given widths and a ReLU after
// each hidden layer.
func mlp(widths ...int) pipeline.Model {
	m := pipeline.Model{Sample: []int{784}, Seed: 1}
	for i, out := range widths {
		m.Specs = append(m.Specs, nn.Spec{Type: "linear", Units: out, Init: nn.XavierUniform})
		if i+1 < len(widths) {
			m.Specs = append(m.Specs, nn.Spec{Type: "relu"})
		}
	}
	return m
}

// smallCNN is a float32 CNN on 1×28×28 images:
// conv(1→8)-ReLU-maxpool-conv(8→16)-batchnorm-ReLU-avgpool-flatten-linear.
var smallCNN = pipeline.Model{Specs: []nn.Spec{
	{Type: "conv2d", Channels: 8, Kernel: 3, Padding: 1, Init: nn.HeUniform}, {Type: "relu"},
	{Type: "maxpool2d", Kernel: 2},
	{Type: "conv2d", Channels: 16, Kernel: 3, Padding: 1, Init: nn.HeUniform}, {Type: "batchnorm"}, {Type: "relu"},
	{Type: "avgpool2d", Kernel: 2},
	{Type: "flatten"}, {Type: "linear", Units: 10, Init: nn.XavierUniform},
}, Sample: []int{1, 28, 28}, Seed: 1}

// mnistEngine builds the MNIST MLP pipeline and returns it with a step
// function that trains on one fixed random mini-batch of 128 rows.
func mnistEngine(tb testing.TB, sched actors.Schedule, micro, stages int) (*pipeline.Engine, func()) {
	return engineOn(tb, mnistMLP(), sched, micro, stages)
}

// engineOn is mnistEngine for other models taking 784 features.
func engineOn(tb testing.TB, m pipeline.Model, sched actors.Schedule, micro, stages int, split ...bool) (*pipeline.Engine, func()) {
	opt := optim.Spec{Kind: "sgd", Momentum: 0.9}
	eng, err := pipeline.New(m, pipeline.Config{Schedule: sched, MicroBatches: micro, Stages: stages, SplitBackward: len(split) > 0 && split[0],
		Loss: nn.CrossEntropy, Optimizer: opt})
	if err != nil {
		tb.Fatal(err)
	}
	return eng, stepper(tb, eng, 128, 784)
}

// stepper returns a function that runs the next training step of eng on
// rows random samples of features values and random labels of 10 classes.
func stepper(tb testing.TB, eng *pipeline.Engine, rows, features int) func() {
	rng := rand.New(rand.NewPCG(2, 2))
	x := tensor.RandUniform(rng, tensor.Float32, 0, 1, rows, features)
	labels := make([]int, rows)
	for i := range labels {
		labels[i] = rng.IntN(10)
	}
	step := 0
	return func() {
		step++
		if _, err := eng.Step(step, 0.01, x, nn.Target{Labels: labels}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkTrainStep times one optimizer step of the MNIST MLP at batch 128
// (SGD with momentum) through the actor pipeline, reporting samples/s and the
// allocations of a whole step, protoactor's envelopes included.
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range []struct {
		sched  actors.Schedule
		micro  int
		stages int
	}{{actors.Sequential, 1, 1}, {actors.Sequential, 1, 0}, {actors.OneFOneB, 2, 0}, {actors.OneFOneB, 4, 2}} {
		b.Run(fmt.Sprintf("%v/micro=%d/stages=%d", c.sched, c.micro, c.stages), func(b *testing.B) {
			eng, step := mnistEngine(b, c.sched, c.micro, c.stages)
			defer eng.Close()
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
			b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// BenchmarkReplicaStep times a step of the MNIST MLP at batch 128 under
// sequential, one stage a replica, with 1 and 2 replicas:
// go test -run '^$' -bench ReplicaStep -benchtime 300x ./pipeline/
func BenchmarkReplicaStep(b *testing.B) {
	for _, r := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", r), func(b *testing.B) {
			eng, err := pipeline.New(mnistMLP(), pipeline.Config{Schedule: actors.Sequential, MicroBatches: 1, Stages: 1, Replicas: r,
				Loss: nn.CrossEntropy, Optimizer: optim.Spec{Kind: "sgd", Momentum: 0.9}})
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			step := stepper(b, eng, 128, 784)
			for b.Loop() {
				step()
			}
			b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// mnistCNN is the CNN of configs/cnn.toml.
var mnistCNN = pipeline.Model{Specs: []nn.Spec{
	{Type: "conv2d", Channels: 32, Kernel: 3, Padding: 1, Init: nn.TorchDefault}, {Type: "relu"}, {Type: "maxpool2d", Kernel: 2},
	{Type: "conv2d", Channels: 64, Kernel: 3, Padding: 1, Init: nn.TorchDefault}, {Type: "relu"}, {Type: "maxpool2d", Kernel: 2},
	{Type: "flatten"}, {Type: "linear", Units: 128, Init: nn.TorchDefault}, {Type: "relu"},
	{Type: "linear", Units: 10, Init: nn.TorchDefault},
}, Sample: []int{1, 28, 28}, Seed: 1}

// BenchmarkMNISTCNNStep times one step of configs/cnn.toml's CNN at batch
// 128 as one stage: GOMAXPROCS=1 go test -run '^$' -bench MNISTCNNStep ./pipeline/
func BenchmarkMNISTCNNStep(b *testing.B) {
	eng, step := engineOn(b, mnistCNN, actors.Sequential, 1, 1)
	defer eng.Close()
	for b.Loop() {
		step()
	}
	b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkCNNStep is BenchmarkTrainStep for smallCNN.
func BenchmarkCNNStep(b *testing.B) {
	for _, c := range []struct {
		sched         actors.Schedule
		micro, stages int
		split         bool
	}{{actors.Sequential, 1, 1, false}, {actors.OneFOneB, 2, 0, false}, {actors.GPipe, 4, 3, false}, {actors.OneFOneB, 4, 0, true}} {
		b.Run(fmt.Sprintf("%v/micro=%d/stages=%d/split=%v", c.sched, c.micro, c.stages, c.split), func(b *testing.B) {
			eng, step := engineOn(b, smallCNN, c.sched, c.micro, c.stages, c.split)
			defer eng.Close()
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
			b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// TestStepAllocations counts the allocations of a steady training step of the
// MNIST MLP, and of smallCNN, on every goroutine, and attributes each to
// pipetrain's code or to protoactor's by the nearest caller of either on its
// stack (the memory profile records every allocation while it runs). Pipetrain's own must be
// zero: activations, gradients, messages and bookkeeping are all reused.
// protoactor's (mailbox scheduling, futures) are reported, and so are the Go
// runtime's own structures (a channel wait's sudog after a GC emptied the
// runtime's cache, a goroutine's descriptor), which no code of ours holds.
//
// A window of steps may still see a one-time allocation when outside load
// makes more GEMM calls overlap than ever before (a new workspace for the
// GEMM pool). So up to three windows run: an allocation made every step shows
// in all of them and fails the test; a one-time one does not repeat.
func TestStepAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	for _, c := range []struct {
		sched          actors.Schedule
		micro, stages  int
		dropout, split bool
		cnn            bool
	}{{actors.Sequential, 1, 1, false, false, false}, {actors.Sequential, 1, 0, false, false, false}, {actors.OneFOneB, 2, 0, false, false, false},
		{actors.OneFOneB, 4, 2, false, false, false}, {actors.GPipe, 4, 3, false, false, false}, {actors.OneFOneB, 2, 0, true, false, false},
		{actors.OneFOneB, 4, 0, false, true, false}, {actors.OneFOneB, 4, 2, true, true, false},
		{actors.Sequential, 1, 1, false, false, true}, {actors.OneFOneB, 2, 0, false, false, true},
		{actors.GPipe, 4, 3, false, false, true}, {actors.OneFOneB, 4, 0, false, true, true}} {
		model := "mlp"
		if c.cnn {
			model = "cnn"
		}
		t.Run(fmt.Sprintf("%s/%v/micro=%d/stages=%d/dropout=%v/split=%v", model, c.sched, c.micro, c.stages, c.dropout, c.split), func(t *testing.T) {
			m := mnistMLP()
			if c.cnn {
				m = smallCNN
			}
			if c.dropout { // 784-512-ReLU-Dropout-256-ReLU-Dropout-10
				d := nn.Spec{Type: "dropout", P: 0.2}
				l := m.Specs
				m.Specs = []nn.Spec{l[0], l[1], d, l[2], l[3], d, l[4]}
			}
			eng, step := engineOn(t, m, c.sched, c.micro, c.stages, c.split)
			defer eng.Close()
			for range 5 { // warm up: arenas, buffers and helpers reach their steady size
				step()
			}
			const steps = 20
			var report string
			for window := 1; window <= 3; window++ {
				before := allocSites()
				for range steps {
					step()
				}
				ours, theirs, rt, where := diffSites(before, allocSites())
				t.Logf("window %d, per step: %.1f allocations by pipetrain, %.1f by protoactor, %.2f by the Go runtime for itself",
					window, float64(ours)/steps, float64(theirs)/steps, float64(rt)/steps)
				if ours == 0 {
					return
				}
				report += fmt.Sprintf("window %d: pipetrain allocated %d times in %d steps; by site:\n%s", window, ours, steps, where)
			}
			t.Errorf("pipetrain allocates in every window of steps, want 0:\n%s", report)
		})
	}
}

// allocSites returns the allocation count of every stack in the memory profile.
func allocSites() map[[32]uintptr]int64 {
	runtime.GC()
	runtime.GC() // the profile is as of the last completed cycle
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			break
		}
	}
	sites := map[[32]uintptr]int64{}
	for _, r := range recs[:n] {
		sites[r.Stack0] += r.AllocObjects
	}
	return sites
}

// runtimeOwn are the runtime's functions whose allocations are its own
// bookkeeping, whatever code they run for: goroutine and wait structures,
// and the caches of type assertions and interface switches, which the
// runtime fills at random, about once in a thousand misses, until they hold
// every type a site sees (so a site in pipetrain's code may show one late,
// more often on a busy machine).
var runtimeOwn = map[string]bool{
	"runtime.acquireSudog": true, "runtime.malg": true,
	"runtime.buildTypeAssertCache": true, "runtime.buildInterfaceSwitchCache": true,
}

// diffSites sorts the allocations made between two profiles into pipetrain's
// and protoactor's, by the first frame of either module up the stack, and
// describes pipetrain's sites.
func diffSites(before, after map[[32]uintptr]int64) (ours, theirs, rt int64, where string) {
	const mod = "github.com/pipetrain/pipetrain/"
	for stack, n := range after {
		n -= before[stack]
		if n <= 0 {
			continue
		}
		frames := runtime.CallersFrames(stack[:])
		for {
			f, more := frames.Next()
			if runtimeOwn[f.Function] {
				rt += n
				break
			}
			if strings.Contains(f.Function, "asynkron/protoactor-go") {
				theirs += n
				break
			}
			if strings.HasPrefix(f.Function, mod) && !strings.HasPrefix(f.Function, mod+"pipeline_test") {
				ours += n
				where += fmt.Sprintf("  %d at %s (%s:%d)\n", n, f.Function, f.File, f.Line)
				break
			}
			if !more {
				break
			}
		}
	}
	return ours, theirs, rt, where
}

// TestRepeatedStepNumbers checks that a caller may number steps as it likes:
// the actors tell steps apart by the coordinator's own count, so the same
// number twice runs two whole steps, each reusing the last one's buffers.
func TestRepeatedStepNumbers(t *testing.T) {
	for _, c := range []struct {
		sched         actors.Schedule
		micro, stages int
	}{{actors.Sequential, 1, 1}, {actors.OneFOneB, 2, 0}, {actors.GPipe, 4, 2}} {
		t.Run(fmt.Sprintf("%v/micro=%d/stages=%d", c.sched, c.micro, c.stages), func(t *testing.T) {
			opt := optim.Spec{Kind: "sgd", Momentum: 0.9}
			eng, err := pipeline.New(mnistMLP(), pipeline.Config{Schedule: c.sched, MicroBatches: c.micro, Stages: c.stages,
				Loss: nn.CrossEntropy, Optimizer: opt, Hang: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			rng := rand.New(rand.NewPCG(5, 5))
			x := tensor.RandUniform(rng, tensor.Float32, 0, 1, 64, 784)
			labels := make([]int, 64)
			for i := range labels {
				labels[i] = rng.IntN(10)
			}
			var losses []float64
			for range 4 {
				loss, err := eng.Step(7, 0.05, x, nn.Target{Labels: labels})
				if err != nil {
					t.Fatalf("step numbered 7 again: %v", err)
				}
				losses = append(losses, loss)
			}
			// Each call is a real step on the same batch: the loss falls.
			if !(losses[3] < losses[0]) {
				t.Errorf("losses %v: want the fourth below the first", losses)
			}
		})
	}
}

// gptModel is configs/shakespeare-char.toml's GPT: blocks transformer
// blocks of width dim and heads heads over tokens characters of a
// vocabulary of 65.
func gptModel(blocks, dim, heads, tokens int) pipeline.Model {
	specs := []nn.Spec{{Type: "embedding", Dim: dim, Vocab: 65, Init: nn.GPT}}
	for range blocks {
		specs = append(specs, nn.Spec{Type: "transformer_block", Heads: heads, Init: nn.GPT})
	}
	specs = append(specs, nn.Spec{Type: "layernorm"}, nn.Spec{Type: "linear", Units: 65, Init: nn.GPT})
	return pipeline.Model{Specs: specs, Sample: []int{tokens}, Seed: 1}
}

// BenchmarkGPTStep times a training step of the recipe's GPT (4 blocks,
// width 128, 4 heads, context 64, batch 12, AdamW) and of the larger one
// (6 blocks, width 192, 6 heads, context 128, batch 32) in each layout: one
// stage actor ("seq"), or stage actors balanced over S stages (0: an actor
// per layer) under GPipe or 1F1B with M micro-batches ("gpipe-S-M",
// "1f1b-S-M", "-split" with split_backward), or under the zero-bubble
// and interleaved schedules ("zbh1-S-M", "zbv-S-M", "interleaved-S-M-c2"
// with 2 chunks a stage; "-opt" with optimistic clipping, whose share of
// steps the norm clipped it reports; the steps clip at a norm of 1, and
// -gpt.warm takes untimed steps first); GOMAXPROCS sets the cores:
// GOMAXPROCS=1 go test -run '^$' -bench 'GPTStep/recipe/seq' ./pipeline/
func BenchmarkGPTStep(b *testing.B) {
	type layout struct {
		name          string
		sched         actors.Schedule
		stages, micro int
		split         bool
		chunks        int
		optimistic    bool
	}
	layouts := []layout{{"seq", actors.Sequential, 1, 1, false, 1, false}}
	for _, st := range []int{0, 2, 3} {
		for _, m := range []int{2, 4, 8, 16} {
			for _, split := range []bool{false, true} {
				sfx := map[bool]string{true: "-split"}[split]
				layouts = append(layouts, layout{fmt.Sprintf("gpipe-%d-%d%s", st, m, sfx), actors.GPipe, st, m, split, 1, false},
					layout{fmt.Sprintf("1f1b-%d-%d%s", st, m, sfx), actors.OneFOneB, st, m, split, 1, false})
			}
			layouts = append(layouts, layout{fmt.Sprintf("zbh1-%d-%d", st, m), actors.ZBH1, st, m, true, 1, false},
				layout{fmt.Sprintf("zbh1-%d-%d-opt", st, m), actors.ZBH1, st, m, true, 1, true},
				layout{fmt.Sprintf("interleaved-%d-%d-c2", st, m), actors.Interleaved, st, m, false, 2, false},
				layout{fmt.Sprintf("interleaved-%d-%d-c2-split", st, m), actors.Interleaved, st, m, true, 2, false},
				layout{fmt.Sprintf("zbv-%d-%d", st, m), actors.ZBV, st, m, true, 2, false},
				layout{fmt.Sprintf("zbv-%d-%d-opt", st, m), actors.ZBV, st, m, true, 2, true})
		}
	}
	for _, c := range []struct {
		name                              string
		blocks, dim, heads, tokens, batch int
	}{{"recipe", 4, 128, 4, 64, 12}, {"large", 6, 192, 6, 128, 32}} {
		for _, l := range layouts {
			if c.batch%l.micro != 0 {
				continue
			}
			b.Run(c.name+"/"+l.name, func(b *testing.B) {
				benchGPT(b, gptModel(c.blocks, c.dim, c.heads, c.tokens), c.batch, c.tokens,
					pipeline.Config{Schedule: l.sched, MicroBatches: l.micro, Stages: l.stages, SplitBackward: l.split, Chunks: l.chunks, OptimisticClip: l.optimistic})
			})
		}
	}
}

// gptWarm is how many untimed steps BenchmarkGPTStep takes first. The
// batch is the same every step, so the model learns it and its gradient
// norm falls: after about 60 steps of the large model it stays under the
// clipping bound of 1, as real training's does past its first hundred or
// two, and an optimistic update is kept rather than redone (clipped/step).
var gptWarm = flag.Int("gpt.warm", 0, "untimed steps before BenchmarkGPTStep times any")

// benchGPT times the steps of a GPT under cfg on batch random windows.
func benchGPT(b *testing.B, m pipeline.Model, batch, tokens int, cfg pipeline.Config) {
	cfg.Loss, cfg.ClipNorm = nn.CrossEntropy, 1
	cfg.Optimizer = optim.Spec{Kind: "adamw", Betas: [2]float64{0.9, 0.99}, Eps: 1e-8, WeightDecay: 0.1, Decay: "matrices"}
	eng, err := pipeline.New(m, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	rng := rand.New(rand.NewPCG(2, 2))
	x := tensor.Zeros(tensor.Float32, batch, tokens)
	labels := make([]int, batch*tokens)
	for i := range labels {
		x.Data32()[i] = float32(rng.IntN(65))
		labels[i] = rng.IntN(65)
	}
	step, rollbacks := 0, 0
	for range *gptWarm {
		step++
		if _, err := eng.Step(step, 1e-3, x, nn.Target{Labels: labels, PerRow: tokens}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		step++
		if _, err := eng.Step(step, 1e-3, x, nn.Target{Labels: labels, PerRow: tokens}); err != nil {
			b.Fatal(err)
		}
		if eng.Rollbacks() > 0 {
			rollbacks++
		}
	}
	b.ReportMetric(float64(batch*tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	if cfg.OptimisticClip {
		b.ReportMetric(float64(rollbacks)/float64(b.N), "clipped/step")
	}
}

// BenchmarkBubble runs equal-cost stages under each pipelined schedule and
// reports the idle fraction of the forward/backward phase (median over the
// steps) beside 1F1B's theory, (p-1)/(m+p-1), and the simulator's bubble
// of the schedule as its authors wrote it (Simulate). A layer's forward, input
// gradient and weight gradient each take 1.5 ms (a backward not split,
// 3 ms), and the layers sleep their cost, standing for a device each
// stage: the benchmark measures the schedule, not stages sharing two
// cores. Other load only lengthens the bubble, which is why this is a
// benchmark, not a test:
// go test -run '^$' -bench Bubble -benchtime 20x ./pipeline/
func BenchmarkBubble(b *testing.B) {
	for _, pm := range [][2]int{{2, 8}, {4, 8}} {
		p, m := pm[0], pm[1]
		for _, sc := range []struct {
			sched  actors.Schedule
			chunks int
		}{{actors.GPipe, 1}, {actors.OneFOneB, 1}, {actors.Interleaved, 2}, {actors.ZBH1, 1}, {actors.ZBV, 2}} {
			b.Run(fmt.Sprintf("%v/p=%d/m=%d/chunks=%d", sc.sched, p, m, sc.chunks), func(b *testing.B) {
				layers, passes := passModel(b, p*sc.chunks)
				for i, l := range passes {
					l.fwd, l.bwd, l.sleep = 1500*time.Microsecond, 3000*time.Microsecond, true
					layers[i+1] = &splitPass{l, 1500 * time.Microsecond}
				}
				// the linear layer shares the first position; it costs microseconds
				eng := newPassEngine(b, layers, pipeline.Config{Schedule: sc.sched, Stages: p, Chunks: sc.chunks, MicroBatches: m, Trace: true})
				defer eng.Close()
				var bubbles []float64
				step := 0
				for b.Loop() {
					step++
					x, tg := batch(step)
					if _, err := eng.Step(step, 0.01, x, tg); err != nil {
						b.Fatal(err)
					}
					stats, err := eng.Stats(true)
					if err != nil {
						b.Fatal(err)
					}
					if step > 2 { // warm up
						bubbles = append(bubbles, pipeline.Bubble(stats, eng.Stages()))
					}
				}
				if len(bubbles) > 0 {
					slices.Sort(bubbles)
					b.ReportMetric(bubbles[len(bubbles)/2], "bubble")
				}
				b.ReportMetric(float64(p-1)/float64(m+p-1), "theory")
				c := []float64{1.5e-3}
				if sim, err := pipeline.Simulate(pipeline.SimSchedule(sc.sched.String()), p, m, sc.chunks, pipeline.SimCosts{F: c, B: c, W: c}); err == nil {
					b.ReportMetric(sim.Bubble, "sim")
				}
			})
		}
	}
}

// splitPass is a pass layer whose backward splits: the input gradient
// takes bwd − w, the weight gradient w.
type splitPass struct {
	*passLayer
	w time.Duration
}

func (l *splitPass) BackwardInput(p nn.Pass, dy *tensor.Tensor) *tensor.Tensor {
	delete(l.inFlight, p.Micro)
	l.cost(l.bwd - l.w)
	return dy.Clone()
}

func (l *splitPass) BackwardParams(p nn.Pass) { l.cost(l.w) }
