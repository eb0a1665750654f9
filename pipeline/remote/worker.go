package remote

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
)

// WorkerConfig describes a worker: a process that hosts stage actors for a
// coordinator elsewhere (`train worker`).
type WorkerConfig struct {
	Listen    string // host:port; port 0 picks a free one
	Advertise string // host:port coordinators reach it at, if not Listen's (a proxy, NAT)
	Token     string // required of every peer; required to listen beyond loopback
	TLS       TLS    // empty: plaintext
	Logger    *zerolog.Logger
}

// Worker hosts the stages of one run at a time, spawned by its coordinator
// over protoactor's remote, and stays up for the next run. A run's stages
// are dropped when the coordinator closes the run, stops answering or falls
// silent for 5 s.
type Worker struct {
	system *actor.ActorSystem
	remote *remote.Remote
	addr   string
	log    zerolog.Logger

	mu       sync.Mutex
	run      string // the run whose sessions are open, or ""
	sessions map[*actor.PID]bool
	opened   map[actors.Run]*actor.PID // the open sessions by run and generation
	closed   bool
	stages   map[*actors.Status]string // the hosted stage actors, by name

	undelivered *undelivered
	data        *dataPlane
	ended       sync.Map     // coordinators' addresses whose runs they closed: their own lock, as a logger reads it
	open        atomic.Int64 // sessions open, as a logger reads it
}

// sessionKind is the kind a coordinator spawns on a worker for each engine
// of a run; the session then builds the stages the coordinator asks for.
const sessionKind = "pipetrain-session"

// NewWorker starts a worker listening on cfg.Listen.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Token == "" && !isLoopback(cfg.Listen) {
		return nil, fmt.Errorf("remote: a worker listens beyond loopback (%s) only with a token", cfg.Listen)
	}
	w := &Worker{log: zerolog.Nop(), sessions: map[*actor.PID]bool{}, opened: map[actors.Run]*actor.PID{}, stages: map[*actors.Status]string{}}
	if cfg.Logger != nil {
		w.log = *cfg.Logger
	}
	w.system = recipe.NewActorSystem(cfg.Logger, w.runEnded)
	w.undelivered = watchUndelivered(w.system, w.log, w.failRun)
	props := actor.PropsFromProducer(func() actor.Actor { return &session{w: w} }, actor.WithSupervisor(recipe.StopStrategy))
	r, addr, dp, err := startRemote(w.system, cfg.Listen, cfg.Advertise, func() string { return cfg.Token }, cfg.TLS, remote.NewKind(sessionKind, props))
	if err != nil {
		w.system.Shutdown()
		return nil, err
	}
	dp.start(w.system, w.undelivered, w.isOpen)
	w.remote, w.addr, w.data = r, addr, dp
	return w, nil
}

// isOpen reports whether a session of run is open here.
func (w *Worker) isOpen(run actors.Run) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opened[run] != nil
}

// failRun asks the session of run, if one is open, to fail it with err.
func (w *Worker) failRun(run actors.Run, err error) (*zerolog.Logger, bool) {
	w.mu.Lock()
	pid := w.opened[run]
	w.mu.Unlock()
	if pid == nil {
		return nil, false
	}
	w.system.Root.Send(pid, &failRun{err})
	return nil, true
}

// failRun tells a session that a message of its run was not delivered. It
// is not word from the coordinator: a coordinator gone silent is still found
// so, however many messages to it fail.
type failRun struct{ err error }

func (*failRun) NotInfluenceReceiveTimeout() {}

// Addr returns the host:port the worker listens on.
func (w *Worker) Addr() string { return w.addr }

// Close drops every stage and stops listening.
func (w *Worker) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	var pids []*actor.PID
	for pid := range w.sessions {
		pids = append(pids, pid)
	}
	w.mu.Unlock()
	for _, pid := range pids {
		_ = w.system.Root.StopFuture(pid).Wait()
	}
	w.remote.Shutdown(false)
	w.data.close()
	w.system.Shutdown()
}

