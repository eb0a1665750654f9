package pipeline

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
)

// TestPredict checks the cost model's arithmetic on measured stage times:
// a cut between hosts costs the activation and its gradient over the link,
// none within a process; a pipeline takes the first micro-batch through
// every stage and cut and then the slowest once for each other one, the
// sequential schedule every micro-batch through all; on hosts the step
// ends when the updates' acknowledgements are back, a link's latency.
func TestPredict(t *testing.T) {
	m := Model{Specs: []nn.Spec{{Type: "linear", Units: 16, Init: nn.XavierUniform}, {Type: "relu"},
		{Type: "linear", Units: 10, Init: nn.XavierUniform}}, Sample: []int{8}, Seed: 1}
	link := Link{Bandwidth: 1e6, Latency: 2 * time.Millisecond}
	for _, c := range []struct {
		sched actors.Schedule
		hosts []string
	}{
		{actors.OneFOneB, []string{"a:1", "b:1"}}, {actors.GPipe, nil}, {actors.Sequential, []string{"a:1", "b:1"}},
	} {
		cfg := Config{Schedule: c.sched, MicroBatches: 4, Stages: 2, Hosts: c.hosts}
		p, err := Predict(m, cfg, 64, link)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rows != 16 || len(p.Stage) != 2 || len(p.Cross) != 1 {
			t.Fatalf("%v: %d rows, stages %v, cuts %v", c.sched, p.Rows, p.Stage, p.Cross)
		}
		want := 0.0
		if len(c.hosts) > 0 && p.Plan.Slots[0].Host != p.Plan.Slots[1].Host {
			out := p.Plan.Positions[0].Layers
			values := map[int]int{0: 16, 1: 16, 2: 10}[out[len(out)-1]]
			want = 2 * (0.002 + float64(16*values*4)/1e6)
		}
		if math.Abs(p.Cross[0]-want) > 1e-12 {
			t.Errorf("%v hosts %v: the cut costs %v, want %v", c.sched, c.hosts, p.Cross[0], want)
		}
		in, out := 0.0, 0.0
		if len(c.hosts) > 0 {
			in, out = 0.002+float64(16*8*4)/1e6, 2*(0.002+float64(16*10*4)/1e6)
		}
		if math.Abs(p.In-in) > 1e-12 || math.Abs(p.Out-out) > 1e-12 {
			t.Errorf("%v hosts %v: the input's way costs %v and the output's %v, want %v and %v", c.sched, c.hosts, p.In, p.Out, in, out)
		}
		sum := p.Stage[0] + p.Stage[1] + p.Cross[0] + in + out
		step := sum + 3*max(p.Stage[0], p.Stage[1], p.Cross[0], in, out)
		if c.sched == actors.Sequential {
			step = 4 * sum
		}
		fences := 0.0
		if len(c.hosts) > 0 { // the updates' acknowledgements come back
			fences = 0.002
		}
		if math.Abs(p.Fences-fences) > 1e-12 {
			t.Errorf("%v hosts %v: the fences cost %v, want %v", c.sched, c.hosts, p.Fences, fences)
		}
		step += fences
		if math.Abs(p.Step-step) > 1e-12*step || !(p.Stage[0] > 0 && p.Stage[1] > 0) {
			t.Errorf("%v: step %v from stages %v and cut %v, want %v", c.sched, p.Step, p.Stage, p.Cross, step)
		}
	}
}

// TestPredictClipFences: with clip_norm on hosts the step's end waits for
// the gradient norms to reach the coordinator and the factor to come back
// too: three latencies in all.
func TestPredictClipFences(t *testing.T) {
	m := Model{Specs: []nn.Spec{{Type: "linear", Units: 16, Init: nn.XavierUniform}, {Type: "relu"},
		{Type: "linear", Units: 10, Init: nn.XavierUniform}}, Sample: []int{8}, Seed: 1}
	cfg := Config{Schedule: actors.OneFOneB, MicroBatches: 2, Stages: 2, Hosts: []string{"a:1", "b:1"}, ClipNorm: 1}
	p, err := Predict(m, cfg, 64, Link{Bandwidth: 1e6, Latency: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.Fences-0.006) > 1e-12 {
		t.Errorf("fences with clip_norm %v, want 0.006", p.Fences)
	}
}

// TestStageThreads: the threads the cost model times a stage with are
// those its actor would have: this process's budget, a worker's share of
// its cores, or gemm_threads on a worker when set.
func TestStageThreads(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		threads, hostThreads int
		hosts                []string
		want                 int
	}{
		{0, 0, nil, procs},
		{1, 0, nil, 1},
		{0, 0, []string{"a:1", "b:1"}, procs},
		{0, 1, []string{"a:1", "b:1"}, 1},
		{0, 0, []string{"a:1"}, max(1, procs/2)},
	} {
		p := &Plan{Threads: c.threads, HostThreads: c.hostThreads, Hosts: c.hosts, Schedule: actors.OneFOneB, Micro: 4,
			Slots: make([]Slot, 2)}
		if got := p.stageThreads(); got != c.want {
			t.Errorf("threads %d, host threads %d, hosts %v: %d, want %d", c.threads, c.hostThreads, c.hosts, got, c.want)
		}
	}
}

// TestMeasureSimLayers: a layer with weights has its backward split half
// and half into B and W, one without has no W, and the plan's positions
// and a micro-batch's rows come with them.
func TestMeasureSimLayers(t *testing.T) {
	m := Model{Specs: []nn.Spec{{Type: "linear", Units: 8, Init: nn.HeUniform}, {Type: "relu"}, {Type: "linear", Units: 2, Init: nn.XavierUniform}}, Sample: []int{4}, Seed: 1}
	sl, err := MeasureSimLayers(m, Config{Schedule: actors.OneFOneB, MicroBatches: 2, Loss: nn.CrossEntropy}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if sl.Stages != 3 || sl.Rows != 32 || len(sl.F) != 3 || len(sl.B) != 3 || len(sl.W) != 3 {
		t.Fatalf("MeasureSimLayers: %d stages, %d rows, %d/%d/%d costs; want 3 stages, 32 rows, 3 costs each", sl.Stages, sl.Rows, len(sl.F), len(sl.B), len(sl.W))
	}
	for i, weights := range []bool{true, false, true} {
		if sl.F[i] <= 0 || sl.B[i] < 0 || (weights && sl.W[i] != sl.B[i]) || (!weights && sl.W[i] != 0) {
			t.Errorf("layer %d: F %v, B %v, W %v; want F > 0 and W = B with weights, 0 without", i, sl.F[i], sl.B[i], sl.W[i])
		}
	}
}
