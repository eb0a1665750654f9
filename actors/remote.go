package actors

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// Run names the run and the engine generation an actor works for. Messages
// that cross processes carry it, and an actor drops one that is not for its
// own run: a stale run's or a stale restart's message never joins a live step.
// In-process messages carry nothing: they cannot be stale.
type Run struct {
	ID  string
	Gen uint64
}

func runOf(w *wire.Run) Run {
	if w == nil {
		return Run{}
	}
	return Run{ID: w.Id, Gen: w.Gen}
}

// RunOf returns the run a wire message is for and the name of the actor
// that sent it, or false for a message that is not a wire message.
func RunOf(msg any) (run Run, from string, ok bool) {
	if a, ok := msg.(*Arrived); ok {
		return a.Run, a.From, true
	}
	m, ok := msg.(interface{ GetRun() *wire.Run })
	if !ok {
		return Run{}, "", false
	}
	return runOf(m.GetRun()), m.GetRun().GetFrom(), true
}

// Host is the network address (host:port) of an actor address, which names
// one incarnation of a process: host:port, then "/" and a number of that
// incarnation's own.
func Host(addr string) string {
	host, _, _ := strings.Cut(addr, "/")
	return host
}

// isRemote reports whether pid lives in another process than self.
func isRemote(self, pid *actor.PID) bool {
	return pid != nil && self != nil && pid.Address != self.Address
}

// ToPid and FromPid convert actor addresses.
func ToPid(p *actor.PID) *wire.Pid {
	if p == nil {
		return nil
	}
	return &wire.Pid{Address: p.Address, Id: p.Id}
}

func FromPid(p *wire.Pid) *actor.PID {
	if p == nil {
		return nil
	}
	return actor.NewPID(p.Address, p.Id)
}

func toPids(ps []*actor.PID) []*wire.Pid {
	out := make([]*wire.Pid, len(ps))
	for i, p := range ps {
		out[i] = ToPid(p)
	}
	return out
}

func fromPids(ps []*wire.Pid) []*actor.PID {
	if len(ps) == 0 {
		return nil // as in one process
	}
	out := make([]*actor.PID, len(ps))
	for i, p := range ps {
		out[i] = FromPid(p)
	}
	return out
}

// ToState and FromState convert an optimizer's state.
func ToState(s *optim.State) *wire.OptimState {
	if s == nil {
		return nil
	}
	w := &wire.OptimState{Kind: s.Kind, Step: int64(s.Step), NumParams: int64(s.NumParams), Tensors: map[string]*wire.Tensor{}}
	for k, t := range s.Tensors {
		w.Tensors[k] = wire.FromTensor(t)
	}
	return w
}

func FromState(w *wire.OptimState) (optim.State, error) {
	s := optim.State{Kind: w.GetKind(), Step: int(w.GetStep()), NumParams: int(w.GetNumParams()), Tensors: map[string]*tensor.Tensor{}}
	for k, t := range w.GetTensors() {
		x, err := t.ToTensor()
		if err != nil {
			return optim.State{}, fmt.Errorf("optimizer state %q: %w", k, err)
		}
		s.Tensors[k] = x
	}
	return s, nil
}

func toTensors(ts []*tensor.Tensor) []*wire.Tensor {
	out := make([]*wire.Tensor, len(ts))
	for i, t := range ts {
		out[i] = wire.FromTensor(t)
	}
	return out
}

func fromTensors(ws []*wire.Tensor) ([]*tensor.Tensor, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	out := make([]*tensor.Tensor, len(ws))
	for i, w := range ws {
		t, err := w.ToTensor()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		out[i] = t
	}
	return out, nil
}

func toTied(ls []TiedLink) []*wire.TiedLink {
	var out []*wire.TiedLink
	for _, l := range ls {
		w := &wire.TiedLink{Tie: int64(l.Tie), Param: int64(l.Param), Head: l.Head, Other: int64(l.Other)}
		if l.Peer != nil {
			w.Peer = ToPid(l.Peer)
		}
		out = append(out, w)
	}
	return out
}

func fromTied(ws []*wire.TiedLink) []TiedLink {
	var out []TiedLink
	for _, w := range ws {
		l := TiedLink{Tie: int(w.Tie), Param: int(w.Param), Head: w.Head, Other: int(w.Other)}
		if w.Peer != nil {
			l.Peer = FromPid(w.Peer)
		}
		out = append(out, l)
	}
	return out
}

