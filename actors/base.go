package actors

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/actors/wire"
)

// Span is one piece of work an actor did, for the timeline trace.
type Span struct {
	Kind        SpanKind
	Step, Micro int
	Start, Dur  time.Duration // since the graph's epoch
}

// SpanKind is the kind of work a span records. Its values are bytes that
// cross the wire as they are.
type SpanKind byte

const (
	SpanForward   SpanKind = 'F' // a micro-batch's forward
	SpanBackward  SpanKind = 'B' // a micro-batch's backward: input gradients, and weight gradients unless split off
	SpanWeights   SpanKind = 'W' // the weight gradients the split backward left, once over the step
	SpanUpdate    SpanKind = 'U' // the weights' update
	SpanEval      SpanKind = 'E' // an evaluation forward
	SpanOptimizer SpanKind = 'O' // the optimizer's clip factor
)

// String names the kind as the trace labels it.
func (k SpanKind) String() string {
	switch k {
	case SpanForward:
		return "forward"
	case SpanBackward:
		return "backward"
	case SpanWeights:
		return "weight-grad"
	case SpanUpdate:
		return "update"
	case SpanEval:
		return "eval"
	case SpanOptimizer:
		return "optimizer"
	}
	return fmt.Sprintf("span %q", byte(k))
}

// Computes reports whether the kind is a forward or backward computation,
// the work a pipeline's bubble is measured against.
func (k SpanKind) Computes() bool { return k == SpanForward || k == SpanBackward || k == SpanWeights }

// Stats are an actor's counters since they were last reset.
type Stats struct {
	Actor               int
	Name                string
	Layers              []int // global indices of the layers it runs
	Busy                time.Duration
	Messages            int
	MaxInFlight         int   // most micro-batches holding activations at once
	PeakActivationBytes int64 // most bytes of activations held at once for backwards to come
	Spans               []Span
	WireBytes           int64 // bytes of the messages it sent to other processes
}

// Status is what a watchdog may read of an actor while it runs; every field is
// safe for concurrent use. The actor records plain values on every message and
// span; Describe formats them only when someone asks.
type Status struct {
	Name     string
	sent     atomic.Int64
	received atomic.Int64
	taken    atomic.Int64 // messages taken, from anywhere
	busyNs   atomic.Int64 // time spent in spans, since the actor started
	mu       sync.Mutex
	last     note     // the last message taken, as values: senders reuse messages
	kind     SpanKind // the span in hand, or 0
	step     int
	micro    int
}

// note is what describe needs of a message, copied out of it: senders reuse
// their messages, so none is kept.
type note struct {
	typ                      reflect.Type
	kind                     byte
	step, micro, shard, from int
}

// Pending returns how many messages wait in the actor's mailbox.
func (s *Status) Pending() int64 { return s.sent.Load() - s.received.Load() }

// Taken returns how many messages the actor has taken since it started.
func (s *Status) Taken() int64 { return s.taken.Load() }

// Busy returns the time the actor has spent working since it started.
func (s *Status) Busy() time.Duration { return time.Duration(s.busyNs.Load()) }

// Describe returns the last message the actor took and what it is working on.
func (s *Status) Describe() (last, inHand string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != (note{}) {
		last = s.last.String()
	}
	if s.kind != 0 {
		inHand = fmt.Sprintf("%c step %d micro-batch %d", byte(s.kind), s.step, s.micro)
	}
	return last, inHand
}

func (s *Status) took(msg any) {
	s.taken.Add(1)
	n := noteOf(msg)
	s.mu.Lock()
	s.last, s.kind = n, 0
	s.mu.Unlock()
}

func (s *Status) working(kind SpanKind, step, micro int) {
	s.mu.Lock()
	s.kind, s.step, s.micro = kind, step, micro
	s.mu.Unlock()
}

// Graph is what all actors of one pipeline share: the clock of the trace, the
// status of every actor by PID, and a counter of messages moved, read by the watchdog.
type Graph struct {
	Epoch  time.Time
	Trace  bool
	status map[string]*Status
	Moved  atomic.Int64

	// Dropped, if set before the actors start, hears of every message from
	// another process that an actor drops: one for another run, or for an
	// earlier engine of this run. It is called on the actor's goroutine.
	Dropped func(Drop)

	// Tensors, if set before the actors start, carries the activations and
	// their gradients to other processes instead of protoactor.
	Tensors Tensors

	devMu   sync.Mutex
	devices map[int]*Device
}

// Drop describes a message between processes that was not delivered.
type Drop struct {
	Run    Run    // the run the message is for
	From   string // the sending actor: its name and host
	To     string // the actor it was for: a name, or its address
	Type   string // what it was: its type, with the step and micro-batch of work
	Reason string
}

// NewGraph returns an empty graph whose trace clock starts now.
func NewGraph(trace bool) *Graph {
	return &Graph{Epoch: time.Now(), Trace: trace, status: map[string]*Status{}}
}

