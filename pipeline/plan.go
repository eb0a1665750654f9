package pipeline

import (
	"fmt"
	"runtime"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
	"github.com/pipetrain/pipetrain/tensor"
)

// Plan is what an engine will run, worked out as a plain value before any
// actor exists: the chain's positions, one slot per stage actor with its
// layers, name, host and thread budget, and the schedule's rules. New makes
// it and start only follows it.
type Plan struct {
	Schedule      actors.Schedule
	Micro         int        // micro-batches a replica's share of a mini-batch
	Stages        int        // with Chunks > 1: the stages the positions take turns on
	Chunks        int        // positions a stage runs (Config.Chunks); 1 unless the schedule is chunked
	SplitBackward bool       // stages send dX upstream before computing dW
	Replicas      int        // copies of the chain; replica r's slots are ids [r·n, (r+1)·n) of n a chain
	Positions     []Position // the chain, in order; its Slots are replica 0's
	Slots         []Slot     // the stage actors, by id
	Hosts         []string   // the workers the slots run on; none: all here
	Threads       int        // the thread budget of each stage actor here
	HostThreads   int        // each stage actor's on a worker; 0: the worker's share of its cores
	Loss          nn.Loss
	ClipNorm      float64 // the global gradient norm's bound; 0: none
	Optimistic    bool    // stages update before the norm, and redo it when it clips (Config.OptimisticClip)
	EvalWindow    int     // Config.EvalWindow
}

// Position is a place in the chain, what the schedules count ("i of p"):
// consecutive layers run by one stage actor, or one layer split over the
// shard actors of its output columns.
type Position struct {
	Layers []int // global layer indices
	Slots  []int // its stage actors' ids
	Split  []int // column bounds of its output over its stage actors, len(Slots)+1; nil for one
	Units  []int // the same bounds in units, the rows of the shards' parameters; nil for one
}

// Slot is one stage actor to be.
type Slot struct {
	Layers   []nn.Layer // its layers, or its shard of one
	First    int        // the global index of its first layer
	Position int
	Shard    int    // its index within its position
	Name     string // "stage 2", "stage 1 shard 0", "replica 1 stage 2"
	Host     int    // its worker, an index into Plan.Hosts; -1: this process
	Replica  int    // the chain it belongs to
	Owner    int    // the replica 0 slot whose weights it computes with: its own id in replica 0
	Span     int    // its layers are [First, First+Span)
	Params   []SlotParam
	Spec     recipe.StageSpec
}

// SlotParam is one of a slot's parameters, in the order its stage holds
// them: what the plan and the wiring need of it once a slot on a worker
// has dropped its layers here.
type SlotParam struct {
	Layer int // the global index of its layer
	Name  string
	Size  int // its elements
}

// HasParams reports whether the slot's stage holds parameters.
func (s Slot) HasParams() bool { return len(s.Params) > 0 }

// newSlot returns the slot of layers ls from global layer first on.
func newSlot(ls []nn.Layer, first, position, shard int) Slot {
	s := Slot{Layers: ls, First: first, Position: position, Shard: shard, Span: len(ls)}
	for j, l := range ls {
		for _, p := range l.Params() {
			s.Params = append(s.Params, SlotParam{Layer: first + j, Name: p.Name, Size: p.Value.Size()})
		}
	}
	return s
}

// PerReplica returns the stage actors of one chain.
func (p *Plan) PerReplica() int { return len(p.Slots) / max(1, p.Replicas) }

// Chain returns the stage actors of replica r at position i.
func (p *Plan) Chain(r, i int) []int {
	ids := make([]int, len(p.Positions[i].Slots))
	for k, id := range p.Positions[i].Slots {
		ids[k] = id + r*p.PerReplica()
	}
	return ids
}

// Copies returns the stage actors of every replica that share slot id's
// weights, replica 0's (the owner) first.
func (p *Plan) Copies(id int) []int {
	owner := p.Slots[id].Owner
	ids := make([]int, p.Replicas)
	for r := range ids {
		ids[r] = owner + r*p.PerReplica()
	}
	return ids
}

