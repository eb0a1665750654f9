package main

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
)

// evalValues is about how many input values (rows × their width: a text
// window's tokens) evaluation runs through the model at once.
const evalValues = 1 << 16

// evalChunk is how many rows of set evaluation runs at once: 1024 rows of
// features, fewer windows of text, whose every token makes activations.
func evalChunk(set *dataset.Set) int {
	if set.Len() > 0 && len(set.Labels) > set.Len() {
		// A token's outputs are as many as the vocabulary: GPT-2's 50,257
		// would make 8192 tokens' logits 1.6 GB, so a wide vocabulary takes
		// fewer windows (a character vocabulary's chunks are unchanged).
		return max(1, min(evalValues/(8*set.Features), evalLogits/(set.Features*max(1, len(set.Classes)))))
	}
	return 1024
}

// evalLogits bounds the outputs a chunk of text windows makes: 64 MB of
// float32, 5 windows of 64 GPT-2 tokens.
const evalLogits = 1 << 24

// evalWindow is how many of set's evaluation chunks run at once in arenas
// the actors keep (pipeline.Config.EvalWindow): text windows' logits, kept
// to about evalWindowBytes in all, down to 2 chunks (GPT-2's one window of
// 1,024 tokens makes 206 MB). Other sets' chunks, up to 1,024 images,
// are allocated afresh and collected, so that training keeps no room for
// them.
func evalWindow(set *dataset.Set) int {
	if set == nil || set.Len() == 0 || len(set.Labels) <= set.Len() {
		return 0
	}
	logits := 4 * evalChunk(set) * set.Features * max(1, len(set.Classes))
	return max(2, min(8, evalWindowBytes/logits))
}

// evalWindowBytes is about the logits a text evaluation's chunks in flight hold.
const evalWindowBytes = 1 << 29

// hangAfter is how long no message may move before the watchdog fails a step.
const hangAfter = 2 * time.Minute

// newEngine builds the actor pipeline in layout lay, for every schedule,
// sequential included.
func newEngine(c *config.Config, log *runLog, lay layout, r *trainRun) (*pipeline.Engine, error) {
	opt := optimizerSpec(c)
	if _, err := opt.New(); err != nil {
		return nil, badInput(err)
	}
	sched, err := actors.ParseSchedule(lay.Schedule)
	if err != nil {
		return nil, badInputf("pipeline.schedule = %q: %v", lay.Schedule, err)
	}
	shards := make([]int, len(c.Model.Layers))
	for i, l := range c.Model.Layers {
		shards[i] = max(1, l.Shards)
	}
	eng, err := pipeline.New(pipelineModel(c, r.sample), pipeline.Config{
		Schedule: sched, MicroBatches: lay.Micro, Stages: lay.Stages, Chunks: lay.Chunks, Shards: shards, Replicas: lay.Replicas,
		Loss: nn.Loss(c.Loss.Type), Optimizer: opt, Precision: precision(c), ClipNorm: c.Optimizer.ClipNorm, ClipValue: c.Optimizer.ClipValue,
		OptimisticClip: sched.SplitsBackward(), // the zero-bubble schedules' post-validated update
		SampleRows:     max(1, c.Data.BatchSize/lay.Micro/max(1, lay.Replicas)),
		Trace:          c.Log.Trace != "", Hang: hangAfter, Logger: &log.Logger,
		GEMMThreads: c.Pipeline.GEMMThreads, SplitBackward: lay.Split, EvalWindow: evalWindow(cmp.Or(r.val, r.test)),
		Hosts: c.Pipeline.Hosts, Listen: c.Pipeline.Listen, Advertise: c.Pipeline.Advertise, Token: r.token, TLS: r.tls, RunID: log.id,
	})
	if err != nil {
		return nil, badInputf("pipeline: %v", strings.TrimPrefix(err.Error(), "pipeline: "))
	}
	return eng, nil
}

// precision is train.precision, validated with the config, its bf16 sums
// in train.bf16_arithmetic's steps (this CPU's native ones while "auto").
func precision(c *config.Config) nn.Precision {
	p, _ := nn.ParsePrecision(c.Train.Precision)
	if !p.IsBF16() {
		return p
	}
	ar, err := ops.ParseArithmetic(c.Train.BF16Arithmetic)
	if err != nil {
		ar = ops.NativeArithmetic()
	}
	return nn.BF16With(ar)
}

// resolveArithmetic sets train.bf16_arithmetic = "auto" of a bf16 run to
// the arithmetic it takes: that of the checkpoint it resumes, so that it
// goes on exactly, or else this CPU's native one. Errors reading the
// checkpoint, and an arithmetic it names that none is, are left to the
// resume, which reports them.
func resolveArithmetic(c *config.Config, resume bool) {
	t := &c.Train
	if t.Precision != "bf16" || t.BF16Arithmetic != "auto" {
		return
	}
	t.BF16Arithmetic = ops.NativeArithmetic().String()
	if !resume {
		return
	}
	if dir, ok, err := checkpoint.Latest(t.CheckpointDir); err == nil && ok {
		if meta, err := checkpoint.ReadMeta(dir); err == nil {
			if _, err := ops.ParseArithmetic(meta.BF16Arithmetic); err == nil {
				t.BF16Arithmetic = meta.BF16Arithmetic
			}
		}
	}
}

// optimizerSpec is the [optimizer] table as the spec every stage builds its
// own optimizer from.
func optimizerSpec(c *config.Config) optim.Spec {
	o := c.Optimizer
	return optim.Spec{Kind: o.Type, Momentum: o.Momentum, Nesterov: o.Nesterov, WeightDecay: o.WeightDecay, Decay: o.Decay,
		Betas: o.Betas, Eps: o.Eps}
}

// logStages writes a "stage" event per stage actor: its share of the wall time
// since the last call spent computing, and the messages it handled.
func (r *trainRun) logStages() {
	now := time.Now()
	wall := now.Sub(r.statsSince).Seconds()
	r.statsSince = now
	stats, err := r.eng.Stats(true)
	if err != nil {
		r.log.Warn().Str("event", "stage").Err(err).Msg("could not read stage counters")
		return
	}
	for _, info := range r.eng.Stages() {
		s := stats[info.Actor]
		ev := r.log.event("stage").Int("stage", info.Actor).Int("position", info.Position).Ints("layers", info.Layers).
			Float64("busy_fraction", s.Busy.Seconds()/wall).Int("messages", s.Messages).Int("max_in_flight", s.MaxInFlight).
			Int64("peak_activation_bytes", s.PeakActivationBytes).Int("threads", info.Threads)
		if plan := r.eng.Plan(); plan.PerReplica() > r.eng.Positions() {
			ev = ev.Int("shard", info.Shard)
		}
		if r.eng.Plan().Replicas > 1 {
			ev = ev.Int("replica", info.Replica)
		}
		if info.Host != "" {
			ev = ev.Str("host", info.Host).Int64("wire_bytes", s.WireBytes)
		}
		ev.Msg("")
	}
}

// writeTrace writes the pipeline timeline to log.trace, through a temporary file.
func (r *trainRun) writeTrace() error {
	path := r.cfg.Log.Trace
	if path == "" || r.eng == nil {
		return nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return writeFileAtomic(path, r.eng.WriteTrace)
}
