package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/dataset"
	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/pipeline/remote"
	"github.com/pipetrain/pipetrain/tensor"
)

// trainRun is the state of one run of the training loop.
type trainRun struct {
	cfg        *config.Config
	log        *runLog
	token      string            // shared with the workers of pipeline.hosts
	tls        remote.TLS        // secures the links to them
	desc       model.Description // what each checkpoint says of the model
	metrics    metrics           // what log.metrics serves
	eng        *pipeline.Engine
	statsSince time.Time
	loader     batchSource
	text       *textData // a language model's text; nil for other data
	test       *dataset.Set
	val        *dataset.Set // held out of the training rows; nil without data.validation_fraction
	epochSum   epochSum     // the current epoch's steps, for its summary
	lastEval   evalPoint
	early      early // the best validation loss, for best/ and early stopping
	regression bool
	sched      optim.Schedule
	progress   *progress
	features   int
	sample     []int   // a sample's shape: [C, H, W] for images, [features] otherwise
	shapes     [][]int // each layer's output sample shape

	// the pipeline layout, and the tuner while pipeline "auto" measures
	layout layout
	tuner  *tuner

	reason    string    // why the run ended well: "completed" or "max_steps"
	rate      rateClock // samples since the last step event
	rollbacks int       // provisional updates put back since the last step event (optimistic clipping)

	// position: the next batch is (epoch, batch); step optimizer steps are done.
	step, epoch, batch int

	lastCheckpoint int // step of the newest checkpoint written or loaded

	lastCheckpointDir string // the newest checkpoint this run wrote

	// healing (train.restarts): restarts made, and the state kept in
	// memory every train.snapshot_every steps
	restarts int
	snap     *snapshot

	// curves for the plot
	stepLosses []point
	evalAcc    []point
	evalLoss   []point
}

type point struct{ x, y float64 }

// errInterrupted ends a run stopped by a signal after its checkpoint is written.
var errInterrupted = errors.New("interrupted")

func runTrain(ctx context.Context, o *options, stderr io.Writer) (err error) {
	cfg, err := config.Load(o.config, o.sets)
	if err != nil {
		return badInput(err)
	}
	token, err := readToken(o.tokenFile)
	if err != nil {
		return err
	}
	if err := checkTLS(o.tls); err != nil {
		return err
	}
	log, err := openRunLog(cfg.Log.Dir, o.logFormat, stderr, o.verbose)
	if err != nil {
		return err
	}
	start := time.Now()
	resolveArithmetic(cfg, o.resume)
	r := &trainRun{cfg: cfg, log: log, token: token, tls: o.tls}
	r.logStart()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
		}
		err = r.end(start, err)
	}()
	r.metrics.testLoss.Store(math.NaN())
	r.metrics.testAcc.Store(math.NaN())
	if cfg.Log.Metrics != "" {
		addr, stop, err := serveMetrics(cfg.Log.Metrics, r.metrics.registry())
		if err != nil {
			return fmt.Errorf("log.metrics: %w", err)
		}
		defer stop()
		log.event("metrics").Str("address", addr).Msg("serving Prometheus metrics at http://" + addr + "/metrics")
	}
	if err := r.setup(ctx, o.resume); err != nil {
		if r.eng != nil {
			r.eng.Close()
		}
		return err
	}
	err = r.loop(ctx)
	r.logStages()
	if terr := r.writeTrace(); terr != nil {
		log.Warn().Str("event", "trace").Err(terr).Msg("could not write the trace")
	}
	if r.tuner != nil { // the run ended while tuning
		if cerr := r.closeSpare(r.tuner); cerr != nil && err == nil {
			err = cerr
		}
	}
	if cerr := r.eng.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// logStart logs run_start: the resolved config, the Go runtime and, for a
// built-in set, whose shape is known before it loads, the layers' shapes.
func (r *trainRun) logStart() {
	cfg, log := r.cfg, r.log
	ev := log.event("run_start").Interface("config", cfg.Resolved()).
		Str("go_version", runtime.Version()).Int("cpus", runtime.NumCPU()).
		Int("gomaxprocs", runtime.GOMAXPROCS(0)).Str("log_file", log.path)
	if p := precision(cfg); p.IsBF16() {
		ar := p.Arithmetic()
		ev = ev.Str("bf16_arithmetic", ar.String()).Str("bf16_kernels", ar.Set())
	}
	model := fmt.Sprintf("%d layers", len(cfg.Model.Layers))
	if sample := dataset.SampleShapeOf(cfg.Data.Name); sample != nil {
		specs := modelSpecs(cfg)
		if shapes, err := nn.OutShapes(specs, sample); err == nil {
			ev = ev.Ints("sample_shape", sample).Interface("layer_shapes", shapes)
			model = describeModel(sample, shapes)
			if n, err := nn.ParamCount(specs, sample); err == nil {
				ev = ev.Int("parameters", n)
				model += fmt.Sprintf(" (%s parameters)", thousands(float64(n)))
			}
		}
	}
	data := cfg.Data.Name
	if cfg.Data.Path != "" {
		data += " " + cfg.Data.Path
	}
	ev.Msg(fmt.Sprintf("run started: %s on %s, schedule %s; logs %s, checkpoints %s",
		model, data, cfg.Pipeline.Schedule, cfg.Log.Dir, cfg.Train.CheckpointDir))
	if msg := recomputeWarning(cfg); msg != "" {
		log.Warn().Str("event", "warning").Str("key", "model.recompute").Msg(msg) // zerolog writes msg as "message"
	}
}

