package actors

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// Stage is an actor that runs consecutive layers of the model, or one shard of a
// sharded layer, for every micro-batch sent to it. It alone holds and writes the
// weights of its layers.
//
// Forwards are admitted while fewer than Limit micro-batches hold activations
// here (1F1B gives stage i of p the limit p-i); a backward runs as soon as it is
// complete, and queued forwards resume only after the messages already in the
// mailbox, so a ready backward always goes before a new forward.
type Stage struct {
	base
	layers   []nn.Layer // in the order they run (nn.RunOrder)
	paramsOf [][]int    // each layer's parameters' indices in ps
	ids      []int      // per entry of layers, its index in the model
	needDX   bool       // the first layer's input gradient is wanted (false on the first position)
	shard    int        // its index within its position

	w Wire

	fwdParts  map[partKey][]*tensor.Tensor
	bwdParts  map[int][]*tensor.Tensor
	queue     []*Forward // complete forwards waiting for a credit
	open      int        // micro-batches from the forward to the backward
	actBytes  []int64    // per micro-batch, the activation bytes its forward left in the arena
	rows      []int      // per micro-batch, nn.Pass.Row of its forward, for its backward
	liveBytes int64      // their sum over the micro-batches in flight
	kicked    bool
	current   int // index into layers of the layer running, for failure messages
	done      int // backwards finished in this step
	micros    int
	arenas    arenas             // the layers' outputs, reused every step
	scratch   nn.Arena           // nn.Pass.Scratch: what a layer reads during one call only
	evals     []nn.Arena         // with Wire.EvalWindow: evaluation chunk k's outputs in evals[k mod window]
	attention ops.AttentionWork  // nn.Pass.Attention: the attention's scratch, one for the stage's blocks
	ps        []nn.Param         // the layers' parameters, in order
	bufs      []namedBuffer      // the layers' buffers (batch norm's statistics), saved after the parameters
	split     []nn.SplitBackward // per layer, the layer if it can split its backward, else nil
	batch     []nn.BatchParams   // per layer, the layer if it batches its weight gradients, else nil
	updater   Updater
	weights   uint64 // nn.Pass.Weights: changed by every update and restore
	gradsDone bool   // the step's last backward is done
	upd       Update // the step's update, once haveUpd
	haveUpd   bool
	prov      Update // the step's provisional update (optimistic clipping), once haveProv
	haveProv  bool
	provDone  bool             // it is applied; kept and keptState hold what it replaced
	kept      []*tensor.Tensor // the weights before it
	keptState optim.State      // the optimizer's state before it
	clearTask clearTask
	pendingW  []pendingW // the step's weight gradients left by the split backward
	fill      []int      // under the zero-bubble schedules: micro-batches whose weight gradients wait, oldest first
	wKept     []pendingW // scratch for runW
	wMine     []pendingW
	bwdIn     []heldBackward   // under a programmed schedule: backwards waiting for their turn
	wLeft     bool             // under a programmed schedule: the step's backwards are done, weight gradients not
	wStep     int              // and the step's number
	wPasses   []nn.Pass        // scratch for weightGrads
	outs      []*tensor.Tensor // scratch: the outputs of a forward's layers, or a backward's input gradients

	// messages reused every step (see reused)
	fwdIn   reused[Forward] // gathered inputs of several parts, per micro-batch
	fwdOut  reused[Forward] // per micro-batch
	bwdOut  reused[Backward]
	bwdDone reused[BackwardDone]
	norm    GradNorm
	applied UpdateApplied

	// tied weights: the peers' gradients of the step, by tie, and the step
	// whose own gradients went out (0: none yet)
	tiedIn   map[int]*TiedGrad
	tiedSent int

	rep replicaState
}

// replicaState is a stage's part in sharing its weights with the other
// replicas' stages at its place (Wire.Copies). Replica 0's stage owns the
// weights, their gradients and the update; every replica's stage reads the
// weights during a step and adds into the gradients only while it holds the
// step's turn (GradTurn). The turn follows the shares of the step's rows
// (ReplicaOf): replica 1's stage, with the first share, holds it from the
// start and each passes it on once its own additions are done, to the next
// share's replica and last to the owner, which then updates. A replica's
// backward therefore computes input gradients at once and leaves the weight
// gradients until it holds the turn; a layer that cannot split them
// (nn.BatchParams) makes its backwards wait for the turn, and batch norm's
// running statistics its forwards too.
type replicaState struct {
	seq      int            // the training step in hand (Forward.Seq)
	active   int            // shares of that step: replicas with rows
	turnSeq  int            // the step whose turn the stage holds, if not first
	ordered  bool           // backwards wait for the turn
	buffered bool           // forwards wait for the turn too
	bwdsDone bool           // the stage finished the step's backwards
	held     []heldBackward // backwards waiting for the turn, in order

	// the turn in parts (GradTurn.Part): parts handed to the stage in the
	// step turnSeq, and those it has added into and passed on this step
	parts      []turnPart
	have, next int

	// with Wire.OwnCopies: each replica's stage holds its own weights
	own     bool
	out     reused[GradTurn] // a part each, reused every step
	weights reused[Weights]  // a part each, reused every step
}

// turnPart is one part of the turn: layers lo to hi (in run order, added
// from hi down) and the indices of their parameters in Stage.ps.
type turnPart struct {
	lo, hi int
	params []int
}

// turnBucket is the fewest gradient elements (1 MiB of float32) worth a
// part of the turn of their own: a part is a message and a wait, each
// layer's weight gradient a GEMM.
const turnBucket = 1 << 18

type heldBackward struct {
	step, micro int
	dy          *tensor.Tensor
}

// hasTurn reports whether the stage may add into the shared gradients of
// the step in hand: the first share's always may, the others once handed
// the turn.
func (s *Stage) hasTurn() bool { return s.first() || s.rep.turnSeq == s.rep.seq }

// first reports whether the stage adds into its gradients first in every
// step: it shares them with no other replica, or it is replica 1's, whose
// share comes first (ReplicaOf).
func (s *Stage) first() bool { return !s.shares() || s.w.Replica == ReplicaOf(0, len(s.w.Copies)) }

// shares reports whether the stage shares its weights with other replicas.
func (s *Stage) shares() bool { return len(s.w.Copies) > 1 }