// Register records pid's status; call it before any message is sent to pid.
func (g *Graph) Register(pid *actor.PID, st *Status) { g.status[pid.Id] = st }

// Sent counts a message sent to pid from outside the actors (the engine's
// root context), so that its mailbox length stays right.
func (g *Graph) Sent(pid *actor.PID) {
	if st := g.status[pid.Id]; st != nil {
		st.sent.Add(1)
	}
}

// base is embedded in every actor: identity, counters, spans, status, and the
// panic guard that turns a failure into a Failed message.
type base struct {
	id       int
	name     string
	layerIDs []int
	graph    *Graph
	status   *Status
	coord    *actor.PID
	failed   bool
	stops    bool                                        // the coordinator: it stops the run on its own failure
	run      Run                                         // what messages from other processes must carry
	where    func(kind SpanKind, step, micro int) string // names the work in hand, for failures
	from     string                                      // its name and host, as messages to other processes give it
	watched  map[string]string                           // neighbours in other processes: their names by PID
	device   *Device                                     // the cores it takes turns on with its stage's other actors; nil: its own
	position int                                         // its place in the chain: its ops in its device's order

	busy     time.Duration
	wire     int64 // bytes sent to other processes
	messages int
	maxIn    int
	maxAct   int64 // most activation bytes held at once
	spans    []Span
	frame    wire.Frame // a data-plane frame's header, reused
	payload  [][]byte   // its tensors' bytes, reused
}

func newBase(id int, name string, g *Graph) base {
	b := base{id: id, name: name, graph: g, status: &Status{Name: name}}
	b.where = func(kind SpanKind, step, micro int) string {
		if kind == SpanEval {
			return fmt.Sprintf("the %s, evaluating chunk %d", name, micro)
		}
		if micro < 0 {
			return fmt.Sprintf("the %s at step %d", name, step)
		}
		return fmt.Sprintf("the %s at step %d, micro-batch %d", name, step, micro)
	}
	return b
}

// Status returns the actor's live status.
func (b *base) Status() *Status { return b.status }

// SetRun sets the run an actor works for: messages from other processes
// for another run are dropped. Call it before the actor starts.
func (b *base) SetRun(r Run) { b.run = r }

// send sends msg to pid, counting it as pending there; a message for
// another process crosses in its wire form.
func (b *base) send(ctx actor.Context, pid *actor.PID, msg any) {
	if isRemote(ctx.Self(), pid) {
		if t := b.graph.Tensors; t != nil {
			data, ok := FrameOf(&b.frame, b.payload, msg, b.run, b.sender(ctx), pid)
			b.payload = data[:0]
			if ok {
				b.wire += t.Send(pid, &b.frame, data)
				clear(data) // hold no tensor past the send
				return
			}
		}
		w, err := Encode(msg, b.run, b.sender(ctx))
		if err != nil {
			panic(err) // a message type with no wire form: a bug, turned into Failed by guard
		}
		b.wire += int64(proto.Size(w))
		ctx.Send(pid, w)
		return
	}
	b.graph.Sent(pid)
	ctx.Send(pid, msg)
}

// sender is the actor's name and host, for messages to other processes.
func (b *base) sender(ctx actor.Context) string {
	if b.from == "" {
		b.from = b.name + " on " + Host(ctx.Self().Address)
	}
	return b.from
}

// respond answers the message in hand, in wire form to another process.
func (b *base) respond(ctx actor.Context, msg any) {
	if isRemote(ctx.Self(), ctx.Sender()) {
		w, err := Encode(msg, b.run, b.sender(ctx))
		if err != nil {
			panic(err)
		}
		ctx.Respond(w)
		return
	}
	if s := ctx.Sender(); s != nil {
		b.graph.Sent(s) // an actor's request; a future has no mailbox
	}
	ctx.Respond(msg)
}

// receive does the bookkeeping common to every user message and returns the
// message to handle, decoded from its wire form if it came from another
// process, or false for one to leave alone: a system message (protoactor's),
// a message for another run, or work for a failed actor.
func (b *base) receive(ctx actor.Context) (any, bool) {
	msg := ctx.Message()
	switch m := msg.(type) {
	case *actor.Terminated:
		b.neighbourGone(ctx, m)
		return nil, false
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting, *actor.ReceiveTimeout:
		return nil, false
	}
	if m, run, err := Decode(msg); err == nil {
		if run != b.run { // a stale run's or restart's
			if b.graph.Dropped != nil {
				_, from, _ := RunOf(msg)
				b.graph.Dropped(Drop{Run: run, From: from, To: b.name, Type: describe(m), Reason: "it is for another run or engine"})
			}
			return nil, false
		}
		msg = m
	} else if err != errNotWire {
		b.fail(ctx, err)
		return nil, false
	} else {
		b.status.received.Add(1) // counted as sent by a local sender
	}
	b.graph.Moved.Add(1)
	b.messages++
	b.status.took(msg)
	if b.failed {
		switch msg.(type) {
		case *GetStats, *GetParams:
			return msg, true // a failed actor still answers questions, never does work
		}
		return nil, false
	}
	return msg, true
}