// end closes the run that began at start and ended with err: it stops the
// endpoint for workers, logs run_end, writes the plot and closes the log,
// and returns the run's error, an interruption as its own exit status.
func (r *trainRun) end(start time.Time, err error) error {
	log := r.log
	remote.CloseEndpoint() // every engine is closed; its last words reach the log
	if r.text != nil {
		r.text.close() // no batch is being gathered: loop waits for its goroutine
	}
	plot, perr := r.writePlot()
	if perr != nil {
		log.Warn().Str("event", "plot").Err(perr).Msg("could not write the plot")
	}
	wall := time.Since(start)
	ev := log.event("run_end").Int("steps", r.step).Float64("wall_seconds", wall.Seconds())
	switch {
	case errors.Is(err, errInterrupted):
		ev = ev.Str("status", "failed").Str("error", err.Error()).Str("reason", "interrupted")
	case err != nil:
		ev = ev.Str("status", "failed").Str("error", err.Error()).Str("reason", "failed")
	default:
		ev = ev.Str("status", "ok").Str("reason", r.reason)
	}
	if r.lastCheckpointDir != "" {
		ev = ev.Str("checkpoint", r.lastCheckpointDir)
	}
	if plot != "" {
		ev = ev.Str("plot", plot)
	}
	ev.Msg(r.summary(wall, plot, err))
	if cerr := log.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, errInterrupted) {
		err = &exitError{exitInterrupted, err}
	}
	return err
}

// setup loads the data, builds the model and optimizer, and restores the newest
// checkpoint when resuming.
// batchSource gives a run's training batches: a set's shuffled rows
// (dataset.Loader) or a text's random windows.
type batchSource interface {
	BatchSize() int
	BatchesPerEpoch() int
	BatchInto(epoch, i int, x []float32, labels []int, targets []float32) (rows int)
}

// describe is the description of the run's model, trained on train whose
// raw values became features as in says.
func (r *trainRun) describe(train *dataset.Set, in model.Input) model.Description {
	vocab := ""
	if r.text != nil {
		vocab = r.text.vocab.Kind()
	}
	return modelDescription(r.cfg, train, in, vocab)
}

// modelDescription is what a checkpoint says of c's model, trained on
// train (for a text, its meta set: the vocabulary as classes, the block as
// features) whose raw values became features as in says; vocab is a text
// model's vocabulary kind, "" for other models. c.CheckData has run.
func modelDescription(c *config.Config, train *dataset.Set, in model.Input, vocab string) model.Description {
	d := model.Description{Format: model.Format, Layers: modelSpecs(c), Sample: train.SampleShape(), Seed: c.Seed,
		Loss: nn.Loss(c.Loss.Type), Input: in, Data: dataRecord(c), Vocab: vocab}
	if !isRegression(c, train) {
		d.Classes = train.Classes
	}
	return d
}