// setReplica works out, from the stage's layers, what waits for the turn
// and its parts.
func (s *Stage) setReplica() {
	s.rep.own = s.w.OwnCopies && s.shares()
	defer s.setParts()
	if s.first() {
		return
	}
	for _, l := range s.layers {
		if _, ok := l.(nn.BatchParams); !ok && len(l.Params()) > 0 {
			s.rep.ordered = true
		}
		if len(nn.BuffersOf(l)) > 0 {
			s.rep.ordered, s.rep.buffered = true, true
		}
	}
}

// setParts cuts the turn into parts of consecutive layers from the last,
// each of at least turnBucket gradient elements but the first layers'.
// When a replica's backwards must add into the gradients as they go (see
// setReplica), the turn is one part, at every replica's stage alike; so
// it is when the replicas share memory: there the turn moves nothing, and
// the one holding it adds on every core (Updater.TurnThreads).
func (s *Stage) setParts() {
	s.rep.parts = s.rep.parts[:0]
	if !s.shares() {
		return
	}
	whole := !s.rep.own
	for _, l := range s.layers {
		_, batch := l.(nn.BatchParams)
		whole = whole || !batch && len(l.Params()) > 0 || len(nn.BuffersOf(l)) > 0
	}
	cur, size := turnPart{hi: len(s.layers) - 1}, 0
	for i := len(s.layers) - 1; i >= 0; i-- {
		for _, k := range s.paramsOf[i] {
			cur.params = append(cur.params, k)
			size += s.ps[k].Grad.Size()
		}
		if size >= turnBucket && i > 0 && !whole {
			cur.lo = i
			s.rep.parts = append(s.rep.parts, cur)
			cur, size = turnPart{hi: i - 1}, 0
		}
	}
	s.rep.parts = append(s.rep.parts, cur) // lo 0
}

// Updater is how a stage updates its own weights: its own optimizer, whose
// state (momentum, Adam moments) lives beside the weights, and the clipping.
type Updater struct {
	Optimizer optim.Optimizer // nil for a stage without parameters
	ClipValue float64         // 0: off; clamps each gradient element first
	ClipNorm  bool            // report sums of squares and wait for the global factor
	Threads   int             // goroutines the stage's kernels may use (nn.Pass.Threads)
	Precision nn.Precision    // of the layers' products (nn.Pass.Precision)
	// TurnThreads, when set, is the budget of the weight gradients a
	// stage sharing its weights adds while it holds the turn: the other
	// replicas' stages at its place wait meanwhile, so it may use their cores.
	TurnThreads int
}

// namedBuffer is a layer's buffer under its global name.
type namedBuffer struct {
	name  string
	value *tensor.Tensor
}

type partKey struct {
	eval  bool
	micro int
}

// Precision returns the precision of the stage's products.
func (s *Stage) Precision() nn.Precision { return s.updater.Precision }

// NewStage returns a stage actor running layers, whose global indices start at
// first; shard is its index within its position. u updates its weights: a stage
// with parameters needs an optimizer of its own.
func NewStage(id int, name string, g *Graph, layers []nn.Layer, first, shard int, needDX bool, u Updater) *Stage {
	s := &Stage{base: newBase(id, name, g), layers: layers, needDX: needDX, shard: shard, updater: u,
		fwdParts: map[partKey][]*tensor.Tensor{}, bwdParts: map[int][]*tensor.Tensor{}}
	s.base.where = s.where
	paramsOf := make([][]int, len(layers))
	for i, l := range layers {
		s.layerIDs = append(s.layerIDs, first+i)
		for _, p := range l.Params() {
			p.Name = nn.ParamName(first+i, p.Name) // as checkpoints name it
			paramsOf[i] = append(paramsOf[i], len(s.ps))
			s.ps = append(s.ps, p)
		}
		for _, b := range nn.BuffersOf(l) {
			s.bufs = append(s.bufs, namedBuffer{nn.ParamName(first+i, b.Name), b.Value})
		}
		sb, _ := l.(nn.SplitBackward)
		bp, _ := l.(nn.BatchParams)
		s.split, s.batch = append(s.split, sb), append(s.batch, bp)
	}
	// run the layers in the order that gives the same bits fastest;
	// parameters, buffers and Stats keep the model's
	order := nn.RunOrder(layers)
	s.layers, s.ids, s.split, s.batch = permute(layers, order), permute(s.layerIDs, order), permute(s.split, order), permute(s.batch, order)
	s.paramsOf = permute(paramsOf, order)
	nn.Fuse(s.layers) // a linear layer and a ReLU next to it in one pass
	s.norm.Sums = make([]float64, len(s.ps))
	s.weights = 1
	return s
}

// permute returns xs in order.
func permute[T any](xs []T, order []int) []T {
	out := make([]T, len(order))
	for i, j := range order {
		out[i] = xs[j]
	}
	return out
}

// HasParams reports whether the stage owns parameters (and so takes part in updates).
func (s *Stage) HasParams() bool { return len(s.params()) > 0 }

func (s *Stage) params() []nn.Param { return s.ps }