// Actors returns the live counters of the stage actors the worker hosts
// now, for metrics; safe for concurrent use.
func (w *Worker) Actors() []recipe.ActorStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]recipe.ActorStatus, 0, len(w.stages))
	for st, name := range w.stages {
		out = append(out, recipe.ActorStatus{Name: name, Mailbox: st.Pending(), Messages: st.Taken(), Busy: st.Busy()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// errBusy is a worker's answer while it holds another run.
var errBusy = errors.New("the worker is busy with run")

// claim admits a session of run, refusing another run while one is open.
func (w *Worker) claim(pid *actor.PID, run string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("the worker is shutting down")
	}
	if w.run != "" && w.run != run {
		return fmt.Errorf("%w %s", errBusy, w.run)
	}
	w.run = run
	w.sessions[pid] = true
	w.open.Store(int64(len(w.sessions)))
	return nil
}

func (w *Worker) release(pid *actor.PID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for r, p := range w.opened {
		if p == pid {
			delete(w.opened, r)
		}
	}
	if w.sessions[pid] {
		delete(w.sessions, pid)
		w.open.Store(int64(len(w.sessions)))
		if len(w.sessions) == 0 {
			w.run = ""
		}
	}
}

// session is one engine's stages on a worker: it builds them when asked,
// answers the coordinator's heartbeat, and stops them (its children) when
// the coordinator closes it, is gone, or is silent.
type session struct {
	w        *Worker
	run      actors.Run
	open     bool
	coord    *actor.PID
	stages   int
	threads  int
	oneBusy  bool
	graph    *actors.Graph
	runs     *actors.Dispatcher // the stages' mailboxes, as an engine's in one process
	hosted   []hosted
	start    time.Time
	ended    bool
	watching bool
	failed   bool // a message of the run was not delivered, and the coordinator was told
}

type hosted struct {
	pid      *actor.PID
	id       int // the stage actor's id
	position int
	layers   []int
	threads  int
	status   *actors.Status
}

func (s *session) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.SetReceiveTimeout(sessionSilence) // a session never opened goes too
	case *wire.Open:
		o := s.openRun(ctx, m)
		ctx.Respond(o)
		if o.Err != nil {
			ctx.Stop(ctx.Self())
		}
	case *wire.Build:
		if !s.mine(m.Run) {
			return
		}
		ctx.Respond(s.build(ctx, m))
	case *wire.Beat:
		if s.mine(m.Run) {
			if !s.watching { // the coordinator exists once beats come
				s.watching = true
				ctx.Watch(s.coord)
			}
			ctx.Respond(&wire.Beat{Run: m.Run, Seq: m.Seq})
		}
	case *failRun:
		if s.open && !s.ended && !s.failed { // once: the report may itself go undelivered
			s.failed = true
			ctx.Send(s.coord, &wire.Failed{Run: &wire.Run{Id: s.run.ID, Gen: s.run.Gen, From: "worker " + actors.Host(ctx.Self().Address)}, Actor: -1, Err: wire.FromError(m.err)})
		}
	case *wire.Close:
		if s.mine(m.Run) {
			s.w.endedBy(s.coord.Address)
			s.end(ctx, "closed by the coordinator")
			ctx.Respond(&wire.Ack{Run: m.Run})
			ctx.Stop(ctx.Self())
		}
	case *actor.ReceiveTimeout:
		if s.open {
			s.end(ctx, fmt.Sprintf("the coordinator was silent for %v", sessionSilence))
		}
		ctx.Stop(ctx.Self())
	case *actor.Terminated:
		if s.coord != nil && m.Who.Equal(s.coord) {
			if m.Why == actor.TerminatedReason_Stopped { // stopped by its engine, not lost with its process
				s.w.endedBy(s.coord.Address)
			}
			s.end(ctx, "the coordinator is gone")
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopped:
		s.unlist()
		if s.runs != nil { // its stages, its children, have stopped
			s.runs.Close()
		}
		s.w.release(ctx.Self())
	}
}

// endedBy records that the coordinator at address closed its run: its
// connection going away next is the run's end.
func (w *Worker) endedBy(address string) { w.ended.Store(address, true) }

// runEnded reports whether a connection to address ending is no run's
// failure: the coordinator there closed its run, or no run is open here
// (a peer worker gone between runs).
func (w *Worker) runEnded(address string) bool {
	_, ok := w.ended.Load(address)
	return ok || w.open.Load() == 0
}

// unlist takes the session's stages out of the worker's metrics.
func (s *session) unlist() {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	for _, h := range s.hosted {
		delete(s.w.stages, h.status)
	}
}

func (s *session) mine(r *wire.Run) bool {
	return s.open && r != nil && r.Id == s.run.ID && r.Gen == s.run.Gen
}

func (s *session) openRun(ctx actor.Context, m *wire.Open) *wire.Opened {
	if s.open {
		return &wire.Opened{Run: m.Run, Err: wire.FromError(errors.New("session already open"))}
	}
	if m.Run == nil || m.Run.Id == "" || m.Coordinator == nil {
		return &wire.Opened{Run: m.Run, Err: wire.FromError(errors.New("open: no run or coordinator"))}
	}
	if err := s.w.claim(ctx.Self(), m.Run.Id); err != nil {
		return &wire.Opened{Run: m.Run, Err: wire.FromError(err), Busy: errors.Is(err, errBusy)}
	}
	s.open, s.run, s.coord = true, actors.Run{ID: m.Run.Id, Gen: m.Run.Gen}, actors.FromPid(m.Coordinator)
	s.stages, s.threads, s.oneBusy = int(m.Stages), int(m.Threads), m.OneBusy
	s.graph = actors.NewGraph(false)
	s.runs = actors.NewDispatcher()
	s.graph.Dropped = s.w.undelivered.dropped
	s.graph.Tensors = s.w.data
	s.w.mu.Lock()
	s.w.opened[s.run] = ctx.Self()
	s.w.mu.Unlock()
	s.start = time.Now()
	ctx.SetReceiveTimeout(sessionSilence)
	s.w.log.Info().Str("event", "worker_run").Str("run", s.run.ID).Uint64("generation", s.run.Gen).
		Str("coordinator", s.coord.Address).Int("stages", s.stages).Msg("run opened")
	return &wire.Opened{Run: m.Run, Cores: int64(runtime.GOMAXPROCS(0))}
}

// budget is each hosted stage's thread budget: this host's cores shared by
// the stages it runs at once, as in one process.
func (s *session) budget() int {
	if s.threads > 0 {
		return s.threads
	}
	if s.stages <= 1 || s.oneBusy {
		return runtime.GOMAXPROCS(0)
	}
	return max(1, runtime.GOMAXPROCS(0)/s.stages)
}

func (s *session) build(ctx actor.Context, m *wire.Build) *wire.Built {
	fail := func(err error) *wire.Built {
		return &wire.Built{Run: m.Run, Err: wire.FromError(fmt.Errorf("%s: %w", m.Name, err))}
	}
	spec, err := recipe.FromWire(m)
	if err != nil {
		return fail(err)
	}
	threads := s.budget()
	spec.Threads = threads
	st, err := recipe.Build(spec, nil, s.graph)
	if err != nil {
		return fail(err)
	}
	st.SetRun(s.run)
	produced := false
	s.runs.Add()
	pid, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		if produced {
			panic("remote: an actor may not be restarted") // its weights would be lost
		}
		produced = true
		return st
	}, actor.WithSupervisor(recipe.StopStrategy), actor.WithDispatcher(s.runs)), fmt.Sprintf("stage-%d", m.Id))
	if err != nil {
		return fail(err)
	}
	s.graph.Register(pid, st.Status())
	s.hosted = append(s.hosted, hosted{pid: pid, id: int(m.Id), position: int(m.Position), layers: wire.Ints(m.Layers), threads: threads, status: st.Status()})
	s.w.mu.Lock()
	s.w.stages[st.Status()] = m.Name
	s.w.mu.Unlock()
	return &wire.Built{Run: m.Run, Stage: actors.ToPid(pid), Threads: int64(threads)}
}

// end logs each hosted stage's counters, once.
func (s *session) end(ctx actor.Context, why string) {
	if s.ended || !s.open {
		return
	}
	s.ended = true
	s.unlist()
	wall := time.Since(s.start).Seconds()
	for _, h := range s.hosted {
		res, err := ctx.RequestFuture(h.pid, &actors.GetStats{}, time.Second).Result()
		st, ok := res.(*actors.Stats)
		if err != nil || !ok {
			continue
		}
		s.w.log.Info().Str("event", "stage").Str("run", s.run.ID).Int("stage", h.id).Int("position", h.position).Ints("layers", h.layers).
			Float64("busy_fraction", st.Busy.Seconds()/wall).Int("messages", st.Messages).
			Int("max_in_flight", st.MaxInFlight).
			Int64("peak_activation_bytes", st.PeakActivationBytes).Int("threads", h.threads).Msg("")
	}
	s.w.log.Info().Str("event", "worker_run").Str("run", s.run.ID).Uint64("generation", s.run.Gen).Str("reason", why).Msg("run dropped")
}