func (r *trainRun) setup(ctx context.Context, resume bool) error {
	c := r.cfg
	train, val, test, input, err := r.load(ctx)
	if err != nil {
		return err
	}
	r.regression = isRegression(c, train)
	classes := len(train.Classes)
	if r.regression {
		classes = 0
	}
	if err := c.CheckData(train.Features, classes); err != nil {
		return badInput(err)
	}
	r.sample = train.SampleShape()
	r.desc = r.describe(train, input)
	if r.shapes, err = nn.OutShapes(modelSpecs(c), r.sample); err != nil {
		return badInputf("model.layers: %v", err)
	}
	r.features = train.Features
	if msg := microBatchesWarning(c, r.sample); msg != "" {
		r.log.Warn().Str("event", "warning").Str("key", "pipeline.micro_batches").Msg(msg)
	}
	cands := candidates(c, r.sample)
	r.layout, r.tuner = cands[0], newTuner(cands)
	r.test, r.val = test, val // their chunks size the engine's evaluation window
	if r.eng, err = newEngine(c, r.log, r.layout, r); err != nil {
		return err
	}
	if r.tuner != nil {
		r.tuner.engines[0] = r.eng
	}
	r.metrics.actors.setEngine(r.eng)
	r.statsSince = time.Now()
	if r.text != nil {
		s := dataset.NewTokenSampler(r.text.train, c.Data.BlockSize, c.Data.BatchSize, c.Seed)
		r.loader = textBatches{s: s, epochs: s.StepsPerEpoch()}
	} else {
		r.loader = dataset.NewLoader(train, c.Data.BatchSize, c.Data.Shuffle, c.Seed)
	}
	r.early = early{best: math.Inf(1)}
	total := c.Train.Epochs * r.loader.BatchesPerEpoch()
	if c.Train.MaxSteps > 0 {
		total = min(total, c.Train.MaxSteps)
	}
	s := c.Schedule
	if r.sched, err = optim.NewSchedule(s.Type, c.Optimizer.LR, s.WarmupSteps, s.StepSize, s.Gamma, total, s.MinLR); err != nil {
		return badInput(err)
	}
	ev := r.log.event("data").Str("data", c.Data.Name).Int("train_rows", train.Len()).Int("validation_rows", val.Len()).Int("test_rows", test.Len()).
		Int("features", train.Features).Int("classes", len(train.Classes)).
		Str("model", describeModel(r.sample, r.shapes)).Ints("sample_shape", r.sample).Interface("layer_shapes", r.shapes).
		Int("batches_per_epoch", r.loader.BatchesPerEpoch())
	msg := "data loaded"
	if r.text != nil {
		ev = ev.Int("train_tokens", r.text.train.Len()).Int("vocab", r.text.vocab.Size())
		msg += ": " + describeText(r.text)
	}
	ev.Msg(msg)
	if resume {
		return r.restore()
	}
	return r.checkFolder()
}

// checkFolder refuses, before a new run writes into it, a
// train.checkpoint_dir whose newest checkpoint another model or data
// wrote: eval and --resume read the newest, and would take that one. The
// checkpoints of an earlier run of this model stay, with a warning.
func (r *trainRun) checkFolder() error {
	root := r.cfg.Train.CheckpointDir
	dir, ok, err := checkpoint.Latest(root)
	if err != nil || !ok {
		return nil // nothing there yet; a folder that cannot be read fails at the first checkpoint
	}
	meta, err := checkpoint.ReadMeta(dir)
	if err != nil || !sameConfig(r.cfg, meta.ConfigHash) {
		return badInputf("train.checkpoint_dir = %q holds %s, written for another model, data or optimizer: give this run a folder of its own (train.checkpoint_dir, or train.name for checkpoints/<name>), or move those checkpoints away", root, dir)
	}
	r.log.Warn().Str("event", "warning").Str("key", "train.checkpoint_dir").
		Msgf("train.checkpoint_dir = %q holds an earlier run of this model up to step %d: this run's checkpoints join them (--resume continues from the newest)", root, meta.Step)
	return nil
}

// loop is the training loop: next batch, step, log, sometimes evaluate,
// sometimes checkpoint. (epoch, batch) always names the next batch to train on.
func (r *trainRun) loop(ctx context.Context) error {
	c := r.cfg
	nb := r.loader.BatchesPerEpoch()
	total := c.Train.Epochs * nb
	if c.Train.MaxSteps > 0 {
		total = min(total, c.Train.MaxSteps)
	}
	r.progress = newProgress(r.log, total, r.epoch*nb+r.batch, c.Train.Epochs)
	defer r.progress.finish()
	b := r.newBatches()
	defer b.wait()
	r.rate = rateClock{since: time.Now()}
	for {
		err := r.steps(ctx, b)
		if err == nil {
			return nil
		}
		// a step, an evaluation or a checkpoint may find a host lost
		healed, herr := r.heal(err)
		if herr != nil {
			return r.failed(herr)
		}
		if !healed {
			return err
		}
	}
}

// steps trains from the run's position to its end.
func (r *trainRun) steps(ctx context.Context, b *batches) error {
	c := r.cfg
	nb := r.loader.BatchesPerEpoch()
	for ; r.epoch < c.Train.Epochs; r.epoch, r.batch = r.epoch+1, 0 {
		for r.batch < nb {
			if ctx.Err() != nil {
				return r.interrupted()
			}
			if c.Train.MaxSteps > 0 && r.step >= c.Train.MaxSteps {
				r.reason = "max_steps"
				return r.finish()
			}
			x, t := b.next(r.epoch, r.batch)
			lr := r.sched.LR(r.step + 1)
			if err := r.beforeStep(); err != nil {
				return r.failed(err)
			}
			began := time.Now()
			loss, err := r.eng.Step(r.step+1, lr, x, t)
			if err != nil {
				return r.failed(err)
			}
			r.afterStep(x.Dim(0), time.Since(began))
			r.record(loss, lr, x.Dim(0))
			if stop, err := r.everyFewSteps(); stop || err != nil {
				return err
			}
		}
		if stop, err := r.endEpoch(); stop || err != nil {
			return err
		}
	}
	r.reason = "completed"
	return r.finish()
}