func (s *Stage) Receive(ctx actor.Context) {
	msg, ok := s.receive(ctx)
	if !ok {
		return
	}
	switch m := msg.(type) {
	case *Wire:
		s.w, s.coord = *m, m.Coordinator
		s.arenas.one = m.OneArena
		if s.device != nil && m.Schedule.Programmed() {
			s.device.program(m.Schedule, m.Stages, m.Chunks, s.position, ctx.Self())
		}
		s.setReplica()
		s.watch(ctx, m.Next, m.NextNames)
		s.watch(ctx, m.Prev, m.PrevNames)
		// the turn and the weights pass between copies
		s.watch(ctx, m.Copies, m.CopyNames)
		if ctx.Sender() != nil { // work from a neighbour in another process may come first otherwise
			s.respond(ctx, &Ack{})
		}
	case *Forward:
		s.gatherForward(ctx, m)
	case *kick:
		s.kicked = false
		s.runForward(ctx)
	case *turnKick:
		s.advance(ctx)
	case *Backward:
		s.gatherBackward(ctx, m)
	case *Update:
		if m.Provisional {
			s.prov, s.haveProv = *m, true
			s.maybeProvisional(ctx)
			break
		}
		s.upd, s.haveUpd = *m, true
		s.maybeApply(ctx)
	case *GradTurn:
		s.turn(ctx, m)
	case *Weights:
		if err := s.takeWeights(m); err != nil {
			s.fail(ctx, err)
			return
		}
		// m is its sender's to reuse once the step is over: read no more of it
		step, part := m.Step, m.Part
		if next := s.weightsNext(); next != nil {
			s.sendWeightsPart(ctx, next, step, part)
		}
		if part < len(s.rep.parts)-1 {
			return
		}
		s.weights++
		if s.first() {
			s.zeroGrads() // the next step's sum starts here; the turn has gone round
		}
		s.applied = UpdateApplied{Step: step, Actor: s.id}
		s.send(ctx, s.coord, &s.applied)
	case *TiedGrad:
		if s.tiedIn == nil {
			s.tiedIn = map[int]*TiedGrad{}
		}
		s.tiedIn[m.Tie] = m
		if s.tiedSent == m.Step {
			s.gradsReady(ctx, m.Step) // was waiting for it
		}
	case *GetParams:
		s.respond(ctx, s.snapshot(m))
	case *SetParams:
		s.respond(ctx, &Ack{Err: s.setParams(m)})
	case *GetStats:
		s.respond(ctx, s.stats(m.Reset))
	}
}

// gatherForward collects the parts of a micro-batch's input, joins them by
// columns in part order, and queues it.
func (s *Stage) gatherForward(ctx actor.Context, m *Forward) {
	x, ok := gather(s.fwdParts, partKey{m.Eval, m.Micro}, s.w.InShards, m.Shard, m.X)
	if !ok {
		return
	}
	f := m
	if s.w.InShards > 1 {
		if m.Eval {
			f = &Forward{}
		} else {
			f = s.fwdIn.at(m.Micro)
		}
		*f = *m
		f.Shard, f.X = 0, x
	}
	if m.Eval {
		s.forward(ctx, f) // evaluation holds no activations: no credit needed
		return
	}
	if f.Seq != s.rep.seq {
		s.newStep(f)
	}
	if cap(s.queue) < f.Micros {
		// room for a whole step's forwards, so that appends never allocate
		s.queue = slices.Grow(s.queue, f.Micros-len(s.queue))
	}
	s.queue = append(s.queue, f)
	if s.device != nil && s.device.begin(f.Seq, f.Micros) {
		s.advance(ctx)
		return
	}
	s.maybeKick(ctx)
}

// maybeKick schedules one queued forward behind the mailbox's current messages.
func (s *Stage) maybeKick(ctx actor.Context) {
	if s.programmed() {
		return
	}
	if !s.kicked && len(s.queue) > 0 && s.mayAdmit() && (!s.rep.buffered || s.hasTurn()) {
		s.kicked = true
		ctx.Send(ctx.Self(), &kick{})
		s.status.sent.Add(1)
	}
}

// mayAdmit reports whether a forward may start: fewer than Limit
// micro-batches wait for their backwards.
func (s *Stage) mayAdmit() bool { return s.open < s.w.Limit }

func (s *Stage) runForward(ctx actor.Context) {
	if s.programmed() || len(s.queue) == 0 || !s.mayAdmit() || s.rep.buffered && !s.hasTurn() {
		return
	}
	f := s.queue[0]
	s.queue = s.queue[:copy(s.queue, s.queue[1:])] // keeps the slice's start, so appends reuse it
	s.open++
	s.micros = f.Micros
	s.forward(ctx, f)
	s.maybeKick(ctx)
}

func (s *Stage) forward(ctx actor.Context, f *Forward) {
	kind := SpanForward
	if f.Eval {
		kind = SpanEval
	}
	p := nn.Pass{Step: f.Step, Micro: f.Micro, Row: f.Row, Train: !f.Eval, Weights: s.weights, Micros: f.Micros, Threads: s.updater.Threads, Precision: s.updater.Precision, Attention: &s.attention}
	if f.Eval && s.w.EvalWindow > 0 {
		p.Arena, p.Scratch = s.evalArena(f.Micro), &s.scratch
	}
	if !f.Eval {
		p.Arena, p.Scratch = s.arenas.at(f.Seq, f.Micro), &s.scratch
		for len(s.rows) <= f.Micro {
			s.rows = append(s.rows, 0)
		}
		s.rows[f.Micro] = f.Row // a recomputing layer redoes its forward with it
		if share := f.Share; f.Total > 0 {
			if share == 0 {
				share = f.Total
			}
			lo := f.Row - f.First // the replica's step-wide tensors hold its share only
			s.arenas.share(p.Arena, lo, f.X.Dim(0), share)
		}
	}
	var y *tensor.Tensor
	ok := s.work(ctx, kind, f.Step, f.Micro, func() error {
		h := f.X
		outs := s.outs[:0]
		for i, l := range s.layers {
			s.current = i
			h = l.Forward(p, h)
			outs = append(outs, h)
		}
		defer func() { s.outs = outs[:0]; clear(outs) }() // keep no tensor past the pass
		if !h.IsFinite() {
			i := firstNonFinite(outs)
			return &nn.NonFiniteError{Layer: s.ids[i], Kind: s.layers[i].Kind(), Step: f.Step, Where: "forward"}
		}
		y = h
		return nil
	})
	if !ok {
		return
	}
	var out *Forward
	if f.Eval {
		out = new(Forward)
	} else {
		s.trackInFlight(f.Micro, p.Arena.Lent())
		out = s.fwdOut.at(f.Micro)
	}
	*out = *f
	out.Shard, out.X = s.shard, y
	for _, pid := range s.w.Next {
		s.send(ctx, pid, out) // y is shared read-only by the next position's actors
	}
}

// evalArena returns the arena of evaluation chunk k, reset: the
// coordinator sent chunk k only once chunk k-EvalWindow, the arena's last
// user, was over everywhere.
func (s *Stage) evalArena(k int) *nn.Arena {
	if len(s.evals) != s.w.EvalWindow {
		s.evals = make([]nn.Arena, s.w.EvalWindow)
	}
	a := &s.evals[k%len(s.evals)]
	a.Reset()
	return a
}