// OwnCopies reports whether each replica's stage actors hold their own
// copies of the weights: on hosts, where stage actors share no memory with
// the coordinator's plan; the gradients then travel with the turn and the
// owner sends the updated weights (actors.Wire.OwnCopies).
func (p *Plan) OwnCopies() bool { return p.Replicas > 1 && len(p.Hosts) > 0 }

// Sharded reports whether position i splits a layer over several actors.
func (p *Plan) Sharded(i int) bool { return len(p.Positions[i].Slots) > 1 }

// OneBusy reports whether one stage actor at a time is busy: with one
// replica, under the sequential schedule, or with a single micro-batch and no
// shards (the shards of a layer run together).
func (p *Plan) OneBusy() bool {
	return p.Replicas <= 1 && (p.Schedule.OneAtATime() || p.Micro == 1 && len(p.Slots) == len(p.Positions))
}

// HostName returns the worker slot id runs on, or "" for this process.
func (p *Plan) HostName(id int) string {
	if h := p.Slots[id].Host; h >= 0 {
		return p.Hosts[h]
	}
	return ""
}

// makePlan decides the chain for layers under cfg: the positions (layers
// grouped into cfg.Stages balanced by measured cost, or one a layer; a
// sharded layer alone at a position of its own), the slots and their names,
// cfg.Replicas copies of the chain whose layers build makes anew and points
// at the first chain's weights (build may be nil for one replica), their
// hosts (placeHosts, from outs: the values of a sample of each layer's
// output, nil if unknown) and the threads each stage actor here may use.
func makePlan(layers []nn.Layer, features int, outs []int, cfg Config, build func(layer int) (nn.Layer, error)) (*Plan, error) {
	bounds, err := group(layers, features, cfg)
	if err != nil {
		return nil, err
	}
	p := &Plan{Schedule: cfg.Schedule, Micro: cfg.MicroBatches, Stages: cfg.Stages, Chunks: max(1, cfg.Chunks),
		SplitBackward: cfg.SplitBackward || cfg.Schedule.SplitsBackward(), Replicas: max(1, cfg.Replicas),
		Hosts: cfg.Hosts, HostThreads: cfg.GEMMThreads, Loss: cfg.Loss, ClipNorm: cfg.ClipNorm, Optimistic: cfg.OptimisticClip && cfg.ClipNorm > 0, EvalWindow: cfg.EvalWindow}
	if err := p.place(layers, bounds, cfg.Shards); err != nil {
		return nil, err
	}
	if err := p.replicate(build); err != nil {
		return nil, err
	}
	for id := range p.Slots {
		s := &p.Slots[id]
		s.Name = fmt.Sprintf("stage %d", s.Position)
		if st, chunk := p.StageOf(s.Position); p.Chunks > 1 {
			s.Name = fmt.Sprintf("stage %d chunk %d", st, chunk)
		}
		if p.Sharded(s.Position) {
			s.Name = fmt.Sprintf("stage %d shard %d", s.Position, s.Shard)
		}
		if s.Replica > 0 {
			s.Name = fmt.Sprintf("replica %d %s", s.Replica, s.Name)
		}
	}
	p.placeHosts(outs, max(1, cfg.SampleRows)*max(1, cfg.MicroBatches))
	p.Threads = p.budget(cfg.GEMMThreads)
	return p, nil
}

// specify writes each slot's StageSpec, for a model m under cfg.
func (p *Plan) specify(m Model, cfg Config) {
	turn := 0
	if p.Replicas > 1 && cfg.GEMMThreads == 0 {
		// The other replicas at this place wait meanwhile: the weight
		// gradients added under the turn, and the update, may use their cores.
		turn = runtime.GOMAXPROCS(0)
	}
	for id := range p.Slots {
		s := &p.Slots[id]
		pos := p.Positions[s.Position]
		sp := recipe.StageSpec{ID: id, Name: s.Name, Model: m, Lo: s.First, Hi: s.First + s.Span, Shard: s.Shard, Position: s.Position,
			Layers: pos.Layers, Replica: s.Replica, NeedDX: s.Position > 0, Precision: cfg.Precision,
			ClipValue: cfg.ClipValue, ClipNorm: cfg.ClipNorm > 0}
		if p.Sharded(s.Position) {
			sp.Cols = [2]int{pos.Units[s.Shard], pos.Units[s.Shard+1]}
		}
		if p.Chunks > 1 || p.Schedule.Programmed() {
			st, _ := p.StageOf(s.Position)
			sp.Stage = 1 + st
		}
		if s.Replica == 0 { // the other replicas use its weights
			opt := cfg.Optimizer
			sp.Optimizer = &opt
		}
		if s.Host < 0 {
			sp.Threads, sp.TurnThreads = p.Threads, turn
		}
		s.Spec = sp
	}
}