func toErr(err error) *wire.Error {
	if err == nil {
		return nil
	}
	return wire.FromError(err)
}

func fromErr(w *wire.Error) error {
	if w == nil {
		return nil
	}
	return w.Err()
}

// Encode returns the wire form of an in-process message from the actor
// named from, for a receiver in another process; the tensors are copied.
// Only the messages a stage exchanges with its neighbours and its engine
// have one.
func Encode(msg any, run Run, from string) (proto.Message, error) {
	r := &wire.Run{Id: run.ID, Gen: run.Gen, From: from}
	switch m := msg.(type) {
	case *Forward:
		return &wire.Forward{Run: r, Step: int64(m.Step), Micro: int64(m.Micro), Row: int64(m.Row), Total: int64(m.Total),
			Seq: int64(m.Seq), Micros: int64(m.Micros), Shard: int64(m.Shard), Eval: m.Eval, X: wire.FromTensor(m.X),
			First: int64(m.First), Share: int64(m.Share), Replicas: int64(m.Replicas)}, nil
	case *Backward:
		return &wire.Backward{Run: r, Step: int64(m.Step), Micro: int64(m.Micro), Shard: int64(m.Shard), Dy: wire.FromTensor(m.DY)}, nil
	case *BackwardDone:
		return &wire.BackwardDone{Run: r, Step: int64(m.Step), Micro: int64(m.Micro), Actor: int64(m.Actor), All: m.All}, nil
	case *TiedGrad:
		return &wire.TiedGrad{Run: r, Step: int64(m.Step), Tie: int64(m.Tie), G: wire.FromTensor(m.G)}, nil
	case *GradTurn:
		return &wire.GradTurn{Run: r, Step: int64(m.Step), Seq: int64(m.Seq), Part: int64(m.Part), Rows: m.Rows, Grads: toTensors(m.Grads), Buffers: toTensors(m.Buffers)}, nil
	case *Weights:
		return &wire.Weights{Run: r, Step: int64(m.Step), Part: int64(m.Part), Values: toTensors(m.Values)}, nil
	case *GradNorm:
		return &wire.GradNorm{Run: r, Step: int64(m.Step), Actor: int64(m.Actor), Sums: append([]float64(nil), m.Sums...)}, nil
	case *Update:
		return &wire.Update{Run: r, Step: int64(m.Step), Lr: m.LR, Scale: m.Scale, Provisional: m.Provisional}, nil
	case *UpdateApplied:
		return &wire.UpdateApplied{Run: r, Step: int64(m.Step), Actor: int64(m.Actor), Rolled: m.Rolled}, nil
	case *Failed:
		return &wire.Failed{Run: r, Actor: int64(m.Actor), Err: toErr(m.Err)}, nil
	case *Wire:
		return &wire.Links{Run: r, Coordinator: ToPid(m.Coordinator), Optimizer: ToPid(m.Optimizer), Next: toPids(m.Next),
			Prev: toPids(m.Prev), PrevSplit: wire.Int64s(m.PrevSplit), InShards: int64(m.InShards), OutShards: int64(m.OutShards),
			Limit: int64(m.Limit), SplitBackward: m.SplitBackward, NextNames: m.NextNames, PrevNames: m.PrevNames, Tied: toTied(m.Tied),
			Replica: int64(m.Replica), Copies: toPids(m.Copies), CopyNames: m.CopyNames, OwnCopies: m.OwnCopies, OneArena: m.OneArena, EvalWindow: int64(m.EvalWindow), EachDone: m.EachDone,
			Schedule: m.Schedule.String(), Stages: int64(m.Stages), Chunks: int64(m.Chunks)}, nil
	case *Lost:
		return &wire.Lost{Run: r, Host: m.Host, Stages: m.Stages, Why: m.Why}, nil
	case *GetParams:
		return &wire.GetParams{Run: r, NamesOnly: m.NamesOnly}, nil
	case *Params:
		return &wire.Params{Run: r, Actor: int64(m.Actor), Names: m.Names, Values: toTensors(m.Values), State: ToState(&m.State)}, nil
	case *SetParams:
		return &wire.SetParams{Run: r, Values: toTensors(m.Values), State: ToState(m.State)}, nil
	case *Ack:
		return &wire.Ack{Run: r, Err: toErr(m.Err)}, nil
	case *GetStats:
		return &wire.GetStats{Run: r, Reset_: m.Reset}, nil
	case *Stats:
		w := &wire.Stats{Run: r, Actor: int64(m.Actor), Name: m.Name, Layers: wire.Int64s(m.Layers), BusyNs: int64(m.Busy),
			Messages: int64(m.Messages), MaxInFlight: int64(m.MaxInFlight), WireBytes: m.WireBytes,
			PeakActivationBytes: m.PeakActivationBytes}
		for _, s := range m.Spans {
			w.Spans = append(w.Spans, &wire.Span{Kind: int32(s.Kind), Step: int64(s.Step), Micro: int64(s.Micro), StartNs: int64(s.Start), DurNs: int64(s.Dur)})
		}
		return w, nil
	}
	return nil, fmt.Errorf("actors: %T cannot cross processes", msg)
}