// work runs f as a span of the given kind of work on step and micro-batch
// micro: it times it for the trace, marks the actor busy with it meanwhile,
// and turns a panic or an error into a Failed message to the coordinator,
// after which the actor ignores further work. It reports whether f
// completed.
func (b *base) work(ctx actor.Context, kind SpanKind, step, micro int, f func() error) (ok bool) {
	if d := b.device; d != nil {
		d.work.Lock()
		defer d.work.Unlock()
	}
	b.status.working(kind, step, micro)
	start := time.Now()
	defer func() {
		d := time.Since(start)
		b.busy += d
		b.status.busyNs.Add(int64(d))
		if b.graph.Trace {
			b.spans = append(b.spans, Span{kind, step, micro, start.Sub(b.graph.Epoch), d})
		}
		b.status.working(0, 0, 0)
		if r := recover(); r != nil {
			b.fail(ctx, fmt.Errorf("%s panicked: %v", b.where(kind, step, micro), r))
			ok = false
		}
	}()
	if err := f(); err != nil {
		b.fail(ctx, err)
		return false
	}
	return true
}

func (b *base) fail(ctx actor.Context, err error) {
	if b.stops {
		ctx.Send(ctx.Self(), &Failed{Actor: b.id, Err: err})
		return
	}
	b.failed = true
	if b.coord != nil {
		b.send(ctx, b.coord, &Failed{Actor: b.id, Err: err})
	}
}

// watch watches the actors among pids, named names, that live in other
// processes: a lost connection to one stops the run at once, naming the
// host, even where nothing else would notice (the link between two workers).
func (b *base) watch(ctx actor.Context, pids []*actor.PID, names []string) {
	for i, p := range pids {
		if !isRemote(ctx.Self(), p) || b.watched[p.String()] != "" {
			continue
		}
		if b.watched == nil {
			b.watched = map[string]string{}
		}
		b.watched[p.String()] = p.Id
		if i < len(names) {
			b.watched[p.String()] = names[i]
		}
		ctx.Watch(p)
	}
}

// neighbourGone tells the coordinator that the connection to a watched
// neighbour is lost; a neighbour that stops (its run closed) is no failure.
func (b *base) neighbourGone(ctx actor.Context, m *actor.Terminated) {
	name := b.watched[m.Who.String()]
	if m.Why != actor.TerminatedReason_AddressTerminated || name == "" || b.failed || b.coord == nil {
		return
	}
	b.failed = true
	b.send(ctx, b.coord, &Lost{Host: Host(m.Who.Address), Stages: []string{name}, Why: "the connection from " + b.sender(ctx) + " was lost"})
}

// stats returns the counters, resetting them if asked.
func (b *base) stats(reset bool) *Stats {
	s := &Stats{Actor: b.id, Name: b.name, Layers: b.layerIDs, Busy: b.busy, Messages: b.messages, MaxInFlight: b.maxIn, PeakActivationBytes: b.maxAct, Spans: b.spans, WireBytes: b.wire}
	if reset {
		b.busy, b.messages, b.maxIn, b.maxAct, b.spans, b.wire = 0, 0, 0, 0, nil, 0
	}
	return s
}

// describe names a message for the watchdog: its type and step and micro-batch.
func describe(m any) string { return noteOf(m).String() }

// Describe names a message, in-process or in its wire form: its type, and
// the step and micro-batch of a piece of work.
func Describe(m any) string {
	if d, _, err := Decode(m); err == nil {
		m = d
	}
	return describe(m)
}

// noteOf copies what describe shows of m.
func noteOf(m any) note {
	switch m := m.(type) {
	case *Forward:
		return note{kind: 'F', step: m.Step, micro: m.Micro, shard: m.Shard}
	case *Backward:
		return note{kind: 'B', step: m.Step, micro: m.Micro, shard: m.Shard}
	case *GradNorm:
		return note{kind: 'G', step: m.Step, from: m.Actor}
	case *Update:
		return note{kind: 'U', step: m.Step}
	}
	return note{typ: reflect.TypeOf(m)}
}

func (n note) String() string {
	switch n.kind {
	case 'F':
		return fmt.Sprintf("Forward step %d micro-batch %d shard %d", n.step, n.micro, n.shard)
	case 'B':
		return fmt.Sprintf("Backward step %d micro-batch %d shard %d", n.step, n.micro, n.shard)
	case 'G':
		return fmt.Sprintf("GradNorm step %d from actor %d", n.step, n.from)
	case 'U':
		return fmt.Sprintf("Update step %d", n.step)
	}
	t := n.typ
	if t == nil {
		return "nil"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
