package pipeline

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
	"github.com/pipetrain/pipetrain/pipeline/remote"
	"github.com/pipetrain/pipetrain/tensor"
)

// Config describes a pipeline.
type Config struct {
	Schedule     actors.Schedule
	MicroBatches int // micro-batches per mini-batch
	Stages       int // 0: one stage per layer; N: N stages balanced by measured cost
	// Chunks, under the Interleaved and ZBV schedules, is how many
	// positions of the chain each stage runs (Megatron's virtual stages):
	// the layers are grouped into Stages × Chunks positions, and the actors
	// of one stage's positions take turns on its cores. 0 or 1: one; ZBV
	// takes 2 whatever it says below that.
	Chunks    int
	Replicas  int   // copies of the chain, each on its share of a mini-batch's chunks (0 or 1: one)
	Shards    []int // per layer: split a linear or conv2d layer's units over this many actors (0 or 1: none)
	Loss      nn.Loss
	Optimizer optim.Spec // each parameter-owning stage builds its own from it
	ClipNorm  float64    // 0: off
	// OptimisticClip, with ClipNorm, has each stage update as soon as its
	// own gradients are complete, as if the norm will not clip, and put
	// the update back and redo it when the step's global norm does clip
	// (or is not finite): the bits of the update made after the norm, with
	// no stage waiting for it unless it clips. One chain only.
	OptimisticClip bool
	ClipValue      float64      // 0: off
	Precision      nn.Precision // of the layers' products; the workers' stages get it too

	SampleRows    int  // rows of the cost sample (default 64)
	GEMMThreads   int  // goroutines each stage actor's kernels may use; 0: all cores for one busy actor, else a share each
	SplitBackward bool // send dX upstream before computing dW (the zero-bubble idea)
	// EvalWindow, when not 0, is how many evaluation chunks run at once,
	// each in arenas the actors keep and reuse, so that an evaluation
	// allocates nothing after its first chunks (and a transformer block
	// keeps only its output); 0: up to 8 chunks, each allocated afresh.
	EvalWindow int
	Trace      bool          // record spans for WriteTrace
	Hang       time.Duration // watchdog: no message moved for this long fails the step (default 2 minutes)
	Logger     *zerolog.Logger

	// Hosts, when not empty, are the workers (`train worker`) that run the
	// stage actors, every replica's, in contiguous blocks in id order; the
	// coordinator, loss and optimizer actors stay here. Each stage builds
	// its own layers there from the Model, and only activations, their
	// gradients and scalars cross each step, and with replicas each
	// parameter block's gradients and weights (see the package doc).
	Hosts []string
	// Listen is where this process listens for its workers (host:port;
	// port 0 picks one); empty: 127.0.0.1:0, or 0.0.0.0:0 for hosts beyond
	// loopback. Advertise is the host:port they reach it at, if not that
	// (a proxy or NAT); empty: the address it listens on, or the one that
	// routes to the hosts.
	Listen, Advertise string
	Token             string     // shared with the workers; required beyond loopback
	TLS               remote.TLS // secures the links to the workers; empty: plaintext
	RunID             string     // names the run on the workers; required with Hosts
}

// Model is what a pipeline trains (see recipe.Model): each stage's recipe
// carries it to wherever the stage is built.
type Model = recipe.Model

// Engine is a running pipeline of actors. Its methods are for one goroutine, the
// training loop; the actors do the work.
type Engine struct {
	cfg     Config
	model   Model
	granule int // rows of a chunk of a mini-batch (nn.Granule)
	system  *actor.ActorSystem
	root    *actor.RootContext
	runs    *actors.Dispatcher // runs the actors spawned here
	graph   *actors.Graph
	log     zerolog.Logger

	plan      *Plan
	stages    []*actor.PID // stage actors in id order
	paramOf   []*actor.PID // parameter-owning stage actors in global parameter order
	status    []*actors.Status
	all       []*actor.PID
	coord     *actor.PID
	opt       *actor.PID
	loss      *actor.PID
	shapes    map[string][]int // full parameter shapes by name
	global    map[string]int   // parameter names to their index in the global order
	moveBuf   []*actors.Params // per stage, the copies MoveTo reuses
	threadsOf []int            // per stage actor, its thread budget

	// with Hosts
	run   actors.Run
	hosts *remote.Hosts // its system is this process's endpoint

	busy      atomic.Bool    // a step or evaluation is in flight
	step      int            // the last step asked for
	rollbacks int            // the last step's (Rollbacks)
	runStep   actors.RunStep // reused by every Step
	stop      chan struct{}
	stopped   sync.WaitGroup
	closed    bool
	spans     map[int][]actors.Span
	names     map[int]string
}

