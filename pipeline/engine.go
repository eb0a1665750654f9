package pipeline

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// Config describes a pipeline.
type Config struct {
	Schedule     actors.Schedule
	MicroBatches int   // micro-batches per mini-batch
	Stages       int   // 0: one stage per layer; N: N stages balanced by measured cost
	Shards       []int // per layer: split a linear or conv2d layer's units over this many actors (0 or 1: none)
	Loss         nn.Loss
	Optimizer    optim.Spec // each parameter-owning stage builds its own from it
	ClipNorm     float64    // 0: off
	ClipValue    float64    // 0: off

	Features      int           // input width, for measuring layer costs
	SampleRows    int           // rows of the cost sample (default 64)
	GEMMThreads   int           // goroutines each stage actor's kernels may use; 0: all cores for one busy actor, else a share each
	SplitBackward bool          // send dX upstream before computing dW (the zero-bubble idea)
	Trace         bool          // record spans for WriteTrace
	Hang          time.Duration // watchdog: no message moved for this long fails the step (default 2 minutes)
	Logger        *zerolog.Logger

	// Hosts, when not empty, are the workers (`train worker`) that run the
	// stage actors, in contiguous blocks in order; the coordinator, loss and
	// optimizer actors stay here. Each stage builds its own layers there from
	// Specs, Features and Seed, which must be what the layers given to New
	// were built from (nn.Build), and only activations, their gradients and
	// scalars cross each step.
	Hosts  []string
	Specs  []nn.Spec
	Sample []int // a sample's shape for Specs (nn.BuildShape); nil: [Features]
	Seed   uint64
	Token  string // shared with the workers; required beyond loopback
	TLS    TLS    // secures the links to the workers; empty: plaintext
	RunID  string // names the run on the workers; required with Hosts
}

// Engine is a running pipeline of actors. Its methods are for one goroutine, the
// training loop; the actors do the work.
type Engine struct {
	cfg    Config
	system *actor.ActorSystem
	root   *actor.RootContext
	graph  *actors.Graph
	log    zerolog.Logger

	nodes     []node
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
	units     []unit
	threadsOf []int // per stage actor, its thread budget

	// with Hosts
	run     actors.Run
	shared  bool // the actor system is this process's endpoint (sharedSystem)
	hostSet *hostSet

	busy    atomic.Bool    // a step or evaluation is in flight
	step    int            // the last step asked for
	runStep actors.RunStep // reused by every Step
	stop    chan struct{}
	stopped sync.WaitGroup
	closed  bool
	spans   map[int][]actors.Span
	names   map[int]string
}

// node is one position in the chain: a group of consecutive layers run by one
// actor, or a layer split over several shard actors.
type node struct {
	layers []int // global layer indices
	actors []int // stage actor ids
	split  []int // column bounds of the node's output over its actors
	units  []int // the same bounds in units: rows of the shards' parameters
}

// StageInfo describes a stage actor.
type StageInfo struct {
	Actor   int
	Node    int
	Shard   int
	Layers  []int
	Threads int    // the goroutines its kernels may use
	Host    string // the worker it runs on; empty: this process
}

func (e *Engine) hostName(id int) string {
	if e.hostSet == nil {
		return ""
	}
	return e.hostSet.hosts[hostOf(id, len(e.units), len(e.hostSet.hosts))]
}