// trackInFlight notes the micro-batches holding activations and the
// activation bytes micro's forward left (0 for an evaluation's).
func (s *Stage) trackInFlight(micro int, bytes int64) {
	for _, l := range s.layers {
		s.maxIn = max(s.maxIn, l.InFlight())
	}
	for len(s.actBytes) <= micro {
		s.actBytes = append(s.actBytes, 0)
	}
	s.liveBytes += bytes - s.actBytes[micro]
	s.actBytes[micro] = bytes
	s.notePeak()
}

// notePeak raises the peak of activation bytes to those held now: the
// micro-batches' in flight, and the scratch, which a recomputing layer
// fills with one micro-batch's rebuilt activations (nothing otherwise).
func (s *Stage) notePeak() {
	s.maxAct = max(s.maxAct, s.liveBytes+s.scratch.Held())
}

// firstNonFinite returns the index of the first tensor of ts that holds a
// NaN or an infinity: the layer that gave it. A pass checks only what it
// hands on (a full pass over every layer's output cost a sixth of a CNN's
// step) and searches its layers' results, still in the arena, only then. A
// layer whose output squashes a non-finite input back to finite values
// (tanh of an infinity) lets the computation go on, as it would without
// checks.
func firstNonFinite(ts []*tensor.Tensor) int {
	for i, t := range ts {
		if !t.IsFinite() {
			return i
		}
	}
	return len(ts) - 1
}

// where names the layer a stage was running, e.g. "layer 3 (relu) forward at
// step 5, micro-batch 1", or the update it was applying.
func (s *Stage) where(kind SpanKind, step, micro int) string {
	pass := "forward"
	switch kind {
	case SpanUpdate:
		return fmt.Sprintf("%s applying the update of step %d", s.name, step)
	case SpanBackward, SpanWeights:
		pass = "backward"
	}
	i := min(max(s.current, 0), len(s.layers)-1)
	return fmt.Sprintf("layer %d (%s) %s at step %d, micro-batch %d", s.ids[i], s.layers[i].Kind(), pass, step, micro)
}

// gatherBackward sums the partial gradients of a micro-batch in part order and
// runs its backward.
func (s *Stage) gatherBackward(ctx actor.Context, m *Backward) {
	if s.w.OutShards == 1 {
		s.runBackward(ctx, m.Step, m.Micro, m.DY)
		s.maybeKick(ctx)
		return
	}
	parts := s.bwdParts[m.Micro]
	if parts == nil {
		parts = make([]*tensor.Tensor, s.w.OutShards)
	}
	parts[m.Shard] = m.DY
	for _, p := range parts {
		if p == nil {
			s.bwdParts[m.Micro] = parts
			return
		}
	}
	delete(s.bwdParts, m.Micro)
	dy := parts[0]
	for _, p := range parts[1:] {
		dy = ops.Add(dy, p)
	}
	s.runBackward(ctx, m.Step, m.Micro, dy)
	s.maybeKick(ctx)
}

// runBackward runs a micro-batch's backward, or holds it until the stage
// has the turn when its layers must add into shared gradients as they go.
func (s *Stage) runBackward(ctx actor.Context, step, micro int, dy *tensor.Tensor) {
	if s.programmed() {
		s.bwdIn = append(s.bwdIn, heldBackward{step, micro, dy})
		s.advance(ctx)
		return
	}
	if s.rep.ordered && !s.hasTurn() {
		s.rep.held = append(s.rep.held, heldBackward{step, micro, dy})
		return
	}
	s.backward(ctx, step, micro, dy)
}

func (s *Stage) backward(ctx actor.Context, step, micro int, dy *tensor.Tensor) {
	p := nn.Pass{Step: step, Micro: micro, Train: true, Arena: s.arenas.current(micro), Scratch: &s.scratch, Weights: s.weights, Micros: s.micros, Threads: s.updater.Threads, Precision: s.updater.Precision, Attention: &s.attention}
	if micro < len(s.rows) {
		p.Row = s.rows[micro]
	}
	// replicas leave their weight gradients to the end of the step (a
	// replica > 0 must wait for the turn), when the others wait for them
	split := s.w.SplitBackward || s.fillsWeights() || s.shares() && !s.rep.ordered
	var dx *tensor.Tensor
	ok := s.work(ctx, SpanBackward, step, micro, func() error {
		g := dy
		outs := s.outs[:0] // the input gradients, from the last layer's on
		for i := len(s.layers) - 1; i >= 0; i-- {
			s.current = i
			need := i > 0 || s.needDX
			if sb := s.split[i]; sb != nil && need && split {
				g = sb.BackwardInput(p, g)
				s.pendingW = append(s.pendingW, pendingW{i, p})
			} else if b := s.batch[i]; b != nil && !need && split {
				b.KeepGrad(p, g) // its weight gradient, too, once over the step
				s.pendingW = append(s.pendingW, pendingW{i, p})
				g = nil
			} else {
				g = s.layers[i].Backward(p, g, need)
			}
			if need {
				outs = append(outs, g)
			}
		}
		defer func() { s.outs = outs[:0]; clear(outs) }()
		if len(outs) > 0 && !outs[len(outs)-1].IsFinite() {
			i := len(s.layers) - 1 - firstNonFinite(outs)
			return &nn.NonFiniteError{Layer: s.ids[i], Kind: s.layers[i].Kind(), Step: step, Where: "backward"}
		}
		dx = g
		return nil
	})
	if !ok {
		return
	}
	s.open--
	if s.fillsWeights() && len(s.pendingW) > 0 {
		s.fill = append(s.fill, micro) // its activations are held until its weight gradients are done
	} else {
		s.release(micro)
	}
	if len(s.w.Prev) > 0 {
		s.sendBack(ctx, step, micro, dx)
	} else if all := s.done+1 == s.micros; s.w.EachDone || all {
		d := s.bwdDone.at(micro)
		*d = BackwardDone{Step: step, Micro: micro, Actor: s.id, All: all && !s.w.EachDone}
		s.send(ctx, s.coord, d)
	}
	s.done++
	if s.done == s.micros {
		s.done = 0
		s.backwardsOver(ctx, step)
	}
}