// replicate appends the slots of replicas 1 to Replicas-1, each a copy of
// replica 0's with layers made by build and sharing the weights,
// gradients and buffers of replica 0's (nn.ShareParams): no weight is
// copied. Layers are built one at a time, so the weights they are built
// with and drop are at most one layer's. On hosts each stage builds its
// own layers there, so a copy's slot names its owner's, which never run.
func (p *Plan) replicate(build func(layer int) (nn.Layer, error)) error {
	n := len(p.Slots)
	for id := range n {
		p.Slots[id].Owner = id
	}
	if p.Replicas > 1 && build == nil && len(p.Hosts) == 0 {
		return fmt.Errorf("pipeline: %d replicas need the model's specs", p.Replicas)
	}
	for r := 1; r < p.Replicas; r++ {
		for id := range n {
			s := p.Slots[id]
			c := Slot{Layers: s.Layers, First: s.First, Position: s.Position, Shard: s.Shard, Replica: r, Owner: id, Span: s.Span, Params: s.Params}
			if len(p.Hosts) == 0 {
				c.Layers = nil
				for j, own := range s.Layers {
					l, err := p.shareLayer(r, s, s.First+j, own, build)
					if err != nil {
						return err
					}
					c.Layers = append(c.Layers, l)
				}
			}
			p.Slots = append(p.Slots, c)
		}
	}
	return nil
}

// shareLayer builds layer (slot s's shard of it) anew for replica r and
// points it at own's parameters, gradients and buffers.
func (p *Plan) shareLayer(r int, s Slot, layer int, own nn.Layer, build func(layer int) (nn.Layer, error)) (nn.Layer, error) {
	l, err := build(layer)
	if err != nil {
		return nil, err
	}
	if p.Sharded(s.Position) {
		pos := p.Positions[s.Position]
		l = l.(nn.Sharder).Shard(pos.Units[s.Shard], pos.Units[s.Shard+1])
	}
	if err := nn.ShareParams(l, own); err != nil {
		return nil, fmt.Errorf("pipeline: replica %d: %w", r, err)
	}
	return l, nil
}

// budget is each stage actor's thread budget (nn.Pass.Threads and its
// optimizer's), so that kernels and stages do not oversubscribe the cores:
// stage actors that run at once share GOMAXPROCS, so each gets its share
// unless a single actor is busy at a time. No process-wide setting is made.
func (p *Plan) budget(threads int) int {
	if threads > 0 {
		return threads
	}
	if len(p.Slots) == 1 || p.OneBusy() {
		return runtime.GOMAXPROCS(0)
	}
	if p.Chunks > 1 { // a stage's actors take turns
		return max(1, runtime.GOMAXPROCS(0)/p.Stages)
	}
	return max(1, runtime.GOMAXPROCS(0)/len(p.Slots))
}

// StageOf returns the stage that runs position i and i's index among that
// stage's positions: i and 0 unless the schedule has chunks.
func (p *Plan) StageOf(i int) (stage, chunk int) {
	if p.Chunks <= 1 {
		return i, 0
	}
	st := p.Schedule.Stage(i, p.Stages, p.Chunks)
	for c := range i {
		if p.Schedule.Stage(c, p.Stages, p.Chunks) == st {
			chunk++
		}
	}
	return st, chunk
}