// StageInfo describes a stage actor.
type StageInfo struct {
	Actor    int
	Replica  int
	Position int // its place in the chain
	Shard    int
	Stage    int // the stage whose cores it runs on: its position unless the schedule has chunks
	Chunk    int // its index among that stage's positions
	Layers   []int
	Threads  int    // the goroutines its kernels may use
	Host     string // the worker it runs on; empty: this process
}

// New builds m's layers, the actor graph that runs them, and starts it.
func New(m Model, cfg Config) (*Engine, error) {
	if len(m.Specs) == 0 {
		return nil, errors.New("pipeline: the model has no layers")
	}
	layers, err := nn.BuildShape(m.Specs, m.Sample, m.Seed, m.DType, 0, len(m.Specs))
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return newEngine(layers, m, cfg)
}

// newEngine starts the graph for layers, built from m. The layers belong to
// the engine from then on: only its actors touch them.
func newEngine(layers []nn.Layer, m Model, cfg Config) (*Engine, error) {
	if cfg.MicroBatches < 1 {
		return nil, fmt.Errorf("pipeline: micro_batches = %d must be at least 1", cfg.MicroBatches)
	}
	if cfg.Stages < 0 || cfg.Stages > len(layers) {
		return nil, fmt.Errorf("pipeline: stages = %d must lie in [0, %d layers]", cfg.Stages, len(layers))
	}
	if err := checkChunks(&cfg, len(layers)); err != nil {
		return nil, err
	}
	if cfg.OptimisticClip && cfg.Replicas > 1 {
		return nil, fmt.Errorf("pipeline: optimistic clipping runs one chain: replicas = %d", cfg.Replicas)
	}
	if cfg.EvalWindow < 0 {
		return nil, fmt.Errorf("pipeline: eval window = %d must not be negative", cfg.EvalWindow)
	}
	if cfg.Hang <= 0 {
		cfg.Hang = 2 * time.Minute
	}
	if cfg.SampleRows <= 0 {
		cfg.SampleRows = 64
	}
	e := &Engine{cfg: cfg, model: m, granule: nn.ChunkRows, graph: actors.NewGraph(cfg.Trace), stop: make(chan struct{}), runs: actors.NewDispatcher(),
		shapes: map[string][]int{}, global: map[string]int{}, spans: map[int][]actors.Span{}, names: map[int]string{}}
	if len(m.Specs) > 0 {
		e.granule = nn.Granule(nn.Tokens(m.Specs, m.Sample))
	}
	e.log = zerolog.Nop()
	if cfg.Logger != nil {
		e.log = *cfg.Logger
	}
	for i, l := range layers {
		for _, p := range l.Params() {
			name := nn.ParamName(i, p.Name)
			e.shapes[name] = p.Value.Shape()
			e.global[name] = len(e.global)
		}
		for _, b := range nn.BuffersOf(l) { // saved and restored, never optimized
			e.shapes[nn.ParamName(i, b.Name)] = b.Value.Shape()
		}
	}
	build := layerBuilder(m)
	var outs []int // each layer's output values a sample, for placing replicas on hosts
	if shapes, err := nn.OutShapes(m.Specs, m.Sample); err == nil && len(m.Specs) > 0 {
		for _, sh := range shapes {
			outs = append(outs, tensor.SizeOf(sh))
		}
	}
	plan, err := makePlan(layers, tensor.SizeOf(m.Sample), outs, cfg, build)
	if err != nil {
		return nil, err
	}
	if _, err := cfg.Optimizer.New(); err != nil {
		return nil, err
	}
	plan.specify(m, cfg)
	for id := range plan.Slots {
		if plan.Slots[id].Host >= 0 {
			plan.Slots[id].Layers = nil // built where they run, from the slot's spec
		}
	}
	e.plan = plan
	if err := e.start(); err != nil {
		e.shutdown()
		return nil, err
	}
	return e, nil
}

// layerBuilder returns a function that builds layer i of m anew.
func layerBuilder(m Model) func(i int) (nn.Layer, error) {
	return func(i int) (nn.Layer, error) {
		ls, err := nn.BuildShape(m.Specs, m.Sample, m.Seed, m.DType, i, i+1)
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		return ls[0], nil
	}
}