// New builds the actor graph for layers and starts it. The layers belong to the
// engine from then on: only its actors touch them.
func New(layers []nn.Layer, cfg Config) (*Engine, error) {
	if len(layers) == 0 {
		return nil, errors.New("pipeline: no layers")
	}
	if cfg.MicroBatches < 1 {
		return nil, fmt.Errorf("pipeline: micro_batches = %d must be at least 1", cfg.MicroBatches)
	}
	if cfg.Stages < 0 || cfg.Stages > len(layers) {
		return nil, fmt.Errorf("pipeline: stages = %d must lie in [0, %d layers]", cfg.Stages, len(layers))
	}
	if cfg.Hang <= 0 {
		cfg.Hang = 2 * time.Minute
	}
	if cfg.SampleRows <= 0 {
		cfg.SampleRows = 64
	}
	e := &Engine{cfg: cfg, graph: actors.NewGraph(cfg.Trace), stop: make(chan struct{}),
		shapes: map[string][]int{}, global: map[string]int{}, spans: map[int][]actors.Span{}, names: map[int]string{}}
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
	groups, err := e.group(layers)
	if err != nil {
		return nil, err
	}
	units, err := e.buildNodes(layers, groups)
	if err != nil {
		return nil, err
	}
	e.units = units
	if _, err := cfg.Optimizer.New(); err != nil {
		return nil, err
	}
	if err := e.start(units); err != nil {
		e.shutdown()
		return nil, err
	}
	return e, nil
}

// gemmBudget is each stage actor's thread budget (nn.Pass.Threads and its
// optimizer's), so that kernels and stages do not oversubscribe the cores:
// stage actors that run at once share GOMAXPROCS, so each gets its share
// unless a single actor is busy at a time. No process-wide setting is made.
func (e *Engine) gemmBudget(n int) int {
	if e.cfg.GEMMThreads > 0 {
		return e.cfg.GEMMThreads
	}
	if n == 1 || e.oneBusy() {
		return runtime.GOMAXPROCS(0)
	}
	return max(1, runtime.GOMAXPROCS(0)/n)
}

// oneBusy reports whether one stage actor at a time is busy: under the
// sequential schedule, or with a single micro-batch and no shards (the
// shards of a layer run together).
func (e *Engine) oneBusy() bool {
	return e.cfg.Schedule == actors.Sequential || e.cfg.MicroBatches == 1 && len(e.units) == len(e.nodes)
}

// group partitions the layers into stages: one per layer, or cfg.Stages groups
// balanced by measured cost.
func (e *Engine) group(layers []nn.Layer) ([]int, error) {
	if e.cfg.Stages == 0 || e.cfg.Stages >= len(layers) {
		return Partition(make([]float64, len(layers)), len(layers)), nil
	}
	if e.cfg.Stages == 1 {
		return []int{0, len(layers)}, nil
	}
	rows := max(1, e.cfg.SampleRows)
	// one goroutine each: the costs are compared, and each stage of several
	// gets about one core
	costs, err := MeasureCosts(layers, e.cfg.Features, rows, 3, 1, paramDType(layers))
	if err != nil {
		return nil, err
	}
	for i, k := range e.cfg.Shards {
		if k > 1 && i < len(costs) {
			costs[i] /= float64(k)
		}
	}
	return Partition(costs, e.cfg.Stages), nil
}

func paramDType(layers []nn.Layer) tensor.DType {
	for _, l := range layers {
		for _, p := range l.Params() {
			return p.Value.DType()
		}
	}
	return tensor.Float32
}

// unit is one stage actor to be: its layers and where it sits.
type unit struct {
	layers []nn.Layer
	first  int
	node   int
	part   int
}

