package pipeline

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/actors/wire"
)

// hostSet is an engine's workers: their sessions, the stages each runs, and
// the actor that watches them.
type hostSet struct {
	hosts    []string
	sessions []*actor.PID
	stagesOf [][]int // per host, the stage actor ids it runs
	monitor  *actor.PID

	mu      sync.Mutex
	waiting []map[*actor.Future]bool // per host, the engine's questions still unanswered
	why     []*actors.Lost           // per host, how the monitor found it lost; nothing more is asked of it
}

// ask records f, a question to host h, so that the host's loss answers it
// at once; it reports false, recording nothing, for a host already lost.
func (hs *hostSet) ask(h int, f *actor.Future) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.why[h] != nil {
		return false
	}
	hs.waiting[h][f] = true
	return true
}

// answered forgets f and returns the host it asked, or -1.
func (hs *hostSet) answered(f *actor.Future) int {
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
func (hs *hostSet) fail(ctx actor.SenderContext, h int, l *actors.Lost) {
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

// lostWhy returns how host h was lost.
func (hs *hostSet) lostWhy(h int) *actors.Lost {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.why[h]
}

// hostIndex returns the index of the host whose actors have address addr,
// or -1.
func (hs *hostSet) hostIndex(addr string) int {
	for h, s := range hs.sessions {
		if s.Address == addr {
			return h
		}
	}
	return -1
}

// startHosts makes this process reachable by the workers, checks each one
// (protocol and token) and opens a session of this engine's run on it.
func (e *Engine) startHosts() error {
	cfg := e.cfg
	if cfg.RunID == "" {
		return errors.New("pipeline: stages on hosts need Config.RunID")
	}
	var gen [8]byte
	_, _ = rand.Read(gen[:])
	e.run = actors.Run{ID: cfg.RunID, Gen: binary.LittleEndian.Uint64(gen[:]) | 1}
	listen, advertise := "127.0.0.1:0", ""
	for _, h := range cfg.Hosts {
		if !isLoopback(h) {
			if cfg.Token == "" {
				return fmt.Errorf("pipeline: host %s is not on this machine: a token is required (--token-file or PIPETRAIN_TOKEN)", h)
			}
			ip, err := outboundIP(h)
			if err != nil {
				return fmt.Errorf("pipeline: host %s: %v", h, err)
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
			return err
		}
	}
	system, err := acquireShared(listen, advertise, cfg.Token, cfg.TLS, cfg.Logger)
	if err != nil {
		return err
	}
	e.system, e.root, e.shared = system, system.Root, true
	shared.Lock()
	e.graph.Dropped = shared.undelivered.dropped
	e.graph.Tensors = shared.data
	shared.Unlock()
	hs := &hostSet{hosts: cfg.Hosts, stagesOf: make([][]int, len(cfg.Hosts)),
		waiting: make([]map[*actor.Future]bool, len(cfg.Hosts)), why: make([]*actors.Lost, len(cfg.Hosts))}
	for h := range hs.waiting {
		hs.waiting[h] = map[*actor.Future]bool{}
	}
	e.hostSet = hs
	for id, s := range e.plan.Slots {
		hs.stagesOf[s.Host] = append(hs.stagesOf[s.Host], id)
	}
	for h, host := range cfg.Hosts {
		if err := e.openSession(h, host, at[h]); err != nil {
			return err
		}
	}
	return nil
}

// openSession spawns this engine's session on host, whose worker has actor
// address at, and opens the run there. A worker still holding a run whose
// coordinator is gone (a restart right after a crash) drops it within
// sessionSilence: until then it is asked again.
func (e *Engine) openSession(h int, host, at string) error {
	hs := e.hostSet
	deadline := time.Now().Add(sessionSilence + 2*time.Second)
	for {
		res, err := remote.GetRemote(e.system).SpawnNamed(at, fmt.Sprintf("%s-%x-%d", e.cfg.RunID, e.run.Gen, time.Now().UnixNano()), sessionKind, spawnTimeout)
		if err != nil {
			return &HandshakeError{host, fmt.Errorf("spawning the run's session: %v", err)}
		}
		if res.Pid == nil {
			return &HandshakeError{host, fmt.Errorf("spawning the run's session: status %d", res.StatusCode)}
		}
		ans, err := e.root.RequestFuture(res.Pid, &wire.Open{Run: e.runWire(), Coordinator: actors.ToPid(e.coordPID()),
			Stages: int64(len(hs.stagesOf[h])), Threads: int64(e.plan.HostThreads), OneBusy: e.plan.OneBusy()}, spawnTimeout).Result()
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

func (e *Engine) runWire() *wire.Run { return &wire.Run{Id: e.run.ID, Gen: e.run.Gen} }

// coordPID is the address the coordinator actor will have: it is spawned
// after the stages, whose Build names it.
func (e *Engine) coordPID() *actor.PID { return actor.NewPID(e.system.Address(), e.coordinatorName()) }

// coordinatorName is the coordinator actor's name: engines share this
// process's endpoint, so each name carries the engine's generation.
func (e *Engine) coordinatorName() string { return fmt.Sprintf("coordinator-%x", e.run.Gen) }

// buildRemote asks slot id's host to build its stage actor, and returns its
// address and thread budget.
func (e *Engine) buildRemote(id int, s Slot) (*actor.PID, int, error) {
	hs, h, name := e.hostSet, s.Host, s.Name
	b, err := s.Spec.ToWire(e.runWire())
	if err != nil {
		return nil, 0, err
	}
	ans, err := e.root.RequestFuture(hs.sessions[h], b, spawnTimeout).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("pipeline: host %s: building %s: %v", hs.hosts[h], name, err)
	}
	built, ok := ans.(*wire.Built)
	if !ok {
		return nil, 0, fmt.Errorf("pipeline: host %s: building %s: unexpected answer %T", hs.hosts[h], name, ans)
	}
	if built.Err != nil {
		return nil, 0, fmt.Errorf("pipeline: host %s: %w", hs.hosts[h], built.Err.Err())
	}
	return actors.FromPid(built.Stage), int(built.Threads), nil
}

// closeHosts ends the sessions, each within a bound, and stops the monitor.
func (e *Engine) closeHosts() {
	hs := e.hostSet
	if hs != nil {
		var futures []*actor.Future
		for i, s := range hs.sessions {
			if hs.lostWhy(i) == nil { // a lost host drops the run on its own
				futures = append(futures, e.root.RequestFuture(s, &wire.Close{Run: e.runWire()}, 2*time.Second))
			}
		}
		for _, f := range futures {
			_, _ = f.Result()
		}
		if hs.monitor != nil {
			_ = e.root.StopFuture(hs.monitor).Wait()
		}
	}
}

// beatTick makes the monitor send a heartbeat and look for lost hosts.
type beatTick struct{}

// monitor watches an engine's hosts: their sessions (protoactor's Watch,
// which a broken connection ends with AddressTerminated) and a heartbeat the
// session answers, which finds a silent link or a stuck process. The first
// lost host stops the coordinator with an error naming it and its stages.
type monitor struct {
	run      actors.Run
	hosts    *hostSet
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
