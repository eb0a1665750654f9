package remote

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
)

// Hosts is an engine's workers: their sessions, the stages each runs, and
// the actor that watches them.
type Hosts struct {
	system   *actor.ActorSystem // this process's endpoint
	run      actors.Run
	hosts    []string
	at       []string // each worker's actor address
	sessions []*actor.PID
	stagesOf [][]int // per host, the stage actor ids it runs
	monitor  *actor.PID

	mu      sync.Mutex
	waiting []map[*actor.Future]bool // per host, the engine's questions still unanswered
	why     []*actors.Lost           // per host, how the monitor found it lost; nothing more is asked of it
}

// Ask records f, a question to host h, so that the host's loss answers it
// at once; it reports false, recording nothing, for a host already lost.
func (hs *Hosts) Ask(h int, f *actor.Future) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.why[h] != nil {
		return false
	}
	hs.waiting[h][f] = true
	return true
}

// Answered forgets f and returns the host it asked, or -1.
func (hs *Hosts) Answered(f *actor.Future) int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for h, w := range hs.waiting {
		if w[f] {
			delete(w, f)
			return h
		}
	}
	return -1
}

// fail marks host h lost and answers its open questions with l: a question
// in flight when a host dies would otherwise wait out its timeout.
func (hs *Hosts) fail(ctx actor.SenderContext, h int, l *actors.Lost) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.why[h] == nil {
		hs.why[h] = l
	}
	for f := range hs.waiting[h] {
		ctx.Send(f.PID(), l)
	}
	clear(hs.waiting[h])
}

// LostWhy returns how host h was lost.
func (hs *Hosts) LostWhy(h int) *actors.Lost {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.why[h]
}

// HostIndex returns the index of the host whose actors have address addr,
// or -1.
func (hs *Hosts) HostIndex(addr string) int {
	for h, s := range hs.sessions {
		if s.Address == addr {
			return h
		}
	}
	return -1
}

// Host returns host h's address, as the engine was given it.
func (hs *Hosts) Host(h int) string { return hs.hosts[h] }

// Run returns the run the sessions are of.
func (hs *Hosts) Run() actors.Run { return hs.run }

// System returns this process's endpoint, the actor system the engine
// spawns its own actors in.
func (hs *Hosts) System() *actor.ActorSystem { return hs.system }

// Config is how an engine reaches its workers.
type Config struct {
	RunID             string // names the run on the workers
	Hosts             []string
	Listen, Advertise string
	Token             string
	TLS               TLS
	Logger            *zerolog.Logger
}

// Connect makes this process reachable by the workers, checks each one
// (protocol and token), and gives g this process's endpoint: its data plane
// and its account of undelivered messages. stagesOf lists, per host, the
// ids of the stage actors it will run.
func Connect(cfg Config, stagesOf [][]int, g *actors.Graph) (*Hosts, error) {
	var gen [8]byte
	_, _ = rand.Read(gen[:])
	run := actors.Run{ID: cfg.RunID, Gen: binary.LittleEndian.Uint64(gen[:]) | 1}
	listen, advertise := "127.0.0.1:0", ""
	for _, h := range cfg.Hosts {
		if !isLoopback(h) {
			if cfg.Token == "" {
				return nil, fmt.Errorf("remote: host %s is not on this machine: a token is required (--token-file or PIPETRAIN_TOKEN)", h)
			}
			ip, err := outboundIP(h)
			if err != nil {
				return nil, fmt.Errorf("remote: host %s: %v", h, err)
			}
			listen, advertise = "0.0.0.0:0", ""
			advertise = ip
			break
		}
	}
	if cfg.Listen != "" {
		listen = cfg.Listen
	}
	if cfg.Advertise != "" {
		advertise = cfg.Advertise
	}
	at := make([]string, len(cfg.Hosts)) // each worker's actor address
	for h, host := range cfg.Hosts {     // before anything starts here
		var err error
		if _, at[h], err = handshake(host, cfg.Token, cfg.TLS); err != nil {
			return nil, err
		}
	}
	system, err := acquireShared(listen, advertise, cfg.Token, cfg.TLS, cfg.Logger)
	if err != nil {
		return nil, err
	}
	shared.Lock()
	g.Dropped = shared.undelivered.dropped
	g.Tensors = shared.data
	shared.Unlock()
	hs := &Hosts{system: system, run: run, hosts: cfg.Hosts, at: at, stagesOf: stagesOf,
		waiting: make([]map[*actor.Future]bool, len(cfg.Hosts)), why: make([]*actors.Lost, len(cfg.Hosts))}
	for h := range hs.waiting {
		hs.waiting[h] = map[*actor.Future]bool{}
	}
	return hs, nil
}