// backwardsOver ends the step's part of the stage once its last backward
// is done: the weight gradients left, then the gradients' turn or update.
func (s *Stage) backwardsOver(ctx actor.Context, step int) {
	if s.shares() {
		s.rep.bwdsDone = true
		s.passTurn(ctx, step)
		return
	}
	if len(s.fill) > 0 && s.programmed() {
		s.wLeft, s.wStep = true, step // the order's weight gradients end the step
		return
	}
	if len(s.pendingW) > 0 && !s.weightGrads(ctx, step) {
		return
	}
	for _, m := range s.fill {
		s.release(m)
	}
	s.fill = s.fill[:0]
	if s.w.Replica == 0 {
		s.gradsReady(ctx, step)
	}
}

// fillsWeights reports whether the stage's schedule runs each
// micro-batch's weight gradients apart, where its order puts them (the
// zero-bubble schedules; in a step without an order, at the step's end).
func (s *Stage) fillsWeights() bool { return s.w.Schedule.SplitsBackward() }

// release notes that micro's activations are no longer needed.
func (s *Stage) release(micro int) {
	s.notePeak() // the micro-batch's activations were held until now
	if micro < len(s.actBytes) {
		s.liveBytes -= s.actBytes[micro]
		s.actBytes[micro] = 0
	}
}

// runW runs the weight gradients the backwards of the n oldest
// micro-batches in s.fill left, as one batch per layer (nn.BatchParams:
// the bits of one call per micro-batch, in order), and frees their
// places; false when it failed.
func (s *Stage) runW(ctx actor.Context, n int) bool {
	n = min(n, len(s.fill))
	if n == 0 {
		return true
	}
	micros := s.fill[:n]
	kept, mine := s.wKept[:0], s.wMine[:0]
	for _, w := range s.pendingW {
		if slices.Contains(micros, w.p.Micro) {
			mine = append(mine, w)
		} else {
			kept = append(kept, w)
		}
	}
	ok := true
	if len(mine) > 0 {
		s.pendingW = mine
		ok = s.weightGradsMicro(ctx, mine[0].p.Step, micros[0], 0, len(s.layers)-1)
	}
	s.pendingW, s.wKept, s.wMine = append(s.pendingW[:0], kept...), kept, mine[:0]
	if !ok {
		return false
	}
	for _, m := range micros {
		s.release(m)
	}
	s.fill = s.fill[:copy(s.fill, s.fill[n:])]
	return true
}

// programmed reports whether the step in hand runs in its schedule's
// order (Wire.Schedule).
func (s *Stage) programmed() bool { return s.device != nil && s.device.programmed(s.rep.seq) }

// advance runs the stage's ops at its device's cursor while their inputs
// are here, and hands the turn to the actor whose op is next.
func (s *Stage) advance(ctx actor.Context) {
	for {
		op, seq, ok := s.device.next()
		if !ok || op.Chunk != s.position {
			return
		}
		n := 1
		if op.Kind == SimW {
			n = s.device.runOf(s.position, SimW) // run as one batch
		}
		if !s.runOp(ctx, op, n) {
			return
		}
		if pid := s.device.done(seq, n); pid != nil && !pid.Equal(ctx.Self()) {
			s.send(ctx, pid, &turnKick{})
		}
	}
}

// runOp runs op if its input is here, and reports whether it ran; a
// weight gradient with the n-1 of the stage's that follow it in the order.
func (s *Stage) runOp(ctx actor.Context, op SimOp, n int) bool {
	switch op.Kind {
	case SimF:
		i := slices.IndexFunc(s.queue, func(f *Forward) bool { return f.Micro == op.Micro })
		if i < 0 {
			return false
		}
		f := s.queue[i]
		s.queue = slices.Delete(s.queue, i, i+1)
		s.open++
		s.micros = f.Micros
		s.forward(ctx, f)
	case SimB:
		i := slices.IndexFunc(s.bwdIn, func(b heldBackward) bool { return b.micro == op.Micro })
		if i < 0 {
			return false
		}
		b := s.bwdIn[i]
		s.bwdIn = slices.Delete(s.bwdIn, i, i+1)
		s.backward(ctx, b.step, b.micro, b.dy)
	case SimW:
		if len(s.fill) == 0 || s.fill[0] != op.Micro {
			return true // none: its layers have no weights here
		}
		// the weight gradients the order runs next here go as one batch
		if !s.runW(ctx, n) {
			return false
		}
		if s.wLeft && len(s.fill) == 0 {
			s.wLeft = false
			if s.w.Replica == 0 {
				s.gradsReady(ctx, s.wStep)
			}
		}
	}
	return true
}

// pendingW is a layer's weight gradient left for the step's end.
type pendingW struct {
	layer int
	p     nn.Pass
}

// weightGrads runs the weight gradients the split backward left, after the
// step's last dX has gone upstream: they fill the drain, and a layer that
// can (nn.BatchParams) runs them as one GEMM over the whole step.
func (s *Stage) weightGrads(ctx actor.Context, step int) bool {
	if !s.weightGradsOf(ctx, step, 0, len(s.layers)-1) {
		return false
	}
	s.pendingW = s.pendingW[:0]
	return true
}

// weightGradsOf runs those of layers lo to hi, from hi down.
func (s *Stage) weightGradsOf(ctx actor.Context, step, lo, hi int) bool {
	return s.weightGradsMicro(ctx, step, -1, lo, hi)
}

// weightGradsMicro is weightGradsOf, its span labelled with micro.
func (s *Stage) weightGradsMicro(ctx actor.Context, step, micro, lo, hi int) bool {
	return s.work(ctx, SpanWeights, step, micro, func() error {
		for i := hi; i >= lo; i-- {
			ps := s.wPasses[:0]
			for _, w := range s.pendingW {
				if w.layer == i {
					ps = append(ps, w.p)
				}
			}
			if len(ps) == 0 {
				continue
			}
			for k := range ps {
				ps[k].Threads = s.turnThreads()
			}
			s.current = i
			if b := s.batch[i]; b != nil {
				b.BackwardParamsAll(ps)
			} else {
				for _, p := range ps {
					s.split[i].BackwardParams(p)
				}
			}
			s.wPasses = ps
		}
		return nil
	})
}

