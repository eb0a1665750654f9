package actors

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// ErrStopped is returned for work asked of a pipeline that has already failed.
var ErrStopped = errors.New("actors: the pipeline stopped after an earlier failure")

// LostError is a run stopped by a lost host.
type LostError struct {
	Host   string
	Stages []string
	Step   int // the step in progress or last run
	Why    string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("lost host %s (%s) at step %d: %s", e.Host, strings.Join(e.Stages, ", "), e.Step, e.Why)
}

// Hang is sent to the coordinator by a watchdog that saw no message move.
type Hang struct{ Err error }

// Coordinator is the actor that runs steps: it deals a mini-batch's chunks to
// the replicas, splits each replica's share into micro-batches, feeds each
// replica's first position as the schedule allows, and answers the step when
// the loss is known and every parameter-owning actor has applied its update.
// The first failure ends the pipeline.
type Coordinator struct {
	base
	schedule    Schedule
	micro       int
	granule     int            // rows of a chunk of the mini-batch (nn.Granule)
	first       [][]*actor.PID // per replica, its first position's actors
	loss, opt   *actor.PID
	paramActors int
	err         error

	// the step in progress
	req       *actor.PID
	step      int
	seq       int       // training steps run, counting this one
	spans     []nn.Span // the step's micro-batches, share after share
	share     []int     // per micro-batch, its share
	replica   []int     // per micro-batch, its replica (ReplicaOf its share)
	shares    []nn.Span // the step's shares of rows, in order
	starts    []int     // per share, its first micro-batch; one more: the end
	sent      int
	bwd       map[int]int // micro-batch to first-position actors done with it
	finished  int         // micro-batches whose backward is done
	stepLoss  float64
	haveLoss  bool
	updates   int
	rollbacks int // of the step's updates, provisional ones put back

	// messages and bookkeeping reused every step (see reused)
	begin   BeginStep
	targets reused[Target]
	fwds    reused[Forward]
	views   []*tensor.Tensor // micro-batch row views of viewsOf
	viewsOf *tensor.Tensor   // the input the views were made of
	result  StepResult

	// the evaluation in progress
	evalReq    *actor.PID
	evalRows   []int
	evalParts  []*EvalPart
	evalGot    int
	evalLabels int
	evalOf     *RunEval // the evaluation's input, sent a window of chunks at a time
	evalNext   int      // the next chunk to send
	evalLow    int      // the first chunk not over: chunks up to evalLow+window may be out
}

// evalWindow is how many evaluation chunks may be on their way at once: a
// chunk's outputs wait at the loss actor until it takes them, and a wide
// vocabulary's (GPT-2's 50,257 a token) would otherwise pile up there by
// the gigabyte. The chunks are summed in order whenever they arrive.
const evalWindow = 8

// NewCoordinator returns the coordinator of a pipeline whose replicas' first
// positions are first, with paramActors actors that take part in updates;
// micro is the micro-batches of a replica's share.
func NewCoordinator(id int, g *Graph, s Schedule, micro, granule int, first [][]*actor.PID, loss, opt *actor.PID, paramActors int) *Coordinator {
	c := &Coordinator{base: newBase(id, "coordinator", g), schedule: s, micro: micro, granule: granule, first: first,
		loss: loss, opt: opt, paramActors: paramActors}
	c.stops = true
	return c
}

func (c *Coordinator) Receive(ctx actor.Context) {
	msg, ok := c.receive(ctx)
	if !ok {
		return
	}
	switch m := msg.(type) {
	case *RunStep:
		c.runStep(ctx, m)
	case *BackwardDone:
		if !m.All {
			c.backwardDone(ctx, m.Micro)
		} else if m.Micro >= 0 && m.Micro < len(c.spans) {
			for k, r := range c.replica {
				if r == c.replica[m.Micro] {
					c.backwardDone(ctx, k)
				}
			}
		}
		c.maybeDone(ctx)
	case *StepLoss:
		c.stepLoss, c.haveLoss = m.Loss, true
		c.maybeDone(ctx)
	case *UpdateApplied:
		c.updates++
		if m.Rolled {
			c.rollbacks++
		}
		c.maybeDone(ctx)
	case *RunEval:
		c.runEval(ctx, m)
	case *EvalPart:
		c.evalParts[m.Chunk] = m
		c.evalGot++
		for c.evalLow < len(c.evalParts) && c.evalParts[c.evalLow] != nil {
			c.evalLow++
		}
		// chunk k+window may reuse chunk k's arenas only once k is over
		for c.evalNext < min(len(c.evalParts), c.evalLow+c.evalWindow()) {
			c.sendEvalChunk(ctx)
		}
		if c.evalGot == len(c.evalParts) {
			c.evalOf = nil
			c.answerEval(ctx)
		}
	case *Failed:
		c.stop(ctx, m.Err)
	case *Hang:
		c.stop(ctx, m.Err)
	case *Lost:
		c.stop(ctx, &LostError{Host: m.Host, Stages: m.Stages, Step: c.step, Why: m.Why})
	case *GetStats:
		c.respond(ctx, c.stats(m.Reset))
	}
}