// start spawns and wires every actor of the plan: the stage actors here or
// on the hosts, then the loss, optimizer and coordinator actors here.
func (e *Engine) start() error {
	if len(e.plan.Hosts) > 0 {
		if err := e.startHosts(); err != nil {
			return err
		}
	} else {
		e.system = recipe.NewActorSystem(e.cfg.Logger, nil)
		e.root = e.system.Root
	}
	var paramIDs []int
	for id, s := range e.plan.Slots {
		e.names[id] = s.Name
		if s.Replica == 0 && s.HasParams() {
			paramIDs = append(paramIDs, id)
		}
		if err := e.spawnStage(id, s); err != nil {
			return err
		}
	}
	for _, id := range paramIDs {
		e.paramOf = append(e.paramOf, e.stages[id])
	}
	n := len(e.plan.Slots)
	loss := actors.NewLoss(n, e.graph, e.plan.Loss, e.plan.Schedule.BackwardsWait(), e.plan.Threads)
	loss.SetRun(e.run)
	e.loss = e.spawn(loss, loss.Status(), "")
	opt := actors.NewOptimizer(n+1, e.graph, e.plan.ClipNorm, paramIDs, e.paramOf)
	opt.Optimistic = e.plan.Optimistic
	opt.SetRun(e.run)
	e.opt = e.spawn(opt, opt.Status(), "")
	first := make([][]*actor.PID, e.plan.Replicas)
	for r := range first {
		first[r] = e.pids(e.plan.Chain(r, 0))
	}
	updaters := len(paramIDs)
	if e.plan.OwnCopies() { // each replica's copy reports its new weights too
		updaters *= e.plan.Replicas
	}
	coord := actors.NewCoordinator(n+2, e.graph, e.plan.Schedule, e.plan.Micro, e.granule, first, e.loss, e.opt, updaters)
	coord.SetRun(e.run)
	name := ""
	if e.hosts != nil {
		name = e.hosts.CoordinatorName()
	}
	e.coord = e.spawn(coord, coord.Status(), name)
	e.names[n], e.names[n+1], e.names[n+2] = "loss", "optimizer", "coordinator"
	if err := e.wire(); err != nil {
		return err
	}
	if e.hosts != nil {
		e.hosts.Watch(e.names, e.coord)
		e.hosts.SetLive(e.fail)
	}
	e.stopped.Add(1)
	go e.watchdog()
	return nil
}

// spawn starts actor a here, named name (empty: one protoactor picks), and
// records its status. It stops rather than restarts on failure: a restart
// would make the actor anew and lose its weights.
func (e *Engine) spawn(a actor.Actor, st *actors.Status, name string) *actor.PID {
	produced := false
	props := actor.PropsFromProducer(func() actor.Actor {
		if produced {
			panic("pipeline: an actor may not be restarted") // its weights would be lost
		}
		produced = true
		return a
	}, actor.WithGuardian(recipe.StopStrategy), actor.WithSupervisor(recipe.StopStrategy), actor.WithDispatcher(e.runs))
	e.runs.Add()
	var pid *actor.PID
	if name != "" {
		pid, _ = e.root.SpawnNamed(props, name) // the system is new: no name is taken
	} else {
		pid = e.root.Spawn(props)
	}
	e.graph.Register(pid, st)
	e.status = append(e.status, st)
	e.all = append(e.all, pid)
	return pid
}

// spawnStage starts slot id's stage actor, here or on its host.
func (e *Engine) spawnStage(id int, s Slot) error {
	if s.Host >= 0 {
		pid, threads, err := e.hosts.Build(s.Host, s.Spec)
		if err != nil {
			return err
		}
		e.stages = append(e.stages, pid)
		e.threadsOf = append(e.threadsOf, threads)
		e.status = append(e.status, &actors.Status{Name: s.Name + " on " + pid.Address})
		e.all = append(e.all, pid)
		return nil
	}
	st, err := recipe.Build(s.Spec, s.Layers, e.graph)
	if err != nil {
		return fmt.Errorf("pipeline: %s: %w", s.Name, err)
	}
	e.stages = append(e.stages, e.spawn(st, st.Status(), ""))
	e.threadsOf = append(e.threadsOf, e.plan.Threads)
	return nil
}

// fail stops the engine with err, an undelivered message of its run, and
// returns its log.
func (e *Engine) fail(err error) *zerolog.Logger {
	e.graph.Sent(e.coord)
	e.root.Send(e.coord, &actors.Failed{Actor: -1, Err: err})
	return &e.log
}