// Open opens a session of the run on every host, for a coordinator to be
// spawned here named CoordinatorName; threads is each stage's thread
// budget there (0: the host's cores, shared as oneBusy says).
func (hs *Hosts) Open(threads int, oneBusy bool) error {
	for h, host := range hs.hosts {
		if err := hs.openSession(h, host, hs.at[h], threads, oneBusy); err != nil {
			return err
		}
	}
	return nil
}

// openSession spawns the run's session on host, whose worker has actor
// address at, and opens the run there. A worker still holding a run whose
// coordinator is gone (a restart right after a crash) drops it within
// sessionSilence: until then it is asked again.
func (hs *Hosts) openSession(h int, host, at string, threads int, oneBusy bool) error {
	root := hs.system.Root
	deadline := time.Now().Add(sessionSilence + 2*time.Second)
	for {
		res, err := remote.GetRemote(hs.system).SpawnNamed(at, fmt.Sprintf("%s-%x-%d", hs.run.ID, hs.run.Gen, time.Now().UnixNano()), sessionKind, spawnTimeout)
		if err != nil {
			return &HandshakeError{host, fmt.Errorf("spawning the run's session: %v", err)}
		}
		if res.Pid == nil {
			return &HandshakeError{host, fmt.Errorf("spawning the run's session: status %d", res.StatusCode)}
		}
		ans, err := root.RequestFuture(res.Pid, &wire.Open{Run: hs.runWire(), Coordinator: actors.ToPid(hs.coordPID()),
			Stages: int64(len(hs.stagesOf[h])), Threads: int64(threads), OneBusy: oneBusy}, spawnTimeout).Result()
		if err != nil {
			return &HandshakeError{host, fmt.Errorf("opening the run: %v", err)}
		}
		o, ok := ans.(*wire.Opened)
		if ok && o.Err == nil {
			hs.sessions = append(hs.sessions, res.Pid)
			return nil
		}
		if !ok || !o.Busy || time.Now().After(deadline) {
			return &HandshakeError{host, fmt.Errorf("opening the run: %v", openErr(ans))}
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func openErr(ans any) error {
	if o, ok := ans.(*wire.Opened); ok && o.Err != nil {
		return o.Err.Err()
	}
	return fmt.Errorf("unexpected answer %T", ans)
}

func (hs *Hosts) runWire() *wire.Run { return &wire.Run{Id: hs.run.ID, Gen: hs.run.Gen} }

// coordPID is the address the coordinator actor will have: it is spawned
// after the stages, whose Build names it.
func (hs *Hosts) coordPID() *actor.PID {
	return actor.NewPID(hs.system.Address(), hs.CoordinatorName())
}

// CoordinatorName is the name the engine's coordinator actor must have:
// engines share this process's endpoint, so each name carries the engine's
// generation.
func (hs *Hosts) CoordinatorName() string { return fmt.Sprintf("coordinator-%x", hs.run.Gen) }

// Build asks host h to build the stage actor s describes, and returns its
// address and thread budget.
func (hs *Hosts) Build(h int, s recipe.StageSpec) (*actor.PID, int, error) {
	name := s.Name
	b, err := s.ToWire(hs.runWire())
	if err != nil {
		return nil, 0, err
	}
	ans, err := hs.system.Root.RequestFuture(hs.sessions[h], b, spawnTimeout).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("remote: host %s: building %s: %v", hs.hosts[h], name, err)
	}
	built, ok := ans.(*wire.Built)
	if !ok {
		return nil, 0, fmt.Errorf("remote: host %s: building %s: unexpected answer %T", hs.hosts[h], name, ans)
	}
	if built.Err != nil {
		return nil, 0, fmt.Errorf("remote: host %s: %w", hs.hosts[h], built.Err.Err())
	}
	return actors.FromPid(built.Stage), int(built.Threads), nil
}

// Close ends the sessions, each within a bound, stops the monitor, and
// gives back this process's endpoint.
func (hs *Hosts) Close() {
	root := hs.system.Root
	var futures []*actor.Future
	for i, s := range hs.sessions {
		if hs.LostWhy(i) == nil { // a lost host drops the run on its own
			futures = append(futures, root.RequestFuture(s, &wire.Close{Run: hs.runWire()}, 2*time.Second))
		}
	}
	for _, f := range futures {
		_, _ = f.Result()
	}
	if hs.monitor != nil {
		_ = root.StopFuture(hs.monitor).Wait()
	}
	releaseShared()
}

// Watch starts the monitor of the hosts, which stops coord, the engine's
// coordinator, on the first lost host; names are the stage actors', by id.
func (hs *Hosts) Watch(names map[int]string, coord *actor.PID) {
	m := &monitor{run: hs.run, hosts: hs, names: names, coord: coord}
	hs.monitor = hs.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return m }))
}