// sendBack splits dx by the previous position's column blocks and sends each block
// to the actor that produced it.
func (s *Stage) sendBack(ctx actor.Context, step, micro int, dx *tensor.Tensor) {
	if len(s.w.PrevSplit) <= 2 { // one producer: dx goes whole
		b := s.bwdOut.at(micro)
		*b = Backward{Step: step, Micro: micro, Shard: s.shard, DY: dx}
		s.send(ctx, s.w.Prev[0], b)
		return
	}
	blocks := splitCols(dx, s.w.PrevSplit)
	for k, block := range blocks {
		b := s.bwdOut.at(micro*len(blocks) + k)
		*b = Backward{Step: step, Micro: micro, Shard: s.shard, DY: block}
		s.send(ctx, s.w.Prev[k], b)
	}
}

// gradsReady starts the update once the step's gradients are complete: value
// clipping is local; the global norm needs every stage's sums of squares.
func (s *Stage) gradsReady(ctx actor.Context, step int) {
	if len(s.ps) == 0 || !s.sumTied(ctx, step) {
		return
	}
	if s.updater.ClipValue > 0 {
		optim.ClipGradValue(s.ps, s.updater.ClipValue)
	}
	if s.updater.ClipNorm {
		optim.SumsOfSquares(s.norm.Sums, s.ps)
		for _, l := range s.w.Tied {
			if l.Head {
				s.norm.Sums[l.Param] = 0 // counted once, as the embedding's
			}
		}
		s.norm.Step, s.norm.Actor = step, s.id
		s.send(ctx, s.w.Optimizer, &s.norm)
	}
	s.gradsDone = true
	s.maybeProvisional(ctx)
	s.maybeApply(ctx)
}

// sumTied gives each copy of a tied weight the sum of both copies'
// gradients: it sends this stage's copies to their peers once the step's
// gradients are complete, and reports false until every peer's has come.
// The sum is the same on both sides: addition of two numbers commutes.
func (s *Stage) sumTied(ctx actor.Context, step int) bool {
	if len(s.w.Tied) == 0 {
		return true
	}
	if s.tiedSent != step {
		s.tiedSent = step
		for _, l := range s.w.Tied {
			if l.Peer != nil {
				s.send(ctx, l.Peer, &TiedGrad{Step: step, Tie: l.Tie, G: s.ps[l.Param].Grad.Clone()})
			}
		}
	}
	for _, l := range s.w.Tied {
		if m := s.tiedIn[l.Tie]; l.Peer != nil && (m == nil || m.Step != step) {
			return false
		}
	}
	s.tiedSent = 0
	for _, l := range s.w.Tied {
		g := s.ps[l.Param].Grad
		switch {
		case l.Peer != nil:
			addInto(g, s.tiedIn[l.Tie].G)
			delete(s.tiedIn, l.Tie)
		case !l.Head: // both copies here: the embedding's link does it
			addInto(g, s.ps[l.Other].Grad)
			s.ps[l.Other].Grad.CopyFrom(g)
		}
	}
	return true
}

// addInto adds b into a, element by element.
func addInto(a, b *tensor.Tensor) {
	if a.DType() == tensor.Float32 {
		x, y := a.Data32(), b.Data32()
		for i := range x {
			x[i] += y[i]
		}
		return
	}
	x, y := a.Data64(), b.Data64()
	for i := range x {
		x[i] += y[i]
	}
}

// maybeApply updates the weights once both the gradients and the step's
// Update are here, in whichever order they came.
func (s *Stage) maybeApply(ctx actor.Context) {
	if !s.gradsDone || !s.haveUpd {
		return
	}
	s.gradsDone, s.haveUpd = false, false
	m := s.upd
	rolled := false
	if s.provDone {
		s.provDone = false
		if m.Scale == 1 && m.LR == s.prov.LR { // the provisional update was the step's
			s.zeroGrads()
			s.applied = UpdateApplied{Step: m.Step, Actor: s.id}
			s.send(ctx, s.coord, &s.applied)
			return
		}
		rolled = true
		if !s.work(ctx, SpanUpdate, m.Step, -1, s.restore) {
			return
		}
	}
	ok := s.work(ctx, SpanUpdate, m.Step, -1, func() error {
		s.weights++ // even a failed step may have written some
		return s.step(m.LR, m.Scale)
	})
	if !ok {
		return
	}
	if s.rep.own {
		s.sendWeights(ctx, m.Step) // they report UpdateApplied themselves
	}
	s.applied = UpdateApplied{Step: m.Step, Actor: s.id, Rolled: rolled}
	s.send(ctx, s.coord, &s.applied)
}

// step scales the gradients by clipping's factor, updates the weights and
// clears the gradients: in one pass over each parameter when the optimizer
// can. Its clearing then runs on the update's goroutines, which are at
// least turnThreads (the recipe gives the optimizer the larger budget), and
// before the step's end is reported, as zeroGrads.
func (s *Stage) step(lr, scale float64) error {
	if o, ok := s.updater.Optimizer.(optim.ScaledStepper); ok {
		return o.StepScaled(s.ps, lr, scale, true)
	}
	if scale != 1 {
		optim.ScaleGrads(s.ps, scale)
	}
	if err := s.updater.Optimizer.Step(s.ps, lr); err != nil {
		return err
	}
	s.zeroGrads()
	return nil
}

// maybeProvisional applies the step's provisional update (Scale 1) as soon
// as the stage's gradients are complete, before the global norm is known,
// keeping the weights and the optimizer's state it replaces: the final
// Update then keeps it or puts it back (maybeApply), so the result is the
// bits of the update made after the norm, always.
func (s *Stage) maybeProvisional(ctx actor.Context) {
	if !s.gradsDone || !s.haveProv || s.provDone || s.haveUpd {
		return
	}
	s.haveProv = false
	m := s.prov
	if s.work(ctx, SpanUpdate, m.Step, -1, func() error {
		if len(s.kept) != len(s.ps) {
			s.kept = make([]*tensor.Tensor, len(s.ps))
		}
		for i, p := range s.ps {
			if s.kept[i] == nil {
				s.kept[i] = p.Value.Clone()
			} else {
				s.kept[i].CopyFrom(p.Value)
			}
		}
		s.updater.Optimizer.StateInto(&s.keptState)
		s.weights++
		return s.updater.Optimizer.Step(s.ps, m.LR)
	}) {
		s.provDone = true
	}
}

// restore puts back the weights and optimizer state a provisional update
// replaced.
func (s *Stage) restore() error {
	for i, p := range s.ps {
		p.Value.CopyFrom(s.kept[i])
	}
	s.weights++
	return s.updater.Optimizer.LoadState(s.keptState)
}

