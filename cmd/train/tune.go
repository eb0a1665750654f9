package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/nn"
)

// layout is how the pipeline runs a model: what pipeline.schedule = "auto" and
// pipeline.micro_batches = "auto" choose among. Every layout gives the same
// losses and weights, bit for bit, so the choice changes only the speed.
type layout struct {
	Schedule string
	Stages   int
	Micro    int
	Split    bool // split_backward
}

func (l layout) String() string {
	return fmt.Sprintf("%s, stages %d, micro_batches %d, split_backward %v", l.Schedule, l.Stages, l.Micro, l.Split)
}

// candidates lists the layouts a run may use: one when the config fixes
// both the schedule and the micro-batches, else those "auto" tries, first
// the one a run starts with.
func candidates(c *config.Config) []layout {
	p := c.Pipeline
	// more micro-batches than 32-row chunks would be merged (nn.SplitRows)
	most := (c.Data.BatchSize + nn.ChunkRows - 1) / nn.ChunkRows
	micros := []int{int(p.MicroBatches)}
	if p.MicroBatches.IsAuto() {
		micros = nil
		for _, m := range []int{1, 2, 4, 8} {
			if m <= most {
				micros = append(micros, m)
			}
		}
	}
	scheds := []string{p.Schedule}
	if p.Schedule == "auto" {
		scheds = []string{"sequential", "1f1b"}
	}
	var out []layout
	for _, s := range scheds {
		for _, m := range micros {
			switch {
			case p.Schedule == "auto" && s == "sequential":
				// one actor with every core in each GEMM: micro-batches only cost
				if m == micros[0] {
					out = append(out, layout{s, 1, m, p.SplitBackward})
				}
			case p.MicroBatches.IsAuto() && s != "sequential" && m == 1 && len(micros) > 1:
				// a pipeline of one micro-batch overlaps nothing
			case p.Schedule == "auto":
				// dX goes upstream at once and each layer's weight gradient
				// runs once over the whole step: measured faster for every
				// pipelined layout, with the same results
				out = append(out, layout{s, p.Stages, m, true})
			default:
				out = append(out, layout{s, p.Stages, m, p.SplitBackward})
			}
		}
	}
	return out
}

// Each candidate runs tuneSteps training steps: the first tuneWarmup warm
// up (helpers, arenas, packed weights, the collector after the switch), the
// others are timed: on a noisy 2-core VM, three timed steps were too few to
// tell apart layouts 10% apart.
const (
	tuneSteps  = 8
	tuneWarmup = 2
)

// tuner runs the first steps of a run on each candidate layout in turn and
// then keeps the fastest. Its steps are the run's own: nothing is repeated.
type tuner struct {
	cands []layout
	cur   int
	rates [][]float64 // per candidate, samples/s of its timed steps
}

func newTuner(cands []layout) *tuner {
	if len(cands) < 2 {
		return nil
	}
	return &tuner{cands: cands, rates: make([][]float64, len(cands))}
}

// record notes a step of the current candidate.
func (t *tuner) record(rows int, d time.Duration, warm bool) {
	if warm {
		t.rates[t.cur] = append(t.rates[t.cur], float64(rows)/d.Seconds())
	}
}

// median is the candidate's speed: a single slow step (another process on
// the cores) does not decide.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// beforeStep moves the run to the next candidate once the current one has
// run its steps, and to the fastest once all have; then the tuner is done.
func (r *trainRun) beforeStep() error {
	t := r.tuner
	if t == nil || r.tuneStep < tuneSteps {
		return nil
	}
	if t.cur+1 < len(t.cands) {
		t.cur++
		r.tuneStep = 0
		return r.switchLayout(t.cands[t.cur])
	}
	best := 0
	arr := make([]map[string]any, len(t.cands))
	for i, l := range t.cands {
		sps := median(t.rates[i])
		if sps > median(t.rates[best]) {
			best = i
		}
		arr[i] = map[string]any{"schedule": l.Schedule, "stages": l.Stages, "micro_batches": l.Micro, "split_backward": l.Split, "samples_per_sec": sps}
	}
	chosen := t.cands[best]
	r.log.event("tune").Interface("candidates", arr).
		Interface("chosen", map[string]any{"schedule": chosen.Schedule, "stages": chosen.Stages, "micro_batches": chosen.Micro, "split_backward": chosen.Split}).
		Msgf("pipeline: %s", chosen)
	r.tuner = nil
	if best != t.cur {
		return r.switchLayout(chosen)
	}
	return nil
}

// afterStep times a step for the tuner.
func (r *trainRun) afterStep(rows int, d time.Duration) {
	if r.tuner == nil {
		return
	}
	r.tuner.record(rows, d, r.tuneStep >= tuneWarmup)
	r.tuneStep++
}

// switchLayout moves the training state (weights and optimizer state) into
// a new engine in layout lay.
func (r *trainRun) switchLayout(lay layout) error {
	weights, st, err := r.eng.Snapshot()
	if err != nil {
		return fmt.Errorf("tuning the pipeline: %w", err)
	}
	layers, err := buildModel(r.cfg, r.features)
	if err != nil {
		return err
	}
	eng, err := newEngine(r.cfg, layers, r.features, r.log, lay)
	if err != nil {
		return err
	}
	if err := eng.Restore(weights, st); err != nil {
		eng.Close()
		return fmt.Errorf("tuning the pipeline: %w", err)
	}
	if err := r.eng.Close(); err != nil {
		eng.Close()
		return fmt.Errorf("tuning the pipeline: %w", err)
	}
	r.eng, r.layout, r.statsSince = eng, lay, time.Now()
	return nil
}