// Beat makes the monitor send a heartbeat and look for lost hosts; the
// engine calls it every BeatEvery.
func (hs *Hosts) Beat() { hs.system.Root.Send(hs.monitor, beatTick{}) }

// beatTick makes the monitor send a heartbeat and look for lost hosts.
type beatTick struct{}

// monitor watches an engine's hosts: their sessions (protoactor's Watch,
// which a broken connection ends with AddressTerminated) and a heartbeat the
// session answers, which finds a silent link or a stuck process. The first
// lost host stops the coordinator with an error naming it and its stages.
type monitor struct {
	run      actors.Run
	hosts    *Hosts
	names    map[int]string
	coord    *actor.PID
	last     []time.Time
	reported bool
}

func (m *monitor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		m.last = make([]time.Time, len(m.hosts.sessions))
		for h, s := range m.hosts.sessions {
			m.last[h] = time.Now()
			ctx.Watch(s)
		}
		ctx.Send(ctx.Self(), beatTick{}) // the first beat at once: a session watches its coordinator from then on
	case beatTick:
		now := time.Now()
		for h, s := range m.hosts.sessions {
			if now.Sub(m.last[h]) > beatLost {
				m.lose(ctx, h, fmt.Sprintf("no heartbeat answered for %v", now.Sub(m.last[h]).Round(100*time.Millisecond)))
			}
			// the answer carries no sender: Seq names the host
			ctx.Request(s, &wire.Beat{Run: &wire.Run{Id: m.run.ID, Gen: m.run.Gen}, Seq: int64(h)})
		}
	case *wire.Beat:
		if h := int(msg.Seq); msg.Run.GetId() == m.run.ID && msg.Run.GetGen() == m.run.Gen && h >= 0 && h < len(m.last) {
			m.last[h] = time.Now()
		}
	case *actor.Terminated:
		for h, s := range m.hosts.sessions {
			if s.Equal(msg.Who) {
				why := "its session stopped"
				if msg.Why == actor.TerminatedReason_AddressTerminated {
					why = "the connection to it was lost"
				}
				m.lose(ctx, h, why)
			}
		}
	}
}

func (m *monitor) lose(ctx actor.Context, h int, why string) {
	if m.reported {
		return
	}
	m.reported = true
	var names []string
	for _, id := range m.hosts.stagesOf[h] {
		names = append(names, m.names[id])
	}
	l := &actors.Lost{Host: m.hosts.hosts[h], Stages: names, Why: why}
	m.hosts.fail(ctx, h, l)
	ctx.Send(m.coord, l)
}