// batches gathers the run's mini-batches into two sets of buffers kept for
// the whole run: while a step reads one, a goroutine gathers the next batch
// into the other (the rows of a shuffled epoch are scattered over the set,
// and gathering them costs a step of the MNIST MLP about 5% on one core).
// A step is over when Step returns, and nothing of its input is kept.
type batches struct {
	r        *trainRun
	features int
	perRow   int // labels a row: a text window's tokens, else 1
	bufs     [2]batchBuf
	cur      int           // the buffer the step in hand reads
	ahead    prefetch      // the batch being gathered, while busy
	busy     bool          // a goroutine is gathering ahead
	done     chan struct{} // it sends here when it is over
}

type batchBuf struct {
	xbuf, tbuf []float32
	lbuf       []int
	rows       int
	x          *tensor.Tensor // over xbuf: the same tensor while the batch size is the same
}

// prefetch names a batch gathered ahead, and the buffer it goes into.
type prefetch struct{ epoch, batch, buf int }

func (r *trainRun) newBatches() *batches {
	bs, per := r.loader.BatchSize(), 1
	if r.text != nil {
		per = r.features
	}
	b := &batches{r: r, features: r.features, perRow: per, done: make(chan struct{}, 1)}
	for i := range b.bufs {
		b.bufs[i] = batchBuf{xbuf: make([]float32, bs*r.features), lbuf: make([]int, bs*per), tbuf: make([]float32, bs)}
	}
	return b
}

// fill gathers batch of epoch into buf.
func (b *batches) fill(buf *batchBuf, epoch, batch int) {
	buf.rows = b.r.loader.BatchInto(epoch, batch, buf.xbuf, buf.lbuf, buf.tbuf)
}

// gather is fill on a goroutine of its own, which says when it is over. A
// loader that gathers part of a batch is asked for a few rows at a time, and
// the goroutine yields between parts: it starts as a step does, when the
// step's first products want every core, so it runs in the gaps they leave
// rather than hold a core they wait for (an epoch of the MNIST MLP on two
// cores ran 2-4% faster).
func (b *batches) gather(p prefetch) {
	buf := &b.bufs[p.buf]
	rs, ok := b.r.loader.(rowSource)
	if !ok {
		b.fill(buf, p.epoch, p.batch)
		b.done <- struct{}{}
		return
	}
	rows := rs.BatchLen(p.batch)
	part := max(1, gatherPart/b.features)
	for lo := 0; lo < rows; lo += part {
		rs.RowsInto(p.epoch, p.batch, lo, min(rows, lo+part), buf.xbuf, buf.lbuf, buf.tbuf)
		runtime.Gosched()
	}
	buf.rows = rows
	b.done <- struct{}{}
}

// gatherPart is about how many values gather copies between yields: a few
// microseconds' work.
const gatherPart = 8 << 10

// rowSource is a batchSource that gathers part of a batch at a time.
type rowSource interface {
	BatchLen(i int) int
	RowsInto(epoch, i, lo, hi int, x []float32, labels []int, targets []float32)
}

// next returns batch of epoch, its inputs and targets, and starts
// gathering the batch after it.
func (b *batches) next(epoch, batch int) (*tensor.Tensor, nn.Target) {
	use := 1 - b.cur
	if !b.wait() || b.ahead != (prefetch{epoch, batch, use}) {
		b.fill(&b.bufs[use], epoch, batch)
	}
	b.cur = use
	if batch++; batch == b.r.loader.BatchesPerEpoch() {
		epoch, batch = epoch+1, 0
	}
	if epoch < b.r.cfg.Train.Epochs {
		b.ahead, b.busy = prefetch{epoch, batch, 1 - use}, true
		go b.gather(b.ahead)
	}
	buf := &b.bufs[use]
	if buf.x == nil || buf.x.Dim(0) != buf.rows {
		buf.x = tensor.Wrap32(buf.xbuf[:buf.rows*b.features], buf.rows, b.features)
	}
	var t nn.Target
	if !b.r.regression {
		t.Labels, t.PerRow = buf.lbuf[:buf.rows*b.perRow], b.perRow
	}
	if b.r.regression {
		t = nn.Target{Values: tensor.Wrap32(buf.tbuf[:buf.rows], buf.rows, 1)}
	}
	return buf.x, t
}