func (c *Coordinator) runStep(ctx actor.Context, m *RunStep) {
	if c.err != nil {
		c.respond(ctx, &StepResult{Step: m.Step, Err: c.err})
		return
	}
	n := m.X.Shape()[0]
	if m.T.Rows() != n || n == 0 {
		c.respond(ctx, &StepResult{Step: m.Step, Err: fmt.Errorf("actors: step %d: %d target rows for a batch of %d", m.Step, m.T.Rows(), n)})
		return
	}
	if len(c.spans) == 0 || c.spans[len(c.spans)-1].Hi != n {
		c.deal(n)
	}
	c.req, c.step = ctx.Sender(), m.Step
	c.seq++
	c.setViews(m.X)
	c.sent, c.finished, c.updates, c.rollbacks, c.haveLoss = 0, 0, 0, 0, false
	if c.bwd == nil {
		c.bwd = map[int]int{}
	}
	clear(c.bwd)
	c.begin = BeginStep{Step: m.Step, LR: m.LR}
	c.send(ctx, c.opt, &c.begin)
	for k, sp := range c.spans {
		i := c.share[k]
		t := c.targets.at(k)
		*t = Target{Step: m.Step, Micro: k, Seq: c.seq, Micros: len(c.spans), T: m.T.Slice(sp.Lo, sp.Hi), Rows: sp.Hi - sp.Lo, Total: n, Row: sp.Lo,
			Replica: c.replica[k], Share: c.starts[i+1] - c.starts[i]}
		c.send(ctx, c.loss, t)
	}
	for k := range c.spans {
		if !c.schedule.OneAtATime() || k == c.starts[c.share[k]] {
			c.sendForward(ctx, k)
		}
	}
}

// deal splits n rows into one share a replica, consecutive runs of whole
// chunks as even as they can be (fewer shares than replicas when the chunks
// run out), and each share into the micro-batches of its replica
// (ReplicaOf).
func (c *Coordinator) deal(n int) {
	c.spans, c.share, c.replica, c.shares, c.starts = c.spans[:0], c.share[:0], c.replica[:0], c.shares[:0], c.starts[:0]
	for i, sh := range nn.SplitEven((n+c.granule-1)/c.granule, len(c.first)) {
		lo, hi := sh.Lo*c.granule, min(n, sh.Hi*c.granule)
		c.shares = append(c.shares, nn.Span{Lo: lo, Hi: hi})
		c.starts = append(c.starts, len(c.spans))
		for _, sp := range nn.SplitRowsBy(hi-lo, c.micro, c.granule) {
			c.spans = append(c.spans, nn.Span{Lo: lo + sp.Lo, Hi: lo + sp.Hi})
			c.share = append(c.share, i)
			c.replica = append(c.replica, ReplicaOf(i, len(c.first)))
		}
	}
	c.starts = append(c.starts, len(c.spans))
}

// ReplicaOf returns the replica of share i of a step's rows, of replicas
// replicas: share i goes to replica i+1 and the last to replica 0, which
// owns the weights. Shares are summed into the gradients in order, so the
// owner adds its share last and the turn ends where the update is made
// (GradTurn): on hosts, the gradients cross once per host boundary.
func ReplicaOf(i, replicas int) int { return (i + 1) % replicas }

// ShareOf returns the share of replica r, of replicas replicas: the inverse
// of ReplicaOf.
func ShareOf(r, replicas int) int { return (r + replicas - 1) % replicas }

// sendForward feeds micro-batch k to every actor of its replica's first
// position; its rows are shared read-only among them.
func (c *Coordinator) sendForward(ctx actor.Context, k int) {
	r, i := c.replica[k], c.share[k]
	f := c.fwds.at(k)
	*f = Forward{Step: c.step, Micro: k, Row: c.spans[k].Lo, Total: c.spans[len(c.spans)-1].Hi, Seq: c.seq, Micros: c.starts[i+1] - c.starts[i],
		First: c.shares[i].Lo, Share: c.shares[i].Hi - c.shares[i].Lo, Replicas: len(c.shares), X: c.views[k]}
	for _, pid := range c.first[r] {
		c.send(ctx, pid, f)
	}
	c.sent++
}

