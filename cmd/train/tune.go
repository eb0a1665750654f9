package main

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
)

// layout is how the pipeline runs a model: what pipeline.schedule = "auto" and
// pipeline.micro_batches = "auto" choose among. Every layout gives the same
// losses and weights, bit for bit, so the choice changes only the speed.
type layout struct {
	Schedule string
	Stages   int
	Micro    int
	Split    bool // split_backward
	Replicas int
	Chunks   int // positions a stage runs under interleaved and zbv
}

func (l layout) String() string {
	s := fmt.Sprintf("%s, stages %d, micro_batches %d, split_backward %v, replicas %d", l.Schedule, l.Stages, l.Micro, l.Split, l.Replicas)
	if l.Chunks > 1 {
		s += fmt.Sprintf(", chunks %d", l.Chunks)
	}
	return s
}

// fields are the layout's keys, as a tune event lists them.
func (l layout) fields() map[string]any {
	return map[string]any{"schedule": l.Schedule, "stages": l.Stages, "micro_batches": l.Micro, "split_backward": l.Split, "replicas": l.Replicas, "chunks": l.Chunks}
}

// perMicroBatch reports whether the model has a layer whose results depend
// on the number of micro-batches.
func perMicroBatch(c *config.Config) bool {
	for _, l := range c.Model.Layers {
		if l.Spec.PerMicroBatch() {
			return true
		}
	}
	return false
}

// batchChunks returns how many chunks a batch of c has (the most
// micro-batches it splits into, nn.SplitRows), the samples of a chunk (32
// rows, or a sequence model's fewest whole sequences of 32·k tokens) and
// the tokens of a sample.
func batchChunks(c *config.Config, sample []int) (chunks, granule, tokens int) {
	tokens = nn.Tokens(modelSpecs(c), sample)
	granule = nn.Granule(tokens)
	return (c.Data.BatchSize + granule - 1) / granule, granule, tokens
}

// microBatchesWarning says when the batch cannot give the
// pipeline.micro_batches a config asks for: micro-batches are whole chunks
// of rows (nn.SplitRows), so a batch of fewer chunks runs as many
// micro-batches as it has chunks, under every schedule.
func microBatchesWarning(c *config.Config, sample []int) string {
	m := c.Pipeline.MicroBatches
	if m.IsAuto() {
		return ""
	}
	most, g, tokens := batchChunks(c, sample)
	if int(m) <= most {
		return ""
	}
	unit := fmt.Sprintf("%d rows", g)
	if tokens > 1 {
		unit = fmt.Sprintf("%d samples, %d rows of tokens", g, g*tokens)
	}
	return fmt.Sprintf("pipeline.micro_batches = %d: a batch of %d gives at most %d, so %d run (micro-batches are whole chunks of %s, which keep the results independent of the split): set micro_batches to at most %d, or raise data.batch_size",
		m, c.Data.BatchSize, most, most, unit, most)
}

// candidates lists the layouts a run may use for samples of the given shape: one when the config fixes
// both the schedule and the micro-batches, else those "auto" tries, first
// the one a run starts with.
func candidates(c *config.Config, sample []int) []layout {
	p := c.Pipeline
	most, _, _ := batchChunks(c, sample) // more micro-batches than chunks would be merged
	micros := []int{int(p.MicroBatches)}
	switch {
	case p.MicroBatches.IsAuto() && perMicroBatch(c):
		// batch norm's statistics are per micro-batch: their count changes
		// the results, so auto may not choose it
		micros = []int{1}
	case p.MicroBatches.IsAuto():
		micros = nil
		for _, m := range []int{1, 2, 4, 8, 16} {
			if m <= most {
				micros = append(micros, m)
			}
		}
	}
	scheds := []string{p.Schedule}
	if p.Schedule == "auto" {
		// zb-h1 fills 1F1B's bubble with the weight gradients in 1F1B's
		// memory; interleaved and zbv, which need chunks, run only when set
		scheds = []string{"sequential", "1f1b", "zb-h1"}
	}
	reps := replicaCounts(p.Replicas, most, len(p.Hosts))
	var out []layout
	for _, s := range scheds {
		sched, _ := actors.ParseSchedule(s) // validated
		for _, m := range micros {
			switch {
			case p.Schedule == "auto" && sched.OneAtATime():
				// one actor with every core in each GEMM: micro-batches only cost
				if m == micros[0] {
					out = append(out, layout{s, 1, m, p.SplitBackward, reps[0], p.Chunks})
				}
			case p.MicroBatches.IsAuto() && !sched.OneAtATime() && m == 1 && len(micros) > 1:
				// a pipeline of one micro-batch overlaps nothing
			case p.Schedule == "auto":
				// dX goes upstream at once and each layer's weight gradient
				// runs once over the whole step: measured faster for every
				// pipelined layout, with the same results
				out = append(out, layout{s, p.Stages, m, true, reps[0], p.Chunks})
			default:
				out = append(out, layout{s, p.Stages, m, p.SplitBackward, reps[0], p.Chunks})
			}
		}
	}
	// replicas: a chain of one stage each, every replica on its own core,
	// its share of the mini-batch as one micro-batch unless fixed
	for _, r := range reps[1:] {
		l := layout{p.Schedule, p.Stages, int(p.MicroBatches), p.SplitBackward, r, p.Chunks}
		if p.Schedule == "auto" {
			l.Schedule, l.Stages = "sequential", 1
		}
		if p.MicroBatches.IsAuto() {
			l.Micro = 1
		}
		out = append(out, l)
	}
	return out
}