// wait waits for the batch being gathered ahead, if any, and reports
// whether there was one: after it no goroutine of b's is left.
func (b *batches) wait() bool {
	if !b.busy {
		return false
	}
	<-b.done
	b.busy = false
	return true
}

// rateClock measures samples/s between step events.
type rateClock struct {
	since   time.Time
	samples int
}

// record counts a step of rows samples with its loss and learning rate:
// the position, the metrics, the curves and, every log.every steps, a step
// event.
func (r *trainRun) record(loss, lr float64, rows int) {
	r.step++
	r.batch++
	r.metrics.steps.Store(int64(r.step))
	r.metrics.loss.Store(loss)
	r.metrics.lr.Store(lr)
	r.rate.samples += rows
	r.stepLosses = append(r.stepLosses, point{float64(r.step), loss})
	r.progress.step(r.epoch, loss, rows)
	r.epochSum.add(loss, rows)
	if r.eng != nil {
		r.rollbacks += r.eng.Rollbacks()
	}
	if r.step%r.cfg.Log.Every == 0 {
		now := time.Now()
		rate := float64(r.rate.samples) / now.Sub(r.rate.since).Seconds()
		r.metrics.rate.Store(rate)
		ev := r.log.event("step").Int("epoch", r.epoch+1).Int("step", r.step).Float64("loss", loss).
			Float64("lr", lr).Float64("samples_per_sec", rate)
		if r.text != nil {
			ev = ev.Float64("tokens_per_sec", rate*float64(r.features))
		}
		if r.eng != nil && r.eng.Plan().Optimistic {
			ev = ev.Int("rollbacks", r.rollbacks) // since the last step event
		}
		ev.Msg("")
		r.rate, r.rollbacks = rateClock{since: now}, 0
	}
}

// everyFewSteps evaluates and checkpoints when train.eval_every and
// train.checkpoint_every say; stop reports that the run ended (early
// stopping), with finish's error.
func (r *trainRun) everyFewSteps() (stop bool, err error) {
	c := r.cfg
	if c.Train.EvalEvery > 0 && r.step%c.Train.EvalEvery == 0 {
		if err := r.evaluate(true); err != nil {
			return true, err
		}
		if r.stopEarly() {
			return true, r.finish()
		}
	}
	if c.Train.CheckpointEvery > 0 && r.step%c.Train.CheckpointEvery == 0 {
		if err := r.checkpoint(); err != nil {
			return true, err
		}
	}
	if c.Train.SnapshotEvery > 0 && r.step%c.Train.SnapshotEvery == 0 && r.lastCheckpoint != r.step {
		if r.snap == nil {
			r.snap = new(snapshot)
		}
		if err := r.snap.take(r); err != nil {
			return true, fmt.Errorf("snapshot at step %d: %w", r.step, err)
		}
	}
	return false, nil
}

// endEpoch evaluates, logs the stages and checkpoints at an epoch's end
// unless the keys say every few steps, and logs the epoch's summary; stop
// reports that the run ended (early stopping), with finish's error.
func (r *trainRun) endEpoch() (stop bool, err error) {
	c := r.cfg
	if c.Train.EvalEvery == 0 {
		if err := r.evaluate(true); err != nil {
			return true, err
		}
	}
	r.logStages()
	if c.Train.CheckpointEvery == 0 {
		if err := r.checkpoint(); err != nil {
			return true, err
		}
	}
	r.epochSummary()
	if r.stopEarly() {
		return true, r.finish()
	}
	return false, nil
}

// finish evaluates and checkpoints the final state unless that was just
// done; with a validation split it then evaluates the test split, with the
// best weights under early stopping.
func (r *trainRun) finish() error {
	if n := len(r.evalLoss); n == 0 || r.evalLoss[n-1].x != float64(r.step) {
		if err := r.evaluate(false); err != nil {
			return err
		}
	}
	if r.lastCheckpoint != r.step {
		if err := r.checkpoint(); err != nil {
			return err
		}
	}
	if r.val != nil {
		return r.finalTest()
	}
	return nil
}

// interrupted writes a checkpoint at the current position and ends the run.
func (r *trainRun) interrupted() error {
	if err := r.checkpoint(); err != nil {
		return fmt.Errorf("interrupted, and the checkpoint failed: %w", err)
	}
	return fmt.Errorf("%w at step %d: resume with --resume", errInterrupted, r.step)
}