// errNotWire is Decode's answer to a message that is not a wire message.
var errNotWire = errors.New("actors: not a wire message")

// Decode returns the in-process message a wire message stands for, and the
// run it is for. A malformed message (a tensor whose bytes do not fit its
// shape) is an error, never a panic.
func Decode(msg any) (any, Run, error) {
	switch m := msg.(type) {
	case *Arrived:
		return m.Msg, m.Run, nil
	case *wire.Forward:
		x, err := m.X.ToTensor()
		if err != nil {
			return nil, Run{}, fmt.Errorf("actors: forward step %d micro-batch %d: %w", m.Step, m.Micro, err)
		}
		return &Forward{Step: int(m.Step), Micro: int(m.Micro), Row: int(m.Row), Total: int(m.Total), Seq: int(m.Seq),
			Micros: int(m.Micros), Shard: int(m.Shard), Eval: m.Eval, X: x,
			First: int(m.First), Share: int(m.Share), Replicas: int(m.Replicas)}, runOf(m.Run), nil
	case *wire.Backward:
		dy, err := m.Dy.ToTensor()
		if err != nil {
			return nil, Run{}, fmt.Errorf("actors: backward step %d micro-batch %d: %w", m.Step, m.Micro, err)
		}
		return &Backward{Step: int(m.Step), Micro: int(m.Micro), Shard: int(m.Shard), DY: dy}, runOf(m.Run), nil
	case *wire.BackwardDone:
		return &BackwardDone{Step: int(m.Step), Micro: int(m.Micro), Actor: int(m.Actor), All: m.All}, runOf(m.Run), nil
	case *wire.TiedGrad:
		g, err := m.G.ToTensor()
		if err != nil {
			return nil, Run{}, fmt.Errorf("actors: tied gradient %d of step %d: %w", m.Tie, m.Step, err)
		}
		return &TiedGrad{Step: int(m.Step), Tie: int(m.Tie), G: g}, runOf(m.Run), nil
	case *wire.GradTurn:
		grads, err := fromTensors(m.Grads)
		if err == nil {
			var bufs []*tensor.Tensor
			if bufs, err = fromTensors(m.Buffers); err == nil {
				return &GradTurn{Step: int(m.Step), Seq: int(m.Seq), Part: int(m.Part), Rows: m.Rows, Grads: grads, Buffers: bufs}, runOf(m.Run), nil
			}
		}
		return nil, Run{}, fmt.Errorf("actors: the gradients' turn of step %d: %w", m.Step, err)
	case *wire.Weights:
		values, err := fromTensors(m.Values)
		if err != nil {
			return nil, Run{}, fmt.Errorf("actors: the weights of step %d: %w", m.Step, err)
		}
		return &Weights{Step: int(m.Step), Part: int(m.Part), Values: values}, runOf(m.Run), nil
	case *wire.GradNorm:
		return &GradNorm{Step: int(m.Step), Actor: int(m.Actor), Sums: m.Sums}, runOf(m.Run), nil
	case *wire.Update:
		return &Update{Step: int(m.Step), LR: m.Lr, Scale: m.Scale, Provisional: m.Provisional}, runOf(m.Run), nil
	case *wire.UpdateApplied:
		return &UpdateApplied{Step: int(m.Step), Actor: int(m.Actor), Rolled: m.Rolled}, runOf(m.Run), nil
	case *wire.Failed:
		return &Failed{Actor: int(m.Actor), Err: m.Err.Err()}, runOf(m.Run), nil
	}
	return decodeControl(msg)
}