// replicaCounts lists the replica counts a run may use: the one set, or
// under "auto" 1 and the powers of two up to the cores and the chunks;
// with hosts, up to the hosts (a replica each) instead of the cores here.
func replicaCounts(set config.Auto, chunks, hosts int) []int {
	if !set.IsAuto() {
		return []int{int(set)}
	}
	most := runtime.GOMAXPROCS(0)
	if hosts > 0 {
		most = hosts
	}
	out := []int{1}
	for r := 2; r <= min(most, chunks); r *= 2 {
		out = append(out, r)
	}
	return out
}

// The tuner interleaves the candidates, as a careful benchmark does, so that
// a machine that slows down for a while (another process, a noisy neighbour)
// slows them all: round after round each candidate runs tuneSlot steps, and
// its speed is the median of its timed steps. The first round warms each one
// up (helpers, arenas, packed weights) and is not timed. Timing each
// candidate in one block of six steps left an MNIST epoch under auto 14%
// behind the best fixed layout: its steps take 2 ms, and the machine drifts.
const (
	tuneRounds = 4
	tuneSlot   = 2
)

// tuner runs the first steps of a run on each candidate layout in turn and
// then keeps the fastest. Its steps are the run's own: nothing is repeated.
// Every candidate's engine is kept until the choice, and the training state
// moves between them with Snapshot and Restore.
type tuner struct {
	cands   []layout
	engines []*pipeline.Engine // built at first use
	slot    int                // round*len(cands) + candidate
	inSlot  int                // steps done in the current slot
	rates   [][]float64        // per candidate, samples/s of its timed steps
}

func newTuner(cands []layout) *tuner {
	if len(cands) < 2 {
		return nil
	}
	return &tuner{cands: cands, engines: make([]*pipeline.Engine, len(cands)), rates: make([][]float64, len(cands))}
}

func (t *tuner) cand() int { return t.slot % len(t.cands) }

// median is the candidate's speed: a single slow step does not decide.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// beforeStep moves the run to the next candidate when the current one has
// run its slot, and to the fastest once every round is done.
func (r *trainRun) beforeStep() error {
	t := r.tuner
	if t == nil || t.inSlot < tuneSlot {
		return nil
	}
	t.slot, t.inSlot = t.slot+1, 0
	if t.slot < tuneRounds*len(t.cands) {
		return r.moveTo(t.cand())
	}
	best := 0
	arr := make([]map[string]any, len(t.cands))
	for i, l := range t.cands {
		sps := median(t.rates[i])
		if sps > median(t.rates[best]) {
			best = i
		}
		arr[i] = l.fields()
		arr[i]["samples_per_sec"] = sps
	}
	chosen := t.cands[best]
	r.log.event("tune").Interface("candidates", arr).
		Interface("chosen", chosen.fields()).
		Msgf("pipeline: %s", chosen)
	if err := r.moveTo(best); err != nil {
		return err
	}
	r.tuner = nil
	return r.closeSpare(t)
}

// afterStep times a step for the tuner.
func (r *trainRun) afterStep(rows int, d time.Duration) {
	t := r.tuner
	if t == nil {
		return
	}
	if t.slot >= len(t.cands) { // past the warm-up round
		t.rates[t.cand()] = append(t.rates[t.cand()], float64(rows)/d.Seconds())
	}
	t.inSlot++
}

// moveTo moves the training state (weights and optimizer state) into the
// engine of candidate i, built the first time.
func (r *trainRun) moveTo(i int) error {
	t := r.tuner
	e := t.engines[i]
	if e == r.eng {
		return nil
	}
	if e == nil {
		var err error
		if e, err = newEngine(r.cfg, r.log, t.cands[i], r); err != nil {
			return err
		}
		t.engines[i] = e
	}
	if err := r.eng.MoveTo(e); err != nil {
		return fmt.Errorf("tuning the pipeline: %w", err)
	}
	r.eng, r.layout, r.statsSince = e, t.cands[i], time.Now()
	r.metrics.actors.setEngine(e)
	return nil
}

// closeSpare closes the tuner's engines other than the one the run uses.
func (r *trainRun) closeSpare(t *tuner) error {
	var errs []error
	for i, e := range t.engines {
		if e != nil && e != r.eng {
			errs = append(errs, e.Close())
			t.engines[i] = nil
		}
	}
	return errors.Join(errs...)
}