// isRemote reports whether pid lives in another process.
func (e *Engine) isRemote(pid *actor.PID) bool { return pid.Address != e.system.Address() }

// shutdown stops what start began, after a failed start.
func (e *Engine) shutdown() {
	defer e.runs.Close()
	if e.system == nil {
		return
	}
	if e.hosts != nil {
		e.hosts.Close()
	} else {
		e.system.Shutdown()
	}
}

func (e *Engine) pids(ids []int) []*actor.PID {
	out := make([]*actor.PID, len(ids))
	for i, id := range ids {
		out[i] = e.stages[id]
	}
	return out
}

func (e *Engine) namesOf(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = e.names[id]
	}
	return out
}

// Stages describes every stage actor.
func (e *Engine) Stages() []StageInfo {
	var out []StageInfo
	for r := range e.plan.Replicas {
		for i, pos := range e.plan.Positions {
			for shard, id := range e.plan.Chain(r, i) {
				st, chunk := e.plan.StageOf(i)
				out = append(out, StageInfo{Actor: id, Replica: r, Position: i, Shard: shard, Stage: st, Chunk: chunk, Layers: pos.Layers, Threads: e.threadsOf[id], Host: e.plan.HostName(id)})
			}
		}
	}
	return out
}

// Actors returns every actor's live counters, stage actors first. Unlike
// the other methods it is safe to call from any goroutine while the engine
// runs: it reads counters the actors keep for watchers. An actor on a worker
// shows zeros here: the worker serves its counters.
func (e *Engine) Actors() []recipe.ActorStatus {
	out := make([]recipe.ActorStatus, len(e.status))
	for i, st := range e.status {
		out[i] = recipe.ActorStatus{Name: e.names[i], Mailbox: st.Pending(), Messages: st.Taken(), Busy: st.Busy()}
		if i < len(e.plan.Slots) {
			out[i].Host = e.plan.HostName(i)
		}
	}
	return out
}

// Positions returns the number of positions in the chain (the p of the
// schedules).
func (e *Engine) Positions() int { return len(e.plan.Positions) }

// Plan returns the plan the engine runs; the caller does not change it.
func (e *Engine) Plan() *Plan { return e.plan }

// Step runs one training step on a mini-batch and returns its mean loss. x and
// t belong to the engine until Step returns; nothing of them is read after.
// Passing the same x every step (refilled in place) saves re-slicing it.
// Steps run one at a time: Step is not safe for concurrent use.
func (e *Engine) Step(step int, lr float64, x *tensor.Tensor, t nn.Target) (float64, error) {
	e.busy.Store(true)
	defer e.busy.Store(false)
	e.step = step
	e.runStep = actors.RunStep{Step: step, LR: lr, X: x, T: t} // the coordinator is done with the last one
	res, err := e.request(e.coord, &e.runStep)
	if err != nil {
		return math.NaN(), fmt.Errorf("pipeline: step %d: %w", step, err)
	}
	r := res.(*actors.StepResult)
	e.rollbacks = r.Rollbacks
	return r.Loss, r.Err
}

// Rollbacks returns how many stages put back the provisional update of
// the last step (Config.OptimisticClip): the global norm clipped it.
func (e *Engine) Rollbacks() int { return e.rollbacks }

// Evaluate returns the model's mean loss on x and the accuracy (NaN without
// labels), processing rows at a time.
func (e *Engine) Evaluate(x *tensor.Tensor, t nn.Target, rows int) (float64, float64, error) {
	e.busy.Store(true)
	defer e.busy.Store(false)
	res, err := e.request(e.coord, &actors.RunEval{X: x, T: t, Rows: rows, Window: e.plan.EvalWindow})
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	r := res.(*actors.EvalResult)
	return r.Loss, r.Accuracy, r.Err
}

// Close stops the watchdog and every actor and shuts the actor system down.
func (e *Engine) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.hosts != nil {
		e.hosts.SetLive(nil)
	}
	close(e.stop)
	e.stopped.Wait()
	var errs []error
	// the coordinator first, so no new work starts while the others stop
	order := append([]*actor.PID{e.coord}, e.all[:len(e.all)-1]...)
	for _, pid := range order {
		if e.isRemote(pid) {
			continue // its session stops it
		}
		if err := e.root.StopFuture(pid).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("pipeline: stopping %s: %w", pid.Id, err))
		}
	}
	if e.hosts != nil {
		e.hosts.Close()
	} else {
		e.system.Shutdown()
	}
	e.runs.Close()
	return errors.Join(errs...)
}