// backwardDone counts micro-batch k's backward done at one actor of the
// first position; once at all, k is finished.
func (c *Coordinator) backwardDone(ctx actor.Context, k int) {
	c.bwd[k]++
	if c.bwd[k] < len(c.first[0]) {
		return
	}
	delete(c.bwd, k)
	c.finished++
	next := k + 1
	if c.schedule.OneAtATime() && next < len(c.spans) && c.replica[next] == c.replica[k] {
		c.sendForward(ctx, next)
	}
}

func (c *Coordinator) maybeDone(ctx actor.Context) {
	if c.req == nil || !c.haveLoss || c.finished < len(c.spans) || c.updates < c.paramActors {
		return
	}
	c.result = StepResult{Step: c.step, Loss: c.stepLoss, Rollbacks: c.rollbacks}
	c.send(ctx, c.req, &c.result)
	c.req = nil
}

// setViews points c.views (one per micro-batch span) at x. The views
// share x's storage; a trainer that passes the same input tensor every step
// (refilling its storage) gets the same views back.
func (c *Coordinator) setViews(x *tensor.Tensor) {
	if x == c.viewsOf && len(c.views) == len(c.spans) {
		return // same tensor, so same shape and spans
	}
	c.views = c.views[:0]
	for _, sp := range c.spans {
		c.views = append(c.views, nn.Rows(x, sp.Lo, sp.Hi))
	}
	c.viewsOf = x
}

func (c *Coordinator) runEval(ctx actor.Context, m *RunEval) {
	if c.err != nil {
		c.respond(ctx, &EvalResult{Err: c.err})
		return
	}
	n := m.X.Shape()[0]
	if n == 0 || m.Rows <= 0 {
		c.respond(ctx, &EvalResult{Loss: math.NaN(), Accuracy: math.NaN()})
		return
	}
	c.evalReq, c.evalGot, c.evalLabels = ctx.Sender(), 0, m.T.Labeled()
	c.evalRows = c.evalRows[:0]
	chunks := (n + m.Rows - 1) / m.Rows
	c.evalParts = make([]*EvalPart, chunks)
	for k := range chunks {
		c.evalRows = append(c.evalRows, min((k+1)*m.Rows, n)-k*m.Rows)
	}
	c.evalOf, c.evalNext, c.evalLow = m, 0, 0
	for range min(chunks, c.evalWindow()) {
		c.sendEvalChunk(ctx)
	}
}

// evalWindow returns how many chunks of the evaluation in progress may be
// on their way at once.
func (c *Coordinator) evalWindow() int {
	if c.evalOf != nil && c.evalOf.Window > 0 {
		return c.evalOf.Window
	}
	return evalWindow
}

// sendEvalChunk sends the evaluation's next chunk and its target.
func (c *Coordinator) sendEvalChunk(ctx actor.Context) {
	m, k, chunks := c.evalOf, c.evalNext, len(c.evalParts)
	n := m.X.Shape()[0]
	lo, hi := k*m.Rows, min((k+1)*m.Rows, n)
	c.evalNext++
	c.send(ctx, c.loss, &Target{Step: c.step, Micro: k, Micros: chunks, Eval: true, T: m.T.Slice(lo, hi), Rows: hi - lo, Total: n})
	f := &Forward{Step: c.step, Micro: k, Micros: chunks, Eval: true, X: nn.Rows(m.X, lo, hi)}
	for _, pid := range c.first[0] { // replica 0 evaluates
		c.send(ctx, pid, f)
	}
}

// answerEval sums the chunks in order, as nn.Sequential.Evaluate does.
func (c *Coordinator) answerEval(ctx actor.Context) {
	n := 0
	for _, r := range c.evalRows {
		n += r
	}
	loss, correct := 0.0, 0
	for _, p := range c.evalParts {
		loss += p.Loss * float64(p.Rows) / float64(n)
		correct += p.Correct
	}
	acc := math.NaN()
	if c.evalLabels > 0 {
		acc = float64(correct) / float64(c.evalLabels)
	}
	c.send(ctx, c.evalReq, &EvalResult{Loss: loss, Accuracy: acc})
	c.evalReq = nil
}

// stop records the first failure and answers whatever is waiting with it.
func (c *Coordinator) stop(ctx actor.Context, err error) {
	if c.err == nil {
		c.err = err
	}
	if c.req != nil {
		c.send(ctx, c.req, &StepResult{Step: c.step, Err: c.err})
		c.req = nil
	}
	if c.evalReq != nil {
		c.send(ctx, c.evalReq, &EvalResult{Err: c.err})
		c.evalReq = nil
	}
}