// buildNodes turns stage groups into nodes, splitting a sharded layer into a
// node of its own with one actor per shard.
func (e *Engine) buildNodes(layers []nn.Layer, bounds []int) ([]unit, error) {
	var units []unit
	addNode := func(ls []nn.Layer, first int, split []int) {
		n := node{split: split}
		for i := range ls {
			n.layers = append(n.layers, first+i)
		}
		units = append(units, unit{layers: ls, first: first, node: len(e.nodes)})
		n.actors = []int{len(units) - 1}
		e.nodes = append(e.nodes, n)
	}
	for g := 0; g+1 < len(bounds); g++ {
		run := bounds[g]
		for i := bounds[g]; i < bounds[g+1]; i++ {
			k := 1
			if i < len(e.cfg.Shards) {
				k = max(1, e.cfg.Shards[i])
			}
			if k == 1 {
				continue
			}
			sh, ok := layers[i].(nn.Sharder)
			nu, cols := 0, 0
			if ok {
				nu, cols = sh.ShardUnits()
			}
			if nu == 0 {
				return nil, fmt.Errorf("pipeline: layer %d (%s) cannot be sharded: only linear and conv2d layers can", i, layers[i].Kind())
			}
			if k > nu {
				return nil, fmt.Errorf("pipeline: layer %d (%s): %d shards for %d units", i, layers[i].Kind(), k, nu)
			}
			if run < i {
				addNode(layers[run:i], run, nil)
			}
			n := node{layers: []int{i}, split: []int{0}, units: []int{0}}
			for part, sp := range nn.SplitEven(nu, k) {
				units = append(units, unit{layers: []nn.Layer{sh.Shard(sp.Lo, sp.Hi)}, first: i, node: len(e.nodes), part: part})
				n.actors = append(n.actors, len(units)-1)
				n.split = append(n.split, sp.Hi*cols)
				n.units = append(n.units, sp.Hi)
			}
			e.nodes = append(e.nodes, n)
			run = i + 1
		}
		if run < bounds[g+1] {
			addNode(layers[run:bounds[g+1]], run, nil)
		}
	}
	return units, nil
}

var stopStrategy = actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })

