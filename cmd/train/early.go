package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/optim"
)

// bestDir is where, under train.checkpoint_dir, the checkpoint of the best
// validation loss is kept (Keras' ModelCheckpoint with save_best_only).
const bestDir = "best"

// early is the state of validation: the best loss, when it was seen, and
// how many evaluations have not bettered it (Keras' EarlyStopping). Every
// checkpoint records it, so that a resumed run stops where the unbroken
// one would.
type early struct {
	best     float64 // +Inf before the first validation
	bestStep int
	since    int
}

// saw takes a validation loss: a better one is saved as the best checkpoint.
func (e *early) saw(r *trainRun, loss float64) error {
	if !(loss < e.best) {
		e.since++
		return nil
	}
	e.best, e.bestStep, e.since = loss, r.step, 0
	root := filepath.Join(r.cfg.Train.CheckpointDir, bestDir)
	dir, err := r.save(root)
	if err != nil {
		return fmt.Errorf("best checkpoint: %w", err)
	}
	if _, err := checkpoint.Prune(root, 1); err != nil {
		return fmt.Errorf("best checkpoint: %w", err)
	}
	r.log.event("checkpoint").Int("step", r.step).Str("path", dir).Bool("best", true).Float64("validation_loss", loss).Msg("")
	return nil
}

// stopEarly reports whether train.early_stop evaluations have passed
// without a better validation loss, and if so says why the run ends.
func (r *trainRun) stopEarly() bool {
	n := r.cfg.Train.EarlyStop
	if n == 0 || r.early.since < n {
		return false
	}
	r.reason = "early_stop"
	r.log.event("early_stop").Int("step", r.step).Int("best_step", r.early.bestStep).Float64("best_validation_loss", r.early.best).
		Int("evaluations_since", r.early.since).Msg("no better validation loss: stopping")
	return true
}

// finalTest evaluates the test split once, at the run's end: with the best
// checkpoint's weights under early stopping, else with the weights as they are.
func (r *trainRun) finalTest() error {
	if r.cfg.Train.EarlyStop == 0 || r.early.bestStep == 0 {
		r.evalOn(r.test, "test", func(ev *zerolog.Event) *zerolog.Event { return ev.Str("weights", "final") })
		return nil
	}
	root := filepath.Join(r.cfg.Train.CheckpointDir, bestDir)
	dir, ok, err := checkpoint.Latest(root)
	if err != nil || !ok {
		return fmt.Errorf("the best checkpoint in %s: %v", root, err)
	}
	meta, weights, opt, err := checkpoint.Load(dir)
	if err != nil {
		return fmt.Errorf("the best checkpoint: %w", err)
	}
	n, err := number(meta.Extra["optimizer_params"])
	if err != nil {
		return fmt.Errorf("the best checkpoint %s: optimizer_params: %v", dir, err)
	}
	if err := r.eng.Restore(weights, optim.State{Kind: meta.OptimizerType, Step: meta.OptimizerStep, NumParams: n, Tensors: opt}); err != nil {
		return fmt.Errorf("restoring the best checkpoint %s: %w", dir, err)
	}
	r.evalOn(r.test, "test", func(ev *zerolog.Event) *zerolog.Event {
		return ev.Str("weights", "best").Int("weights_step", meta.Step)
	})
	return nil
}

// record writes the state into a checkpoint's extra fields.
func (e *early) record(extra map[string]any) {
	if e.bestStep == 0 {
		return // +Inf has no JSON
	}
	extra["best_validation_loss"], extra["best_step"], extra["evaluations_since_best"] = e.best, e.bestStep, e.since
}

// restore reads the state from a checkpoint's extra fields, if it has them.
func (e *early) restore(extra map[string]any) error {
	*e = early{best: math.Inf(1)}
	v, ok := extra["best_validation_loss"].(json.Number)
	if !ok {
		return nil
	}
	best, err1 := v.Float64()
	step, err2 := number(extra["best_step"])
	since, err3 := number(extra["evaluations_since_best"])
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return fmt.Errorf("early stopping's state: %v", err)
		}
	}
	*e = early{best: best, bestStep: step, since: since}
	return nil
}

func number(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%v is not a number", v)
	}
	i, err := n.Int64()
	return int(i), err
}