// turnThreads is the budget of the work other replicas wait for (the
// weight gradients added under the turn, the owner's clearing of the
// gradients): Updater.TurnThreads when the stage shares its weights, else
// its own.
func (s *Stage) turnThreads() int {
	if t := s.updater.TurnThreads; t > 0 && s.shares() {
		return t
	}
	return s.updater.Threads
}

// zeroGrads clears the gradients for the next step, on the stage's cores when
// large: with replicas sharing its weights, on theirs too (turnThreads).
func (s *Stage) zeroGrads() {
	threads := s.turnThreads()
	for _, p := range s.ps {
		if p.Grad.DType() != tensor.Float32 {
			p.Grad.Zero()
			continue
		}
		s.clearTask = clearTask{p.Grad.Data32()}
		par.For(threads, len(s.clearTask.g), clearGrain, &s.clearTask)
	}
}

// setParams replaces the parameter values, and the optimizer's state when
// given, from outside (a restore).
func (s *Stage) setParams(m *SetParams) error {
	if err := s.checkValues(m.Values); err != nil {
		return err
	}
	if m.State != nil {
		if s.updater.Optimizer == nil {
			return fmt.Errorf("actors: %s: optimizer state for a stage without parameters", s.name)
		}
		if err := s.updater.Optimizer.LoadState(*m.State); err != nil {
			return fmt.Errorf("actors: %s: %w", s.name, err)
		}
	}
	return s.setValues(m.Values)
}

// setValues replaces the parameter and buffer values, in Params order.
func (s *Stage) setValues(values []*tensor.Tensor) error {
	if err := s.checkValues(values); err != nil {
		return err
	}
	for i, p := range s.ps {
		p.Value.CopyFrom(values[i])
	}
	for i, b := range s.bufs {
		b.value.CopyFrom(values[len(s.ps)+i])
	}
	s.weights++
	return nil
}

// checkValues checks values against the parameters, then the buffers.
func (s *Stage) checkValues(values []*tensor.Tensor) error {
	ps := s.params()
	if len(values) != len(ps)+len(s.bufs) {
		return fmt.Errorf("actors: %s: %d values for %d parameters and %d buffers", s.name, len(values), len(ps), len(s.bufs))
	}
	for i, v := range values {
		name, want := "", (*tensor.Tensor)(nil)
		if i < len(ps) {
			name, want = ps[i].Name, ps[i].Value
		} else {
			name, want = s.bufs[i-len(ps)].name, s.bufs[i-len(ps)].value
		}
		if v.DType() != want.DType() || !v.SameShape(want) {
			return fmt.Errorf("actors: %s: %s: value %v %v does not fit %v %v", s.name, name, v.DType(), v.Shape(), want.DType(), want.Shape())
		}
	}
	return nil
}

// clearGrain is the fewest elements worth a part of a parallel clear.
const clearGrain = 1 << 15

// clearTask zeroes gradients over a range, for par.For.
type clearTask struct{ g []float32 }

func (t *clearTask) Run(lo, hi int) { clear(t.g[lo:hi]) }

func (s *Stage) snapshot(m *GetParams) *Params {
	out := m.Into
	if out == nil {
		out = &Params{}
	}
	out.Actor, out.Names = s.id, out.Names[:0]
	k := 0
	add := func(name string, v *tensor.Tensor) {
		out.Names = append(out.Names, name)
		if m.NamesOnly {
			return
		}
		switch {
		case m.Lend && k < len(out.Values):
			out.Values[k] = v
		case m.Lend:
			out.Values = append(out.Values, v)
		case k < len(out.Values) && out.Values[k].DType() == v.DType() && out.Values[k].SameShape(v):
			out.Values[k].CopyFrom(v)
		case k < len(out.Values):
			out.Values[k] = v.Clone()
		default:
			out.Values = append(out.Values, v.Clone())
		}
		k++
	}
	for _, p := range s.ps { // named "<layer>.<param>"
		add(p.Name, p.Value)
	}
	for _, b := range s.bufs { // after every parameter: optimizer state indexes the parameters
		add(b.name, b.value)
	}
	out.Values = out.Values[:k]
	switch {
	case s.updater.Optimizer == nil || m.NamesOnly:
	case m.Lend:
		out.State = s.updater.Optimizer.StateView()
	default:
		s.updater.Optimizer.StateInto(&out.State)
	}
	return out
}

// newStep starts a training step's bookkeeping at its first forward. A
// replica's weights changed since its last step (the owner updated them), so
// it takes a new weights version.
func (s *Stage) newStep(f *Forward) {
	s.rep.seq, s.rep.active = f.Seq, max(1, f.Replicas)
	if s.w.Replica > 0 {
		s.weights++
	}
}

// turn takes a part of the turn to add into the shared gradients and runs
// what waited for it; the owner's, when it has no rows in the step, starts
// the update at once with the last part.
func (s *Stage) turn(ctx actor.Context, m *GradTurn) {
	if err := s.takeTurn(m); err != nil {
		s.fail(ctx, err)
		return
	}
	// m is its sender's to reuse once the turn has gone round: read no more of it
	step, seq, part := m.Step, m.Seq, m.Part
	if !m.Rows {
		if part == len(s.rep.parts)-1 {
			s.gradsReady(ctx, step)
		}
		return
	}
	s.rep.turnSeq, s.rep.have = seq, part+1
	if seq != s.rep.seq {
		return // the step's forwards have not come yet
	}
	held := s.rep.held
	s.rep.held = s.rep.held[:0]
	for _, h := range held {
		s.backward(ctx, h.step, h.micro, h.dy)
	}
	s.maybeKick(ctx) // forwards that waited for the turn
	s.passTurn(ctx, step)
}