// failed reports a training failure; the last good checkpoint stays as it is.
func (r *trainRun) failed(err error) error {
	var nf *nn.NonFiniteError
	if errors.As(err, &nf) {
		return fmt.Errorf("training failed: %v (the last good checkpoint in %q is kept)", err, r.cfg.Train.CheckpointDir)
	}
	return fmt.Errorf("training failed at step %d: %w", r.step+1, err)
}

// evaluate logs the model's loss and accuracy on the validation split, or
// on the test split when there is none. At a periodic evaluation (not the
// extra one at a run's end, which a resumed run would not repeat) a better
// validation loss saves the weights as the best checkpoint, and a worse one
// counts towards early stopping.
func (r *trainRun) evaluate(periodic bool) error {
	set, split := r.test, "test"
	if r.val != nil {
		set, split = r.val, "validation"
	}
	loss, _, ok := r.evalOn(set, split, nil)
	if !ok || r.val == nil || !periodic {
		return nil
	}
	return r.early.saw(r, loss)
}

// evalGCPercent is the GOGC an evaluation during training runs at.
const evalGCPercent = 10

// evalOn evaluates the engine's model on set and logs the eval event,
// with fields added by more; ok is false when there was nothing to do or
// the evaluation failed (logged).
func (r *trainRun) evalOn(set *dataset.Set, split string, more func(*zerolog.Event) *zerolog.Event) (loss, acc float64, ok bool) {
	if set == nil || set.Len() == 0 {
		return 0, 0, false
	}
	// Training reuses its buffers; an evaluation allocates its activations
	// chunk after chunk. At Go's default GOGC of 100 that garbage may grow
	// to the size of the whole live heap (a GPT-2 small run's weights,
	// moments and buffers: 6 GB more) before it is collected.
	defer debug.SetGCPercent(debug.SetGCPercent(evalGCPercent))
	loss, acc, err := r.eng.Evaluate(set.X, target(set, r.regression), evalChunk(set))
	if err != nil {
		r.log.Warn().Str("event", "eval").Err(err).Msg("evaluation failed")
		return 0, 0, false
	}
	if split == "test" {
		r.metrics.testLoss.Store(loss)
		r.metrics.testAcc.Store(acc)
	}
	ev := r.log.event("eval").Int("epoch", r.epoch+1).Int("step", r.step).Str("split", split).Float64("loss", loss)
	if !math.IsNaN(acc) {
		ev = ev.Float64("accuracy", acc)
	}
	if r.text != nil {
		ev = ev.Float64("bits_per_char", bitsPerChar(loss)).Float64("bits_per_byte", bitsPerByte(loss, r.text.vocab, set.Labels))
	}
	if more != nil {
		ev = more(ev)
	}
	ev.Msg("")
	r.lastEval = evalPoint{step: r.step, split: split, loss: loss, acc: acc}
	if split == "test" && more == nil || split == "validation" { // the plot's points: the periodic evaluations
		if !math.IsNaN(acc) {
			r.evalAcc = append(r.evalAcc, point{float64(r.step), acc})
		}
		r.evalLoss = append(r.evalLoss, point{float64(r.step), loss})
	}
	return loss, acc, true
}

// checkpoint saves weights, optimizer state and the position of the next batch.
func (r *trainRun) checkpoint() error {
	dir, err := r.save(r.cfg.Train.CheckpointDir)
	if err != nil {
		return err
	}
	r.lastCheckpoint, r.lastCheckpointDir = r.step, dir
	r.log.event("checkpoint").Int("step", r.step).Str("path", dir).Msg("")
	if keep := r.cfg.Train.KeepCheckpoints; keep > 0 { // the best lives in a folder of its own
		if _, err := checkpoint.Prune(r.cfg.Train.CheckpointDir, keep); err != nil {
			return fmt.Errorf("train.keep_checkpoints = %d: %w", keep, err)
		}
	}
	return nil
}

