package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// A run over workers that loses one starts again by itself
// (train.restarts): from the newest of its in-memory snapshot
// (train.snapshot_every) and its last checkpoint, on a new engine over the
// same hosts once the lost one answers again (train.restart_wait), or over
// the hosts left (pipeline.hosts_min). The bits do not depend on the
// layout, so the run ends as an unbroken one would.

// snapshot is the training state in memory at a step: its tensors are
// kept from one snapshot to the next, so that taking one allocates nothing
// after the first.
type snapshot struct {
	step, epoch, batch int
	early              early
	weights            map[string]*tensor.Tensor
	state              optim.State
}

// take copies the engine's state at the run's position into s.
func (s *snapshot) take(r *trainRun) error {
	return r.eng.ReadState(func(weights map[string]*tensor.Tensor, st optim.State) error {
		s.weights = keep(s.weights, weights)
		tensors := keep(s.state.Tensors, st.Tensors)
		s.state = st
		s.state.Tensors = tensors
		s.step, s.epoch, s.batch, s.early = r.step, r.epoch, r.batch, r.early
		return nil
	})
}

// keep copies src into dst's tensors where they fit and returns dst.
func keep(dst, src map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	if dst == nil {
		dst = make(map[string]*tensor.Tensor, len(src))
	}
	for name := range dst {
		if src[name] == nil {
			delete(dst, name)
		}
	}
	for name, t := range src {
		if d := dst[name]; d != nil && d.DType() == t.DType() && d.SameShape(t) {
			d.CopyFrom(t)
		} else {
			dst[name] = t.Clone()
		}
	}
	return dst
}

// heal starts the run again after err, when err is a lost host and
// restarts are left, and reports whether it did.
func (r *trainRun) heal(err error) (bool, error) {
	var lost *actors.LostError
	if !errors.As(err, &lost) || r.restarts >= r.cfg.Train.Restarts {
		return false, nil
	}
	r.restarts++
	at := r.step
	r.log.Warn().Str("event", "host_lost").Str("host", lost.Host).Int("step", at+1).Str("why", lost.Why).
		Msgf("lost host %s at step %d: restarting (%d of %d)", lost.Host, at+1, r.restarts, r.cfg.Train.Restarts)
	if r.tuner != nil { // the layout in hand stays: no more trials
		if cerr := r.closeSpare(r.tuner); cerr != nil {
			r.log.Warn().Str("event", "host_lost").Err(cerr).Msg("closing the tuner's engines")
		}
		r.tuner = nil
	}
	_ = r.eng.Close() // its failure is the lost host's
	r.eng = nil
	hosts, err := r.reconnect(lost.Host)
	if err != nil {
		return false, fmt.Errorf("%w; restart %d of %d: %w", lost, r.restarts, r.cfg.Train.Restarts, err)
	}
	from, err := r.rewind()
	if err != nil {
		return false, fmt.Errorf("%w; restart %d of %d: %w", lost, r.restarts, r.cfg.Train.Restarts, err)
	}
	r.stepLosses, r.evalLoss, r.evalAcc = upTo(r.stepLosses, r.step), upTo(r.evalLoss, r.step), upTo(r.evalAcc, r.step)
	r.rate = rateClock{since: time.Now()}
	r.log.event("restart").Str("host", lost.Host).Int("from_step", r.step).Int("steps_lost", at-r.step).
		Str("from", from).Strs("hosts", hosts).Int("restarts_left", r.cfg.Train.Restarts-r.restarts).
		Msgf("restarted from step %d (%s) on %d hosts, %d steps lost", r.step, from, len(hosts), at-r.step)
	return true, nil
}

// reconnect builds a new engine for the run's layout: over the same hosts
// as soon as the lost one answers, within train.restart_wait, or then over
// the hosts left when pipeline.hosts_min allows. It returns the hosts.
func (r *trainRun) reconnect(gone string) ([]string, error) {
	c := *r.cfg
	deadline := time.Now().Add(c.Train.RestartWaitDuration())
	var last error
	for {
		eng, err := newEngine(&c, r.log, r.layout, r)
		if err == nil {
			r.useEngine(eng)
			return c.Pipeline.Hosts, nil
		}
		last = err
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(restartPoll)
	}
	left := slices.DeleteFunc(slices.Clone(c.Pipeline.Hosts), func(h string) bool { return h == gone })
	if c.Pipeline.HostsMin == 0 || len(left) < c.Pipeline.HostsMin || len(left) == len(c.Pipeline.Hosts) {
		return nil, fmt.Errorf("host %s did not come back within train.restart_wait = %s: %v", gone, c.Train.RestartWait, last)
	}
	c.Pipeline.Hosts = left
	eng, err := newEngine(&c, r.log, r.layout, r)
	if err != nil {
		return nil, fmt.Errorf("host %s did not come back within train.restart_wait = %s, and the %d hosts left failed: %v", gone, c.Train.RestartWait, len(left), err)
	}
	r.useEngine(eng)
	return left, nil
}

// restartPoll is how often a restart asks the hosts again.
const restartPoll = 500 * time.Millisecond

// useEngine makes eng the run's engine.
func (r *trainRun) useEngine(eng *pipeline.Engine) {
	r.eng, r.statsSince = eng, time.Now()
	r.metrics.actors.setEngine(eng)
}

// rewind restores the newest state the run kept: its snapshot in memory,
// its last checkpoint, or else its first weights (a new engine's), and
// returns which.
func (r *trainRun) rewind() (string, error) {
	s := r.snap
	switch {
	case s != nil && s.step >= r.lastCheckpoint && s.weights != nil:
		if err := r.eng.Restore(s.weights, s.state); err != nil {
			return "", err
		}
		r.step, r.epoch, r.batch, r.early = s.step, s.epoch, s.batch, s.early
		return "snapshot", nil
	case r.lastCheckpoint > 0:
		if err := r.restore(); err != nil {
			return "", err
		}
		return "checkpoint", nil
	}
	r.step, r.epoch, r.batch, r.early = 0, 0, 0, early{best: math.Inf(1)}
	return "start", nil
}

// upTo returns the points of a curve up to step: those after it are done again.
func upTo(ps []point, step int) []point {
	return slices.DeleteFunc(ps, func(p point) bool { return p.x > float64(step) })
}