// passTurn adds a replica's weight gradients into the shared ones, part by
// part as it has both the part of the turn and every backward of the step,
// and hands each part on to the next share's replica, or to the owner; the
// owner, last, updates once it has added into every part.
func (s *Stage) passTurn(ctx actor.Context, step int) {
	if !s.rep.bwdsDone {
		return
	}
	have := len(s.rep.parts)
	if !s.first() {
		have = 0
		if s.rep.turnSeq == s.rep.seq {
			have = s.rep.have
		}
	}
	// the next share's replica, if there is a next share, else the owner,
	// without rows in the step
	next, rows := 0, false
	if i := ShareOf(s.w.Replica, len(s.w.Copies)) + 1; i < s.rep.active {
		next, rows = ReplicaOf(i, len(s.w.Copies)), true
	}
	for ; s.rep.next < have; s.rep.next++ {
		p := s.rep.parts[s.rep.next]
		if len(s.pendingW) > 0 && !s.weightGradsOf(ctx, step, p.lo, p.hi) {
			return
		}
		if s.w.Replica != 0 {
			s.handTurn(ctx, s.w.Copies[next], step, s.rep.next, rows)
		}
	}
	if s.rep.next < len(s.rep.parts) {
		return
	}
	s.rep.bwdsDone, s.rep.next = false, 0
	s.pendingW = s.pendingW[:0]
	if s.w.Replica == 0 {
		s.gradsReady(ctx, step)
	}
}

// handTurn sends part k of the turn of step to pid, with the part's
// gradients summed so far, and the buffers with the last part, when each
// replica holds its own weights; rows tells whether pid's replica has rows
// in the step.
func (s *Stage) handTurn(ctx actor.Context, pid *actor.PID, step, k int, rows bool) {
	t := s.rep.out.at(k)
	*t = GradTurn{Step: step, Seq: s.rep.seq, Part: k, Rows: rows, Grads: t.Grads[:0], Buffers: t.Buffers[:0]}
	if s.rep.own {
		for _, i := range s.rep.parts[k].params {
			t.Grads = append(t.Grads, s.ps[i].Grad)
		}
		if k == len(s.rep.parts)-1 {
			for _, b := range s.bufs {
				t.Buffers = append(t.Buffers, b.value)
			}
		}
	}
	s.send(ctx, pid, t)
}

// takeTurn copies the gradients and buffers a part of the turn brings into
// the stage's own, when each replica holds its own weights. Nothing of this
// step has written them here yet: a replica adds into a part's gradients
// only once it has the part, and with buffers its forwards wait for the
// turn too.
func (s *Stage) takeTurn(m *GradTurn) error {
	if !s.rep.own {
		return s.checkPart("turn", m.Step, m.Part)
	}
	return s.takePart("turn", m.Step, m.Part, m.Grads, m.Buffers, true)
}

// checkPart checks that part k of a turn or of the weights is one here.
func (s *Stage) checkPart(what string, step, k int) error {
	if k < 0 || k >= len(s.rep.parts) {
		return fmt.Errorf("actors: %s: part %d of the %s of step %d, of %d parts here", s.name, k, what, step, len(s.rep.parts))
	}
	return nil
}

// takePart checks and copies part k of a turn (into the parameters'
// gradients, grad) or of the weights (into their values): ps for the
// part's parameters, bs for the buffers, which come with the last part.
func (s *Stage) takePart(what string, step, k int, ps, bs []*tensor.Tensor, grad bool) error {
	if err := s.checkPart(what, step, k); err != nil {
		return err
	}
	params, bufs := s.rep.parts[k].params, s.bufs
	if k < len(s.rep.parts)-1 {
		bufs = nil
	}
	if len(ps) != len(params) || len(bs) != len(bufs) {
		return fmt.Errorf("actors: %s: part %d of the %s of step %d with %d parameters' tensors and %d buffers, want %d and %d", s.name, k, what, step, len(ps), len(bs), len(params), len(bufs))
	}
	into := func(j int) *tensor.Tensor {
		if grad {
			return s.ps[params[j]].Grad
		}
		return s.ps[params[j]].Value
	}
	for j, v := range ps {
		if w := into(j); v.DType() != w.DType() || !v.SameShape(w) {
			return fmt.Errorf("actors: %s: %s in the %s is %v %v, want %v %v", s.name, s.ps[params[j]].Name, what, v.DType(), v.Shape(), w.DType(), w.Shape())
		}
	}
	for j, b := range bufs {
		if v := bs[j]; v.DType() != b.value.DType() || !v.SameShape(b.value) {
			return fmt.Errorf("actors: %s: buffer %s in the %s is %v %v, want %v %v", s.name, b.name, what, v.DType(), v.Shape(), b.value.DType(), b.value.Shape())
		}
	}
	for j, v := range ps {
		into(j).CopyFrom(v)
	}
	for j, b := range bufs {
		b.value.CopyFrom(bs[j])
	}
	return nil
}

// sendWeights starts the weights and buffers of step's update along the
// chain of the replicas' stages at this place, when each holds its own:
// from the owner to the last share's replica and on down to the first's
// (weightsNext), part by part as the turn came, each stage passing a
// part on as soon as it has copied it, so that no link carries them twice.
func (s *Stage) sendWeights(ctx actor.Context, step int) {
	next := s.weightsNext()
	if next == nil {
		return
	}
	for k := range s.rep.parts {
		s.sendWeightsPart(ctx, next, step, k)
	}
}

// weightsNext is the stage the weights go to from this one: the previous
// share's replica's, nil from the first share's.
func (s *Stage) weightsNext() *actor.PID {
	r := len(s.w.Copies)
	if sh := ShareOf(s.w.Replica, r); sh > 0 {
		return s.w.Copies[ReplicaOf(sh-1, r)]
	}
	return nil
}

// sendWeightsPart sends part k of the stage's weights (the buffers with
// the last part) to pid.
func (s *Stage) sendWeightsPart(ctx actor.Context, pid *actor.PID, step, k int) {
	w := s.rep.weights.at(k)
	vs := w.Values[:0]
	for _, i := range s.rep.parts[k].params {
		vs = append(vs, s.ps[i].Value)
	}
	if k == len(s.rep.parts)-1 {
		for _, b := range s.bufs {
			vs = append(vs, b.value)
		}
	}
	*w = Weights{Step: step, Part: k, Values: vs}
	s.send(ctx, pid, w)
}

// takeWeights copies a part of the owner's weights (and with the last,
// its buffers) into the stage's own.
func (s *Stage) takeWeights(m *Weights) error {
	if err := s.checkPart("weights", m.Step, m.Part); err != nil {
		return err
	}
	n := min(len(s.rep.parts[m.Part].params), len(m.Values))
	return s.takePart("weights", m.Step, m.Part, m.Values[:n], m.Values[n:], false)
}