// decodeControl is Decode for the messages off the step's path: the
// links, a lost host, and the engine's questions and their answers.
func decodeControl(msg any) (any, Run, error) {
	switch m := msg.(type) {
	case *wire.Links:
		return &Wire{Coordinator: FromPid(m.Coordinator), Optimizer: FromPid(m.Optimizer), Next: fromPids(m.Next),
			Prev: fromPids(m.Prev), PrevSplit: wire.Ints(m.PrevSplit), InShards: int(m.InShards), OutShards: int(m.OutShards),
			Limit: int(m.Limit), SplitBackward: m.SplitBackward, NextNames: m.NextNames, PrevNames: m.PrevNames, Tied: fromTied(m.Tied),
			Replica: int(m.Replica), Copies: fromPids(m.Copies), CopyNames: m.CopyNames, OwnCopies: m.OwnCopies, OneArena: m.OneArena, EvalWindow: int(m.EvalWindow), EachDone: m.EachDone,
			Schedule: scheduleOf(m.Schedule), Stages: int(m.Stages), Chunks: int(m.Chunks)}, runOf(m.Run), nil
	case *wire.Lost:
		return &Lost{Host: m.Host, Stages: m.Stages, Why: m.Why}, runOf(m.Run), nil
	case *wire.GetParams:
		return &GetParams{NamesOnly: m.NamesOnly}, runOf(m.Run), nil
	case *wire.Params:
		values, err := fromTensors(m.Values)
		if err != nil {
			return nil, Run{}, fmt.Errorf("actors: parameters of actor %d: %w", m.Actor, err)
		}
		p := &Params{Actor: int(m.Actor), Names: m.Names, Values: values}
		if m.State != nil {
			if p.State, err = FromState(m.State); err != nil {
				return nil, Run{}, fmt.Errorf("actors: actor %d: %w", m.Actor, err)
			}
		}
		return p, runOf(m.Run), nil
	case *wire.SetParams:
		values, err := fromTensors(m.Values)
		if err != nil {
			return nil, Run{}, fmt.Errorf("actors: parameter values: %w", err)
		}
		p := &SetParams{Values: values}
		if m.State != nil {
			st, err := FromState(m.State)
			if err != nil {
				return nil, Run{}, fmt.Errorf("actors: %w", err)
			}
			p.State = &st
		}
		return p, runOf(m.Run), nil
	case *wire.Ack:
		return &Ack{Err: fromErr(m.Err)}, runOf(m.Run), nil
	case *wire.GetStats:
		return &GetStats{Reset: m.Reset_}, runOf(m.Run), nil
	case *wire.Stats:
		s := &Stats{Actor: int(m.Actor), Name: m.Name, Layers: wire.Ints(m.Layers), Busy: time.Duration(m.BusyNs),
			Messages: int(m.Messages), MaxInFlight: int(m.MaxInFlight), WireBytes: m.WireBytes,
			PeakActivationBytes: m.PeakActivationBytes}
		for _, sp := range m.Spans {
			s.Spans = append(s.Spans, Span{Kind: SpanKind(sp.Kind), Step: int(sp.Step), Micro: int(sp.Micro), Start: time.Duration(sp.StartNs), Dur: time.Duration(sp.DurNs)})
		}
		return s, runOf(m.Run), nil
	}
	return nil, Run{}, errNotWire
}

// Tensors carries the messages that hold tensors (Forward, Backward,
// GradTurn, Weights, TiedGrad) between processes on a stream of their
// own, the data plane, as a frame header and the tensors' raw bytes;
// protoactor carries the rest.
type Tensors interface {
	// Send writes f and then data, the tensors' bytes, to the process of
	// to before it returns, so data may change once it has; it returns the
	// bytes sent. A failure is the data plane's to report.
	Send(to *actor.PID, f *wire.Frame, data [][]byte) int64
}

// Arrived is a message that came on the data plane, decoded, with the run
// it is for and its sender's name: a receiver takes it as a wire message.
type Arrived struct {
	Run  Run
	From string
	Msg  any
}