// save writes a checkpoint of the current state under root.
func (r *trainRun) save(root string) (dir string, err error) {
	err = r.eng.ReadState(func(weights map[string]*tensor.Tensor, st optim.State) error {
		dir, err = r.write(root, weights, st)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("checkpoint at step %d: %w", r.step, err)
	}
	return dir, nil
}

// write writes a checkpoint of weights and st under root.
func (r *trainRun) write(root string, weights map[string]*tensor.Tensor, st optim.State) (string, error) {
	meta := checkpoint.Meta{
		Version: 1, Step: r.step, Epoch: r.epoch, Batch: r.batch, Seed: r.cfg.Seed,
		OptimizerType: st.Kind, OptimizerStep: st.Step, ConfigHash: configHash(r.cfg), Precision: precision(r.cfg).String(),
		Extra: map[string]any{"optimizer_params": st.NumParams}, BF16Arithmetic: bf16Arithmetic(r.cfg),
	}
	r.early.record(meta.Extra)
	var err error
	if meta.Model, err = json.Marshal(r.desc); err != nil {
		return "", err
	}
	if r.batch >= r.loader.BatchesPerEpoch() {
		meta.Epoch, meta.Batch = r.epoch+1, 0
	}
	var files map[string][]byte
	if r.text != nil && r.text.tokenizer != nil {
		files = map[string][]byte{dataset.TokenizerFile: r.text.tokenizer}
	}
	return checkpoint.SaveFiles(root, meta, weights, st.Tensors, files)
}

// restore continues from the newest checkpoint in train.checkpoint_dir.
func (r *trainRun) restore() error {
	root := r.cfg.Train.CheckpointDir
	dir, ok, err := checkpoint.Latest(root)
	if err != nil {
		return badInputf("--resume: %v", err)
	}
	if !ok {
		return badInputf("--resume: no checkpoint in train.checkpoint_dir = %q", root)
	}
	meta, model, opt, err := checkpoint.Load(dir)
	if err != nil {
		return badInputf("--resume: %v", err)
	}
	if !sameConfig(r.cfg, meta.ConfigHash) {
		return badInputf("--resume: %s was written for a different model, data or optimizer than this config", dir)
	}
	if err := samePrecision(dir, meta.Precision, precision(r.cfg).String()); err != nil {
		return err
	}
	if err := r.sameTokenizer(dir); err != nil {
		return err
	}
	if here := bf16Arithmetic(r.cfg); meta.BF16Arithmetic != "" && here != "" && meta.BF16Arithmetic != here {
		return badInputf("--resume: %s was trained with train.bf16_arithmetic = %q, not %q, which rounds its bf16 products differently: set train.bf16_arithmetic = %q (or \"auto\") to resume it", dir, meta.BF16Arithmetic, here, meta.BF16Arithmetic)
	}
	nparams := 0
	if v, ok := meta.Extra["optimizer_params"].(json.Number); ok {
		n, err := v.Int64()
		if err != nil {
			return badInputf("--resume: %s: optimizer_params %q: %v", dir, v, err)
		}
		nparams = int(n)
	}
	st := optim.State{Kind: meta.OptimizerType, Step: meta.OptimizerStep, NumParams: nparams, Tensors: opt}
	if err := r.eng.Restore(model, st); err != nil {
		return badInputf("--resume: %s: %v", dir, err)
	}
	r.step, r.epoch, r.batch = meta.Step, meta.Epoch, meta.Batch
	r.lastCheckpoint = r.step
	if err := r.early.restore(meta.Extra); err != nil {
		return badInputf("--resume: %s: %v", dir, err)
	}
	r.log.Info().Str("event", "resume").Int("step", r.step).Int("epoch", r.epoch+1).Int("batch", r.batch).Str("path", dir).Msg("resumed")
	return nil
}

// sameTokenizer refuses to resume a bpe run whose vocabulary, trained
// again from data.path, is not the checkpoint's: the text changed, and
// the ids would no longer mean what the weights learnt.
func (r *trainRun) sameTokenizer(dir string) error {
	if r.text == nil || r.text.tokenizer == nil {
		return nil
	}
	saved, err := os.ReadFile(filepath.Join(dir, dataset.TokenizerFile))
	if err != nil {
		return badInputf("--resume: %s: %v", dir, err)
	}
	if !bytes.Equal(saved, r.text.tokenizer) {
		return badInputf("--resume: %s: its %s is not the vocabulary data.path %q trains now: the text changed since", dir, dataset.TokenizerFile, r.cfg.Data.Path)
	}
	return nil
}

// bf16Arithmetic is the arithmetic of a bf16 run's products' sums, "" for
// fp32.
func bf16Arithmetic(c *config.Config) string {
	if p := precision(c); p.IsBF16() {
		return p.Arithmetic().String()
	}
	return ""
}

// samePrecision refuses to resume a run in another precision than it was
// saved in: the resumed losses would not be the unbroken run's.
func samePrecision(dir, saved, want string) error {
	if saved == "" {
		saved = "fp32" // checkpoints from before train.precision
	}
	if saved != want {
		return badInputf("--resume: %s was trained with train.precision = %q, not %q: set train.precision = %q to resume it", dir, saved, want, saved)
	}
	return nil
}

// dataKeys are the [data] keys a checkpoint's data position depends on;
// validation_fraction only when set, so that older checkpoints still match.
func dataKeys(c *config.Config) []any {
	d := c.Data
	keys := []any{d.Name, d.BatchSize, d.Shuffle, d.TestFraction, d.LabelColumn}
	if d.ValidationFraction != 0 {
		keys = append(keys, d.ValidationFraction)
	}
	if isText(c) {
		keys = append(keys, d.Vocab, d.BlockSize)
		if d.VocabSize != 0 {
			keys = append(keys, d.VocabSize)
		}
	}
	return keys
}

// configHash identifies what a checkpoint's tensors and data position depend
// on: the layers, not model.recompute, which changes no bit (a run may
// resume with another), so hashes are those written before it existed.
func configHash(c *config.Config) string {
	return hashOf(c, struct {
		Layers []config.Layer `json:"layers"`
	}{c.Model.Layers})
}

func hashOf(c *config.Config, model any) string {
	b, _ := json.Marshal(struct {
		Seed                  uint64
		Data, Model, Loss, Op any
	}{c.Seed, dataKeys(c), model, c.Loss, c.Optimizer.Type})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// legacyTypes are the layer types of checkpoints older than nn.Spec.
var legacyTypes = []string{"linear", "relu", "leaky_relu", "prelu", "sigmoid", "tanh", "gelu", "softmax", "dropout", "layernorm"}

// legacyConfigHash is configHash as pipetrain wrote it before layers were
// nn.Specs (state.json without "model"): each layer with the seven keys of
// the day, their defaults filled in. "" when the model has a later type or
// the data a later key, which no such checkpoint can have.
func legacyConfigHash(c *config.Config) string {
	type layer struct {
		Type        string  `json:"type"`
		Units       int     `json:"units"`
		Init        nn.Init `json:"init"`
		Shards      int     `json:"shards"`
		Alpha       float64 `json:"alpha"`
		P           float64 `json:"p"`
		Approximate bool    `json:"approximate"`
	}
	if len(dataKeys(c)) != 5 {
		return ""
	}
	layers := make([]layer, len(c.Model.Layers))
	for i, l := range c.Model.Layers {
		if !slices.Contains(legacyTypes, l.Type) {
			return ""
		}
		layers[i] = layer{Type: l.Type, Units: l.Units, Init: cmp.Or(l.Init, nn.XavierUniform), Shards: max(1, l.Shards),
			Alpha: cmp.Or(l.Alpha, 0.01), P: cmp.Or(l.P, 0.1), Approximate: l.Approximate}
	}
	return hashOf(c, struct {
		Layers []layer `json:"layers"`
	}{layers})
}

// sameConfig reports whether a checkpoint with config hash saved was
// written for c's model, data and optimizer.
func sameConfig(c *config.Config, saved string) bool {
	return saved == configHash(c) || saved == legacyConfigHash(c)
}

// summary is the run_end line a person reads: the steps and time, the
// rate, the last evaluation, the checkpoints and the plot.
func (r *trainRun) summary(wall time.Duration, plot string, err error) string {
	var b strings.Builder
	switch {
	case errors.Is(err, errInterrupted):
		b.WriteString("run interrupted")
	case err != nil:
		b.WriteString("run failed")
	default:
		b.WriteString("run ended")
	}
	fmt.Fprintf(&b, " at step %d after %s", r.step, clock(wall))
	if p := r.progress; p != nil && p.rows > 0 && p.lastStep.After(p.start) {
		rate := float64(p.rows) / p.lastStep.Sub(p.start).Seconds() // the steps', not the setup's or the last evaluation's
		if r.text != nil {
			fmt.Fprintf(&b, " (%s tokens/s)", thousands(rate*float64(r.cfg.Data.BlockSize)))
		} else {
			fmt.Fprintf(&b, " (%s samples/s)", thousands(rate))
		}
	}
	if n := len(r.stepLosses); n > 0 { // the mean of the last steps: one batch's loss is noisy
		k := min(n, 50)
		sum := 0.0
		for _, p := range r.stepLosses[n-k:] {
			sum += p.y
		}
		fmt.Fprintf(&b, "; train loss %.4g", sum/float64(k))
	}
	if e := r.lastEval; e.split != "" {
		fmt.Fprintf(&b, ", %s loss %.4g", e.split, e.loss)
		if e.acc == e.acc {
			fmt.Fprintf(&b, ", accuracy %.2f%%", 100*e.acc)
		}
	}
	if r.lastCheckpointDir != "" {
		b.WriteString("; checkpoint " + r.lastCheckpointDir)
	}
	if r.val != nil && r.early.bestStep > 0 {
		fmt.Fprintf(&b, " (best: %s)", checkpoint.StepDir(filepath.Join(r.cfg.Train.CheckpointDir, bestDir), r.early.bestStep))
	}
	if plot != "" {
		b.WriteString("; plot " + plot)
	}
	return b.String()
}
