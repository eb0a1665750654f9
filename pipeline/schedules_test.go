package pipeline_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// newSchedules are the schedules beyond 1F1B, each with the chunk counts
// it runs.
var newSchedules = []struct {
	sched  actors.Schedule
	chunks []int
}{
	{actors.Interleaved, []int{1, 2}},
	{actors.ZBH1, []int{1}},
	{actors.ZBV, []int{2}},
}

// scheduleModels are the models the schedules are checked on.
var scheduleModels = []struct {
	name    string
	m       pipeline.Model
	batchOf func(step int) (*tensor.Tensor, nn.Target)
}{
	{"mlp", testModel, batch},
	{"cnn", cnnModel(cnnSpecs(false)), cnnBatch},
	{"gpt", tied, gptBatch},
}

// TestNewSchedules: interleaved, zb-h1 and zbv at 2, 3, 4 and 6 stages
// (where the model has the layers for their chunks), one or two chunks a
// stage, 1, 2, 4 or 8 micro-batches, with clip_norm and without, give the
// losses and weights of the sequential schedule bit for bit, for the MLP,
// the CNN and the GPT with a tied head. Under -race, a few layouts each.
func TestNewSchedules(t *testing.T) {
	stageCounts, micros := []int{2, 3, 4, 6}, []int{1, 2, 4, 8}
	if raceEnabled {
		stageCounts, micros = []int{2, 3}, []int{2, 4}
	}
	for _, md := range scheduleModels {
		for _, clip := range []float64{clipNorm, 0} {
			base := pipeline.Config{Schedule: actors.Sequential, MicroBatches: 1, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clip}
			wantLoss, wantW := trainEngineOn(t, md.m, base, md.batchOf)
			for _, ns := range newSchedules {
				for _, stages := range stageCounts {
					for _, chunks := range ns.chunks {
						if stages*chunks > len(md.m.Specs) {
							continue
						}
						for _, micro := range micros {
							name := fmt.Sprintf("%s/clip=%v/%v/stages=%d/chunks=%d/micro=%d", md.name, clip, ns.sched, stages, chunks, micro)
							t.Run(name, func(t *testing.T) {
								cfg := base
								cfg.Schedule, cfg.Stages, cfg.Chunks, cfg.MicroBatches = ns.sched, stages, chunks, micro
								gotLoss, gotW := trainEngineOn(t, md.m, cfg, md.batchOf)
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
}

// TestRemoteNewSchedules: the new schedules with their stages on two
// workers (a stage's chunks on one), at 2 and 3 stages and 1 and 8
// micro-batches (under -race, 2 and 4), give the losses and weights of the
// sequential schedule in one process, bit for bit.
func TestRemoteNewSchedules(t *testing.T) {
	hosts := workers(t, 2, "")
	stageCounts, micros := []int{2, 3}, []int{1, 8}
	if raceEnabled {
		stageCounts, micros = []int{2}, []int{4}
	}
	for _, md := range scheduleModels {
		for _, clip := range []float64{clipNorm, 0} {
			base := pipeline.Config{Schedule: actors.Sequential, MicroBatches: 1, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clip,
				RunID: "schedules", Hang: 5 * time.Second}
			wantLoss, wantW := trainEngineOn(t, md.m, base, md.batchOf)
			for _, ns := range newSchedules {
				for _, stages := range stageCounts {
					for _, chunks := range ns.chunks {
						for _, micro := range micros {
							t.Run(fmt.Sprintf("%s/clip=%v/%v/stages=%d/chunks=%d/micro=%d", md.name, clip, ns.sched, stages, chunks, micro), func(t *testing.T) {
								cfg := base
								cfg.Schedule, cfg.Stages, cfg.Chunks, cfg.MicroBatches, cfg.Hosts = ns.sched, stages, chunks, micro, hosts
								gotLoss, gotW := trainEngineOn(t, md.m, cfg, md.batchOf)
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
}

// TestChunkPlacement: the chunks of a stage run on its cores, placed as
// each schedule places them, and the plan refuses what chunks cannot run.
func TestChunkPlacement(t *testing.T) {
	for _, tc := range []struct {
		sched          actors.Schedule
		stages, chunks int
		want           []int // the stage of each position
	}{
		{actors.Interleaved, 3, 2, []int{0, 1, 2, 0, 1, 2}},
		{actors.Interleaved, 2, 3, []int{0, 1, 0, 1, 0, 1}},
		{actors.ZBV, 3, 2, []int{0, 1, 2, 2, 1, 0}},
		{actors.ZBV, 2, 0, []int{0, 1, 1, 0}}, // zbv's two chunks whatever chunks says
		{actors.ZBH1, 3, 1, []int{0, 1, 2}},
	} {
		eng, err := pipeline.New(testModel, pipeline.Config{Schedule: tc.sched, Stages: tc.stages, Chunks: tc.chunks, MicroBatches: 2, Loss: nn.CrossEntropy, Optimizer: sgd})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, st := range eng.Stages() {
			got = append(got, st.Stage)
		}
		eng.Close()
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v stages=%d chunks=%d: stages of the positions %v, want %v", tc.sched, tc.stages, tc.chunks, got, tc.want)
		}
	}
	for _, tc := range []struct {
		cfg  pipeline.Config
		want string
	}{
		{pipeline.Config{Schedule: actors.OneFOneB, Chunks: 2}, "chunks = 2 needs the interleaved or zbv schedule"},
		{pipeline.Config{Schedule: actors.ZBV, Chunks: 3}, "zbv runs 2 a stage"},
		{pipeline.Config{Schedule: actors.Interleaved, Stages: 4, Chunks: 2}, "4 stages of 2 chunks need at least 8 layers"},
		{pipeline.Config{Schedule: actors.ZBH1, Replicas: 2}, "runs one chain"},
		{pipeline.Config{Schedule: actors.Interleaved, Chunks: 2, Stages: 2, Shards: []int{2}}, "does not shard layers"},
	} {
		tc.cfg.MicroBatches, tc.cfg.Loss, tc.cfg.Optimizer = 2, nn.CrossEntropy, sgd
		eng, err := pipeline.New(testModel, tc.cfg)
		if err == nil {
			eng.Close()
			t.Errorf("%+v: no error, want one saying %q", tc.cfg, tc.want)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %q, want one saying %q", tc.cfg, err, tc.want)
		}
	}
}

// TestChunkTrace: a chunked schedule's trace draws each stage on one
// track, its spans labelled with their chunk, and the bubble counts the
// stages, not their actors.
func TestChunkTrace(t *testing.T) {
	eng, err := pipeline.New(testModel, pipeline.Config{Schedule: actors.ZBV, Stages: 2, MicroBatches: 4, Loss: nn.CrossEntropy, Optimizer: sgd, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	x, tg := batch(1)
	if _, err := eng.Step(1, 0.1, x, tg); err != nil {
		t.Fatal(err)
	}
	stats, err := eng.Stats(false)
	if err != nil {
		t.Fatal(err)
	}
	if b := pipeline.Bubble(stats, eng.Stages()); b <= 0 || b >= 1 {
		t.Errorf("bubble %v, want within (0, 1)", b)
	}
	var buf bytes.Buffer
	if err := eng.WriteTrace(&buf); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name string
			Ph   string
			Tid  int
			Args map[string]any
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatal(err)
	}
	tracks := map[int]string{}
	chunks := map[int]map[float64]bool{} // per track, the chunks its spans name
	weights := 0
	for _, ev := range trace.TraceEvents {
		switch ev.Ph {
		case "M":
			tracks[ev.Tid], _ = ev.Args["name"].(string)
		case "X":
			if c, ok := ev.Args["chunk"].(float64); ok {
				if chunks[ev.Tid] == nil {
					chunks[ev.Tid] = map[float64]bool{}
				}
				chunks[ev.Tid][c] = true
			}
			if strings.HasPrefix(ev.Name, "weight-grad") {
				weights++
			}
		}
	}
	for st := range 2 {
		if name := tracks[st]; name != fmt.Sprintf("stage %d", st) {
			t.Errorf("track %d is named %q, want \"stage %d\"", st, name, st)
		}
		if len(chunks[st]) != 2 {
			t.Errorf("stage %d's track has spans of chunks %v, want 0 and 1", st, chunks[st])
		}
	}
	if weights == 0 {
		t.Error("no weight-grad span: zbv left no weight gradients to fill the waits")
	}
}

// TestScheduleMemory: the zero-bubble schedules hold no more micro-batches'
// activations than their order lets a stage hold (Simulate's Peak, in
// chunks: at most p, 1F1B's first stage's, TestSimulatePeaks), counted at
// the layers, whose caches wait for the weight gradients; 1F1B its p − i.
func TestScheduleMemory(t *testing.T) {
	const stages, micro = 3, 8
	for _, tc := range []struct {
		sched  actors.Schedule
		chunks int
	}{{actors.OneFOneB, 1}, {actors.ZBH1, 1}, {actors.ZBV, 2}} {
		sim, err := pipeline.Simulate(pipeline.SimSchedule(tc.sched.String()), stages, micro, tc.chunks, pipeline.SimCosts{F: []float64{1}, B: []float64{1}, W: []float64{1}})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := pipeline.New(tied, pipeline.Config{Schedule: tc.sched, Stages: stages, Chunks: tc.chunks, MicroBatches: micro,
			Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clipNorm})
		if err != nil {
			t.Fatal(err)
		}
		for step := 1; step <= 3; step++ {
			x, tg := gptBatch(step)
			if _, err := eng.Step(step, 0.1, x, tg); err != nil {
				t.Fatal(err)
			}
		}
		stats, err := eng.Stats(true)
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, info := range eng.Stages() {
			for _, st := range stats {
				if st.Actor != info.Actor {
					continue
				}
				held = max(held, st.MaxInFlight)
				if bound := sim.Peak[info.Stage]; st.MaxInFlight > bound {
					t.Errorf("%v: position %d held %d micro-batches' activations, more than its stage's order holds, %d", tc.sched, info.Position, st.MaxInFlight, bound)
				}
				if tc.sched == actors.OneFOneB && st.MaxInFlight > stages-info.Position {
					t.Errorf("1f1b: position %d held %d micro-batches, more than p − i = %d", info.Position, st.MaxInFlight, stages-info.Position)
				}
			}
		}
		eng.Close()
		if held == 0 {
			t.Errorf("%v: no position held a micro-batch", tc.sched)
		}
		t.Logf("%v: the order's peaks per stage %v", tc.sched, sim.Peak)
	}
}

// TestOptimisticClip: stages that update before the global norm is known
// and redo the update when it clips give the bits of the synchronous
// update, for every model under zb-h1, zbv and 1f1b, in one process and on
// two workers; a bound the norm never reaches rolls nothing back, and one
// it exceeds rolls back every stage with weights.
func TestOptimisticClip(t *testing.T) {
	hosts := workers(t, 2, "")
	for _, md := range scheduleModels {
		for _, clip := range []float64{1e-3, 1e6} {
			base := pipeline.Config{Schedule: actors.Sequential, MicroBatches: 1, Loss: nn.CrossEntropy, Optimizer: sgd, ClipNorm: clip,
				RunID: "optimistic", Hang: 5 * time.Second}
			wantLoss, wantW := trainEngineOn(t, md.m, base, md.batchOf)
			for _, tc := range []struct {
				sched  actors.Schedule
				chunks int
				hosts  []string
			}{{actors.ZBH1, 1, nil}, {actors.ZBV, 2, nil}, {actors.OneFOneB, 1, nil}, {actors.ZBH1, 1, hosts}} {
				t.Run(fmt.Sprintf("%s/clip=%g/%v/hosts=%d", md.name, clip, tc.sched, len(tc.hosts)), func(t *testing.T) {
					cfg := base
					cfg.Schedule, cfg.Stages, cfg.Chunks, cfg.MicroBatches, cfg.Hosts, cfg.OptimisticClip = tc.sched, 2, tc.chunks, 4, tc.hosts, true
					eng, err := pipeline.New(md.m, cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer eng.Close()
					var losses []float64
					rollbacks := 0
					for step := 1; step <= steps; step++ {
						x, tg := md.batchOf(step)
						loss, err := eng.Step(step, lr(step), x, tg)
						if err != nil {
							t.Fatal(err)
						}
						losses = append(losses, loss)
						rollbacks += eng.Rollbacks()
					}
					if why := within(losses, wantLoss, weightsOf(t, eng), wantW, 0); why != "" {
						t.Error(why)
					}
					withParams := 0
					for _, s := range eng.Plan().Slots {
						if s.HasParams() {
							withParams++
						}
					}
					if want := map[bool]int{true: steps * withParams, false: 0}[clip < 1]; rollbacks != want {
						t.Errorf("%d rollbacks in %d steps, want %d", rollbacks, steps, want)
					}
				})
			}
		}
	}
}