// FrameOf fills f with the header of msg for the actor to in another
// process and appends the tensors' bytes to data, or reports false for a
// message the data plane does not carry.
func FrameOf(f *wire.Frame, data [][]byte, msg any, run Run, from string, to *actor.PID) ([][]byte, bool) {
	ts := f.Tensors[:0]
	var one [1]*tensor.Tensor
	var tensors, more []*tensor.Tensor
	switch m := msg.(type) {
	case *Forward:
		*f = wire.Frame{Kind: wire.FrameForward, Eval: m.Eval, Step: int64(m.Step), Micro: int64(m.Micro), Shard: int64(m.Shard),
			Row: int64(m.Row), Total: int64(m.Total), Seq: int64(m.Seq), Micros: int64(m.Micros), First: int64(m.First),
			Share: int64(m.Share), Reps: int64(m.Replicas)}
		one[0] = m.X
		tensors = one[:]
	case *Backward:
		*f = wire.Frame{Kind: wire.FrameBackward, Step: int64(m.Step), Micro: int64(m.Micro), Shard: int64(m.Shard)}
		one[0] = m.DY
		tensors = one[:]
	case *GradTurn:
		*f = wire.Frame{Kind: wire.FrameTurn, Step: int64(m.Step), Seq: int64(m.Seq), Micro: int64(m.Part), Rows: m.Rows, Grads: int64(len(m.Grads))}
		tensors, more = m.Grads, m.Buffers
	case *Weights:
		*f = wire.Frame{Kind: wire.FrameWeights, Step: int64(m.Step), Micro: int64(m.Part)}
		tensors = m.Values
	case *TiedGrad:
		*f = wire.Frame{Kind: wire.FrameTied, Step: int64(m.Step), Shard: int64(m.Tie)}
		one[0] = m.G
		tensors = one[:]
	default:
		return data, false
	}
	f.Tensors = ts
	data = data[:0]
	for _, list := range [2][]*tensor.Tensor{tensors, more} {
		for _, t := range list {
			b, ok := wire.Bytes(t)
			if !ok {
				return data, false
			}
			data = append(data, b)
			f.AddTensor(t)
		}
	}
	f.Gen, f.Run, f.From, f.To = run.Gen, run.ID, from, to.Id
	return data, true
}

// FromFrame returns the message a data-plane frame stands for, with xs
// its tensors, or an error for a frame that does not fit its kind.
func FromFrame(f *wire.Frame, xs []*tensor.Tensor) (*Arrived, error) {
	a := &Arrived{Run: Run{ID: f.Run, Gen: f.Gen}, From: f.From}
	one := func() *tensor.Tensor {
		if len(xs) > 0 {
			return xs[0]
		}
		return nil
	}
	switch f.Kind {
	case wire.FrameForward:
		a.Msg = &Forward{Step: int(f.Step), Micro: int(f.Micro), Row: int(f.Row), Total: int(f.Total), Seq: int(f.Seq),
			Micros: int(f.Micros), Shard: int(f.Shard), First: int(f.First), Share: int(f.Share), Replicas: int(f.Reps), Eval: f.Eval, X: one()}
	case wire.FrameBackward:
		a.Msg = &Backward{Step: int(f.Step), Micro: int(f.Micro), Shard: int(f.Shard), DY: one()}
	case wire.FrameTurn:
		g := min(int(f.Grads), len(xs))
		a.Msg = &GradTurn{Step: int(f.Step), Seq: int(f.Seq), Part: int(f.Micro), Rows: f.Rows, Grads: xs[:g:g], Buffers: xs[g:]}
	case wire.FrameWeights:
		a.Msg = &Weights{Step: int(f.Step), Part: int(f.Micro), Values: xs}
	case wire.FrameTied:
		a.Msg = &TiedGrad{Step: int(f.Step), Tie: int(f.Shard), G: one()}
	default:
		return nil, fmt.Errorf("actors: a frame of unknown kind %d", f.Kind)
	}
	if n := len(f.Tensors); (f.Kind == wire.FrameForward || f.Kind == wire.FrameBackward || f.Kind == wire.FrameTied) && n != 1 {
		return nil, fmt.Errorf("actors: a %s frame with %d tensors", describe(a.Msg), n)
	}
	return a, nil
}

// scheduleOf is the schedule a Links names; the sequential one for a name
// it does not know (none is sent but by a programmed schedule).
func scheduleOf(name string) Schedule {
	s, _ := ParseSchedule(name)
	return s
}