// start spawns and wires every actor: the stage actors here or on the
// hosts, then the loss, optimizer and coordinator actors here.
func (e *Engine) start(units []unit) error {
	if len(e.cfg.Hosts) > 0 {
		if err := e.startHosts(units); err != nil {
			return err
		}
	} else {
		e.system = newActorSystem(e.cfg.Logger)
		e.root = e.system.Root
	}
	spawn := func(a actor.Actor, st *actors.Status, name string) *actor.PID {
		produced := false
		props := actor.PropsFromProducer(func() actor.Actor {
			if produced {
				panic("pipeline: an actor may not be restarted") // its weights would be lost
			}
			produced = true
			return a
		}, actor.WithGuardian(stopStrategy), actor.WithSupervisor(stopStrategy))
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
	p := len(e.nodes)
	threads := e.gemmBudget(len(units))
	spec := e.cfg.Optimizer
	spec.Threads = threads
	var paramIDs []int
	for id, u := range units {
		name := fmt.Sprintf("stage %d", u.node)
		if len(e.nodes[u.node].actors) > 1 {
			name = fmt.Sprintf("stage %d shard %d", u.node, u.part)
		}
		e.names[id] = name
		if hasParams(u.layers) {
			paramIDs = append(paramIDs, id)
		}
		if e.hostSet != nil {
			pid, t, err := e.buildRemote(u, id, name, e.nodes[u.node].layers, paramDType(u.layers))
			if err != nil {
				return err
			}
			e.stages = append(e.stages, pid)
			e.threadsOf = append(e.threadsOf, t)
			e.status = append(e.status, &actors.Status{Name: name + " on " + pid.Address})
			e.all = append(e.all, pid)
			continue
		}
		up := actors.Updater{ClipValue: e.cfg.ClipValue, ClipNorm: e.cfg.ClipNorm > 0, Threads: threads}
		if hasParams(u.layers) {
			up.Optimizer, _ = spec.New() // checked in New
		}
		s := actors.NewStage(id, name, e.graph, u.layers, u.first, u.part, u.node > 0, up)
		e.stages = append(e.stages, spawn(s, s.Status(), ""))
		e.threadsOf = append(e.threadsOf, threads)
	}
	for _, id := range paramIDs {
		e.paramOf = append(e.paramOf, e.stages[id])
	}
	lossID, optID, coordID := len(units), len(units)+1, len(units)+2
	loss := actors.NewLoss(lossID, e.graph, e.cfg.Loss, e.cfg.Schedule == actors.GPipe)
	loss.SetRun(e.run)
	lossPID := spawn(loss, loss.Status(), "")
	opt := actors.NewOptimizer(optID, e.graph, e.cfg.ClipNorm, paramIDs, e.paramOf)
	opt.SetRun(e.run)
	e.opt = spawn(opt, opt.Status(), "")
	first := e.pids(e.nodes[0].actors)
	coord := actors.NewCoordinator(coordID, e.graph, e.cfg.Schedule, e.cfg.MicroBatches, first, lossPID, e.opt, len(paramIDs))
	coord.SetRun(e.run)
	name := ""
	if e.hostSet != nil {
		name = e.coordinatorName()
	}
	e.coord = spawn(coord, coord.Status(), name)
	e.names[lossID], e.names[optID], e.names[coordID] = "loss", "optimizer", "coordinator"

	e.loss = lossPID
	var wired []*actor.Future
	for i, n := range e.nodes {
		w := e.wiring(i)
		for _, id := range n.actors {
			f, err := e.future(e.stages[id], &w, queryTimeout)
			if err != nil {
				return err
			}
			wired = append(wired, f)
		}
	}
	// every stage knows its neighbours before any work starts: a stage's
	// first forward may come from another process than its wiring
	for _, f := range wired {
		if _, err := e.answer(f); err != nil {
			return fmt.Errorf("pipeline: wiring the stages: %w", err)
		}
	}
	last := e.nodes[p-1]
	e.graph.Sent(lossPID)
	e.graph.Sent(e.opt)
	e.root.Send(lossPID, &actors.Wire{Coordinator: e.coord, Prev: e.pids(last.actors), PrevSplit: last.split, InParts: len(last.actors)})
	e.root.Send(e.opt, &actors.Wire{Coordinator: e.coord})
	if e.hostSet != nil {
		m := &monitor{run: e.run, hosts: e.hostSet, names: e.names, coord: e.coord}
		e.hostSet.monitor = e.root.Spawn(actor.PropsFromProducer(func() actor.Actor { return m }))
		e.setLive(true)
	}
	e.stopped.Add(1)
	go e.watchdog()
	return nil
}

// wiring is how the stage actors at position i are linked to their
// neighbours and the engine's actors.
func (e *Engine) wiring(i int) actors.Wire {
	p := len(e.nodes)
	w := actors.Wire{Coordinator: e.coord, Optimizer: e.opt, InParts: 1, OutParts: 1,
		Limit: e.cfg.Schedule.Limit(i, p, e.cfg.MicroBatches), SplitBackward: e.cfg.SplitBackward}
	if i > 0 {
		w.Prev, w.PrevNames = e.pids(e.nodes[i-1].actors), e.namesOf(e.nodes[i-1].actors)
		w.PrevSplit = e.nodes[i-1].split
		w.InParts = len(w.Prev)
	}
	if i+1 < p {
		w.Next, w.NextNames = e.pids(e.nodes[i+1].actors), e.namesOf(e.nodes[i+1].actors)
		w.OutParts = len(w.Next)
	} else {
		w.Next, w.NextNames = []*actor.PID{e.loss}, []string{"loss"}
	}
	return w
}

// isRemote reports whether pid lives in another process.
func (e *Engine) isRemote(pid *actor.PID) bool { return pid.Address != e.system.Address() }

// shutdown stops what start began, after a failed start.
func (e *Engine) shutdown() {
	if e.system == nil {
		return
	}
	e.closeHosts()
	if e.shared {
		releaseShared()
	} else {
		e.system.Shutdown()
	}
}

func hasParams(layers []nn.Layer) bool {
	for _, l := range layers {
		if len(l.Params()) > 0 {
			return true
		}
	}
	return false
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
	for i, n := range e.nodes {
		for part, id := range n.actors {
			out = append(out, StageInfo{Actor: id, Node: i, Shard: part, Layers: n.layers, Threads: e.threadsOf[id], Host: e.hostName(id)})
		}
	}
	return out
}

// ActorStatus is one actor's live counters, for metrics.
type ActorStatus struct {
	Name     string        // "stage 2", "stage 1 shard 0", "loss", "optimizer", "coordinator"
	Mailbox  int64         // messages waiting
	Messages int64         // messages taken since the engine started
	Busy     time.Duration // time spent working since the engine started
	Host     string        // the worker it runs on, whose own counters these are not; empty: here
}

// Actors returns every actor's live counters, stage actors first. Unlike
// the other methods it is safe to call from any goroutine while the engine
// runs: it reads counters the actors keep for watchers. An actor on a worker
// shows zeros here: the worker serves its counters.
func (e *Engine) Actors() []ActorStatus {
	out := make([]ActorStatus, len(e.status))
	for i, st := range e.status {
		out[i] = ActorStatus{Name: e.names[i], Mailbox: st.Pending(), Messages: st.Taken(), Busy: st.Busy()}
		if i < len(e.units) {
			out[i].Host = e.hostName(i)
		}
	}
	return out
}

// Nodes returns the number of positions in the chain (the p of the schedules).
func (e *Engine) Nodes() int { return len(e.nodes) }

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
	hs := e.hostSet
	h := hs.hostIndex(pid.Address)
	if h < 0 {
		return nil, fmt.Errorf("pipeline: %s runs on no host of this engine", pid)
	}
	f := actor.NewFuture(e.system, d)
	if !hs.ask(h, f) {
		return nil, e.lost(hs.lostWhy(h))
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
	if e.hostSet != nil {
		h = e.hostSet.answered(f)
	}
	if l, ok := res.(*actors.Lost); ok {
		return nil, e.lost(l)
	}
	if err != nil {
		if h >= 0 {
			return nil, fmt.Errorf("pipeline: host %s: %w", e.hostSet.hosts[h], err)
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

// askAll sends msg(i) to every stage actor at once and returns their answers
// in stage order: the stages answer in parallel, not one round trip after
// the other.
func (e *Engine) askAll(msg func(i int) any) ([]any, error) {
	futures := make([]*actor.Future, len(e.stages))
	for i, pid := range e.stages {
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
	return r.Loss, r.Err
}

// Evaluate returns the model's mean loss on x and the accuracy (NaN without
// labels), processing rows at a time.
func (e *Engine) Evaluate(x *tensor.Tensor, t nn.Target, rows int) (float64, float64, error) {
	e.busy.Store(true)
	defer e.busy.Store(false)
	res, err := e.request(e.coord, &actors.RunEval{X: x, T: t, Rows: rows})
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	r := res.(*actors.EvalResult)
	return r.Loss, r.Accuracy, r.Err
}

// Snapshot returns copies of every parameter, named "<layer>.<param>" with
// shards joined back into whole tensors, and of the optimizer state, gathered
// from the stages that hold it into one State over the global parameter order
// (the order of nn.Sequential.Params), as one optimizer over the whole model
// would have it.
func (e *Engine) Snapshot() (map[string]*tensor.Tensor, optim.State, error) {
	return e.snapshot(false)
}

// MoveTo moves the training state, weights and optimizer state, into dst,
// an engine of the same model in any layout. It reuses this engine's copies
// from its last move, so that moving back and forth (pipeline "auto" trying
// layouts) faults in no new memory.
func (e *Engine) MoveTo(dst *Engine) error {
	weights, st, err := e.snapshot(true)
	if err != nil {
		return err
	}
	return dst.Restore(weights, st)
}

// snapshot is Snapshot; with reuse, into the engine's move buffers, valid
// until its next reusing snapshot.
func (e *Engine) snapshot(reuse bool) (map[string]*tensor.Tensor, optim.State, error) {
	weights := map[string][]*tensor.Tensor{}
	slots := map[string][]*tensor.Tensor{} // "<global index>.<slot>" to its shards' parts
	var order []string
	st := optim.State{Tensors: map[string]*tensor.Tensor{}}
	first := true
	if reuse && e.moveBuf == nil {
		e.moveBuf = make([]*actors.Params, len(e.stages))
		for i := range e.moveBuf {
			e.moveBuf[i] = new(actors.Params)
		}
	}
	answers, err := e.askAll(func(i int) any {
		if reuse {
			return &actors.GetParams{Into: e.moveBuf[i]}
		}
		return &actors.GetParams{}
	})
	if err != nil {
		return nil, optim.State{}, err
	}
	for _, res := range answers {
		p := res.(*actors.Params)
		for i, name := range p.Names {
			if weights[name] == nil {
				order = append(order, name)
			}
			weights[name] = append(weights[name], p.Values[i])
		}
		if len(p.Names) == 0 {
			continue
		}
		if first {
			st.Kind, st.Step, first = p.State.Kind, p.State.Step, false
		} else if p.State.Kind != st.Kind || p.State.Step != st.Step {
			return nil, optim.State{}, fmt.Errorf("pipeline: stage optimizers disagree: %s at step %d and %s at step %d", st.Kind, st.Step, p.State.Kind, p.State.Step)
		}
		if p.State.NumParams > 0 {
			st.NumParams = len(e.global)
		}
		for local, t := range p.State.Tensors {
			i, slot, err := optim.SplitStateName(local, len(p.Names))
			if err != nil {
				return nil, optim.State{}, err
			}
			g := optim.StateName(e.global[p.Names[i]], slot)
			slots[g] = append(slots[g], t)
		}
	}
	out := map[string]*tensor.Tensor{}
	for _, name := range order {
		out[name] = joinRows(weights[name])
	}
	for name, parts := range slots {
		st.Tensors[name] = joinRows(parts)
	}
	return out, st, nil
}

// Restore sets every parameter from weights (as Snapshot names them), and
// hands each stage its part of the optimizer state st (as Snapshot makes it).
func (e *Engine) Restore(weights map[string]*tensor.Tensor, st optim.State) error {
	for name, shape := range e.shapes {
		w, ok := weights[name]
		if !ok || !tensor.EqualShapes(w.Shape(), shape) {
			return fmt.Errorf("pipeline: parameter %q is missing or does not have shape %v", name, shape)
		}
	}
	if st.NumParams != 0 && st.NumParams != len(e.global) {
		return fmt.Errorf("pipeline: optimizer state is for %d parameters, the model has %d", st.NumParams, len(e.global))
	}
	for name := range st.Tensors { // checked before any stage changes
		if _, _, err := optim.SplitStateName(name, len(e.global)); err != nil {
			return err
		}
	}
	names, err := e.askAll(func(int) any { return &actors.GetParams{NamesOnly: true} })
	if err != nil {
		return err
	}
	sets := make([]*actors.SetParams, len(e.stages))
	for _, n := range e.nodes {
		for part, id := range n.actors {
			p := names[id].(*actors.Params)
			sets[id] = &actors.SetParams{}
			if len(p.Names) == 0 {
				continue
			}
			// this shard's rows of a whole tensor
			rows := func(t *tensor.Tensor) *tensor.Tensor {
				if len(n.actors) > 1 {
					return nn.SliceRows(t, n.units[part], n.units[part+1])
				}
				return t
			}
			values := make([]*tensor.Tensor, len(p.Names))
			local := optim.State{Kind: st.Kind, Step: st.Step, Tensors: map[string]*tensor.Tensor{}}
			if st.NumParams > 0 {
				for _, name := range p.Names {
					if _, ok := e.global[name]; ok { // a parameter, not a buffer
						local.NumParams++
					}
				}
			}
			for i, name := range p.Names {
				values[i] = rows(weights[name])
				g, ok := e.global[name]
				if !ok {
					continue // a buffer: no optimizer state
				}
				prefix := fmt.Sprintf("%d.", g)
				for g, t := range st.Tensors {
					if slot, ok := strings.CutPrefix(g, prefix); ok {
						local.Tensors[optim.StateName(i, slot)] = rows(t)
					}
				}
			}
			sets[id] = &actors.SetParams{Values: values, State: &local}
		}
	}
	acks, err := e.askAll(func(i int) any { return sets[i] })
	if err != nil {
		return err
	}
	for _, a := range acks {
		if err := a.(*actors.Ack).Err; err != nil {
			return err
		}
	}
	return nil
}

// joinRows stacks tensors along their first axis; one tensor is returned as is.
func joinRows(ps []*tensor.Tensor) *tensor.Tensor {
	if len(ps) == 1 {
		return ps[0]
	}
	var vals []float64
	rows := 0
	for _, p := range ps {
		vals = append(vals, p.Float64s()...)
		rows += p.Shape()[0]
	}
	shape := ps[0].Shape()
	shape[0] = rows
	return tensor.FromFloat64s(ps[0].DType(), vals, shape...)
}

// Stats returns every stage actor's counters since the last reset, keeping the
// spans for the trace.
func (e *Engine) Stats(reset bool) ([]actors.Stats, error) {
	var out []actors.Stats
	for _, pid := range e.all {
		res, err := e.request(pid, &actors.GetStats{Reset: reset})
		if err != nil {
			return nil, err
		}
		s := res.(*actors.Stats)
		if reset {
			e.spans[s.Actor] = append(e.spans[s.Actor], s.Spans...)
		}
		out = append(out, *s)
	}
	return out, nil
}

// watchdog fails the step in flight when no message has moved for cfg.Hang, and
// logs a "hang" event with what every actor was doing.
func (e *Engine) watchdog() {
	defer e.stopped.Done()
	tick := time.NewTicker(max(e.cfg.Hang/8, 10*time.Millisecond))
	defer tick.Stop()
	last, since := e.graph.Moved.Load(), time.Now()
	var beat <-chan time.Time
	if e.hostSet != nil {
		t := time.NewTicker(beatEvery)
		defer t.Stop()
		beat = t.C
	}
	for {
		select {
		case <-e.stop:
			return
		case <-beat:
			e.root.Send(e.hostSet.monitor, beatTick{})
		case now := <-tick.C:
			moved := e.graph.Moved.Load()
			if moved != last || !e.busy.Load() {
				last, since = moved, now
				continue
			}
			if now.Sub(since) < e.cfg.Hang {
				continue
			}
			err := e.hangReport()
			e.graph.Sent(e.coord)
			e.root.Send(e.coord, &actors.Hang{Err: err})
			since = now
		}
	}
}

func (e *Engine) hangReport() error {
	arr := zerolog.Arr()
	var parts []string
	for _, st := range e.status {
		last, inHand := st.Describe()
		arr.Dict(zerolog.Dict().Str("actor", st.Name).Int64("mailbox", st.Pending()).Str("last_message", last).Str("in_hand", inHand))
		if inHand != "" {
			parts = append(parts, fmt.Sprintf("%s is in %s", st.Name, inHand))
		}
	}
	e.log.Error().Str("event", "hang").Dur("quiet", e.cfg.Hang).Array("actors", arr).Msg("no message moved")
	sort.Strings(parts)
	if len(parts) == 0 {
		return fmt.Errorf("pipeline: no message moved for %v (every actor idle, waiting for a message none will send; the hang event in the log lists each one's last message)", e.cfg.Hang)
	}
	return fmt.Errorf("pipeline: no message moved for %v (%s)", e.cfg.Hang, strings.Join(parts, "; "))
}

// Close stops the watchdog and every actor and shuts the actor system down.
func (e *Engine) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.hostSet != nil {
		e.setLive(false)
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
	e.closeHosts()
	if e.shared {
		releaseShared()
	} else {
		e.system.Shutdown()
	}
	return errors.Join(errs...)
}