// checkChunks settles cfg's stages and chunks for a chunked schedule over
// n layers: ZBV's two chunks, stages = 0 as the most stages whose chunks
// the layers fill, and refuses what the chunks cannot run with.
func checkChunks(cfg *Config, n int) error {
	if cfg.Chunks < 0 {
		return fmt.Errorf("pipeline: chunks = %d must not be negative", cfg.Chunks)
	}
	if cfg.Schedule.Programmed() && cfg.Replicas > 1 {
		return fmt.Errorf("pipeline: the %s schedule runs one chain: replicas = %d", cfg.Schedule, cfg.Replicas)
	}
	for i, k := range cfg.Shards {
		if k > 1 && cfg.Schedule.Programmed() {
			return fmt.Errorf("pipeline: the %s schedule does not shard layers: layer %d has %d shards", cfg.Schedule, i, k)
		}
	}
	if !cfg.Schedule.Chunked() {
		if cfg.Chunks > 1 {
			return fmt.Errorf("pipeline: chunks = %d needs the interleaved or zbv schedule, not %s", cfg.Chunks, cfg.Schedule)
		}
		cfg.Chunks = 1
		return nil
	}
	if cfg.Schedule == actors.ZBV {
		if cfg.Chunks > 2 {
			return fmt.Errorf("pipeline: chunks = %d: zbv runs 2 a stage", cfg.Chunks)
		}
		cfg.Chunks = 2
	}
	cfg.Chunks = max(1, cfg.Chunks)
	if cfg.Chunks == 1 {
		return nil
	}
	if cfg.Stages == 0 {
		cfg.Stages = n / cfg.Chunks
	}
	if cfg.Stages*cfg.Chunks > n || cfg.Stages == 0 {
		return fmt.Errorf("pipeline: %d stages of %d chunks need at least %d layers, and the model has %d", max(1, cfg.Stages), cfg.Chunks, max(1, cfg.Stages)*cfg.Chunks, n)
	}
	return nil
}

// group partitions the layers into stages: one per layer, or cfg.Stages
// groups balanced by measured cost. It returns the groups' bounds.
func group(layers []nn.Layer, features int, cfg Config) ([]int, error) {
	groups := cfg.Stages * max(1, cfg.Chunks)
	if groups == 0 || groups >= len(layers) {
		return Partition(make([]float64, len(layers)), len(layers)), nil
	}
	if groups == 1 {
		return []int{0, len(layers)}, nil
	}
	// one goroutine each: the costs are compared, and each stage of several
	// gets about one core
	costs, err := MeasureCosts(layers, features, max(1, cfg.SampleRows), 3, 1, paramDType(layers), cfg.Precision)
	if err != nil {
		return nil, err
	}
	for i, k := range cfg.Shards {
		if k > 1 && i < len(costs) {
			costs[i] /= float64(k)
		}
	}
	return Partition(costs, groups), nil
}

func paramDType(layers []nn.Layer) tensor.DType {
	for _, l := range layers {
		for _, p := range l.Params() {
			return p.Value.DType()
		}
	}
	return tensor.Float32
}

// place turns the groups of layers into positions and slots, a sharded
// layer into a position of its own with one slot per shard.
func (p *Plan) place(layers []nn.Layer, bounds, shards []int) error {
	whole := func(ls []nn.Layer, first int) {
		pos := Position{Slots: []int{len(p.Slots)}}
		for i := range ls {
			pos.Layers = append(pos.Layers, first+i)
		}
		p.Slots = append(p.Slots, newSlot(ls, first, len(p.Positions), 0))
		p.Positions = append(p.Positions, pos)
	}
	for g := 0; g+1 < len(bounds); g++ {
		run := bounds[g]
		for i := bounds[g]; i < bounds[g+1]; i++ {
			k := 1
			if i < len(shards) {
				k = max(1, shards[i])
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
				return fmt.Errorf("pipeline: layer %d (%s) cannot be sharded: only linear layers on flat samples and conv2d layers can", i, layers[i].Kind())
			}
			if k > nu {
				return fmt.Errorf("pipeline: layer %d (%s): %d shards for %d units", i, layers[i].Kind(), k, nu)
			}
			if run < i {
				whole(layers[run:i], run)
			}
			pos := Position{Layers: []int{i}, Split: []int{0}, Units: []int{0}}
			for part, sp := range nn.SplitEven(nu, k) {
				p.Slots = append(p.Slots, newSlot([]nn.Layer{sh.Shard(sp.Lo, sp.Hi)}, i, len(p.Positions), part))
				pos.Slots = append(pos.Slots, len(p.Slots)-1)
				pos.Split = append(pos.Split, sp.Hi*cols)
				pos.Units = append(pos.Units, sp.Hi)
			}
			p.Positions = append(p.Positions, pos)
			run = i + 1
		}
		if run < bounds[g+1] {
			whole(layers[run:bounds[g+1]], run)
		}
	}
	return nil
}

