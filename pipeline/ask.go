package pipeline

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/actors"
)

// The engine's questions to its actors, answered through futures, in wire
// form to actors in other processes.

// stepTimeout bounds a step or evaluation; the watchdog ends a stuck one first.
const stepTimeout = 24 * time.Hour

// queryTimeout bounds questions to idle actors (parameters, state, counters).
const queryTimeout = time.Minute

func (e *Engine) request(pid *actor.PID, msg any) (any, error) {
	d := queryTimeout
	switch msg.(type) {
	case *actors.RunStep, *actors.RunEval:
		d = stepTimeout
	}
	f, err := e.future(pid, msg, d)
	if err != nil {
		return nil, err
	}
	return e.answer(f)
}

// future asks pid, in wire form if it lives in another process.
func (e *Engine) future(pid *actor.PID, msg any, d time.Duration) (*actor.Future, error) {
	if !e.isRemote(pid) {
		e.graph.Sent(pid)
		return e.root.RequestFuture(pid, msg, d), nil
	}
	w, err := actors.Encode(msg, e.run, "engine")
	if err != nil {
		return nil, err
	}
	hs := e.hosts
	h := hs.HostIndex(pid.Address)
	if h < 0 {
		return nil, fmt.Errorf("pipeline: %s runs on no host of this engine", pid)
	}
	f := actor.NewFuture(e.system, d)
	if !hs.Ask(h, f) {
		return nil, e.lost(hs.LostWhy(h))
	}
	e.root.RequestWithCustomSender(pid, w, f.PID())
	return f, nil
}

// lost is the error of a question to a lost host.
func (e *Engine) lost(l *actors.Lost) error {
	return &actors.LostError{Host: l.Host, Stages: l.Stages, Step: e.step, Why: l.Why}
}

// answer waits for f's answer, decoded from its wire form if it has one. A
// question to a host is answered by the host's loss, if it comes first, and
// an undeliverable one names the host.
func (e *Engine) answer(f *actor.Future) (any, error) {
	res, err := f.Result()
	h := -1
	if e.hosts != nil {
		h = e.hosts.Answered(f)
	}
	if l, ok := res.(*actors.Lost); ok {
		return nil, e.lost(l)
	}
	if err != nil {
		if h >= 0 {
			return nil, fmt.Errorf("pipeline: host %s: %w", e.hosts.Host(h), err)
		}
		return nil, err
	}
	if m, ok := res.(proto.Message); ok {
		msg, run, err := actors.Decode(m)
		if err != nil {
			return nil, err
		}
		if run != e.run {
			return nil, fmt.Errorf("pipeline: an answer for run %s generation %x, not this one", run.ID, run.Gen)
		}
		return msg, nil
	}
	return res, nil
}

// askAll sends msg(i) to every stage actor of replica 0, the owners of the
// weights, at once and returns their answers in stage order: the stages
// answer in parallel, not one round trip after the other.
func (e *Engine) askAll(msg func(i int) any) ([]any, error) {
	return e.askEach(e.stages[:e.plan.PerReplica()], msg)
}

// askEach sends msg(i) to pids[i], all at once, and returns their answers
// in order.
func (e *Engine) askEach(pids []*actor.PID, msg func(i int) any) ([]any, error) {
	futures := make([]*actor.Future, len(pids))
	for i, pid := range pids {
		f, err := e.future(pid, msg(i), queryTimeout)
		if err != nil {
			return nil, err
		}
		futures[i] = f
	}
	out := make([]any, len(futures))
	for i, f := range futures {
		res, err := e.answer(f)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}