// placeHosts puts the slots on the hosts in whichever of two layouts
// sends fewer values a step (wireCost, for rows a replica): all R·S slots
// in contiguous blocks over the hosts, replica after replica in the order
// the turn visits them (replica 1 first, the owner last: actors.ReplicaOf),
// so that a replica may keep its chain on one host and only the turn
// crosses, once per boundary between hosts (the gradients' sum over the
// replicas, then the owner's new weights back); or, when a chain has a slot
// for every host, replica 0's slots in contiguous blocks and every other
// replica's copy of a slot beside its owner, so that the turn stays on one
// host and only activations cross, as for one chain. Ties and unknown sizes
// take the first.
func (p *Plan) placeHosts(outs []int, rows int) {
	hosts := len(p.Hosts)
	byReplica := func(id int) int {
		per := p.PerReplica()
		return hostOf(actors.ShareOf(id/per, p.Replicas)*per+id%per, len(p.Slots), hosts)
	}
	byOwner := func(id int) int { return hostOf(p.Slots[id].Owner, p.PerReplica(), hosts) }
	place := byReplica
	switch {
	case hosts == 0:
		place = func(int) int { return -1 }
	case p.Chunks > 1: // a stage's positions share its cores
		place = func(id int) int {
			st, _ := p.StageOf(p.Slots[id].Position)
			return hostOf(st, p.Stages, hosts)
		}
	case p.Replicas > 1 && len(outs) > 0 && p.PerReplica() >= hosts && p.wireCost(byOwner, outs, rows) < p.wireCost(byReplica, outs, rows):
		place = byOwner
	}
	for id := range p.Slots {
		p.Slots[id].Host = place(id)
	}
}

// wireCost estimates the values a step sends between hosts with slot id on
// host(id) (activations and weights share a dtype, so values compare as
// bytes do): for each replica (rows rows), the activations and their
// gradients between consecutive positions on different hosts; for each
// slot with parameters, its gradients from copy to copy in the turn's
// order, the owner last, and its weights from the owner to each copy,
// where they change hosts.
func (p *Plan) wireCost(host func(id int) int, outs []int, rows int) int64 {
	var values int64
	for r := range p.Replicas {
		for i := 1; i < len(p.Positions); i++ {
			from, to := p.Chain(r, i-1), p.Chain(r, i)
			if host(from[0]) != host(to[0]) || host(from[len(from)-1]) != host(to[len(to)-1]) {
				prev := p.Positions[i-1].Layers
				values += int64(2 * rows * outs[prev[len(prev)-1]])
			}
		}
	}
	for id := range p.PerReplica() {
		var w int64
		for _, pr := range p.Slots[id].Params {
			w += int64(pr.Size)
		}
		copies := p.Copies(id)
		for i := 1; i < len(copies); i++ {
			if host(copies[actors.ReplicaOf(i-1, len(copies))]) != host(copies[actors.ReplicaOf(i, len(copies))]) {
				values += w // the gradients, on with the turn
			}
		}
		for _, c := range copies[1:] {
			if host(c) != host(copies[0]) {
				values += w // the new weights
			}
		}
	}
	return values
}

// hostOf returns the host that runs stage actor id of slots, placed in
// contiguous blocks: host h runs stage actors [h·S/H, (h+1)·S/H).
func hostOf(id, slots, hosts int) int {
	for h := range hosts {
		if id < (h+1)*slots/hosts {
			return h
		}
	}
	return hosts - 1
}
