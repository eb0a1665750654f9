package actors

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Device is the share of the cores one stage of a programmed schedule
// (Interleaved, ZBH1, ZBV) has. The stage actors of its positions run a
// step's ops in the order Order gives, in turn: the device holds the
// cursor, and the actor whose op is next runs it once its input is there
// and hands the turn on. Work outside the order (an update, an
// evaluation) takes the device's lock too, so a stage computes one thing
// at a time and the stages' thread budgets stay apart. The order never
// changes a result: each stage actor's sums run in micro-batch order
// whatever runs between them.
type Device struct {
	work sync.Mutex // held while one of the stage's actors computes
	mu   sync.Mutex // guards prog

	index int // the stage's
	prog  deviceProgram
}

// deviceProgram is a programmed schedule's order of the stage's ops for
// the step in hand (Order), which the stage actors of its positions run
// in turn, each when its op's input is there: the cursor at is the next.
type deviceProgram struct {
	sched          Schedule
	stages, chunks int
	set            bool
	orders         map[int][]SimOp // by micro-batch count; nil: none for it
	seq            int             // the step in hand
	ops            []SimOp
	at             int
	pids           map[int]*actor.PID // the stage actors, by position
}

// Device returns the device of stage i in g, made on first use: the stage
// actors built in one process for one run share it.
func (g *Graph) Device(i int) *Device {
	g.devMu.Lock()
	defer g.devMu.Unlock()
	if g.devices == nil {
		g.devices = map[int]*Device{}
	}
	d := g.devices[i]
	if d == nil {
		d = &Device{index: i}
		g.devices[i] = d
	}
	return d
}

// program makes the stage run steps of schedule sched over stages stages of
// chunks positions in the order Order gives, and knows pid as the stage
// actor of position; the stage's actors call it with the same schedule.
func (d *Device) program(sched Schedule, stages, chunks, position int, pid *actor.PID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pr := &d.prog
	if !pr.set {
		*pr = deviceProgram{sched: sched, stages: stages, chunks: chunks, set: true, orders: map[int][]SimOp{}, pids: map[int]*actor.PID{}, seq: -1}
	}
	pr.pids[position] = pid
}

// begin starts step seq of m micro-batches, unless it has begun, and
// reports whether the step runs in the program's order: some schedules
// have none for some m (interleaved needs a multiple of the stages).
func (d *Device) begin(seq, m int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	pr := &d.prog
	if !pr.set {
		return false
	}
	if seq != pr.seq {
		ops, ok := pr.orders[m]
		if !ok {
			if order, err := Order(pr.sched, pr.stages, m, pr.chunks); err == nil {
				ops = order[d.index]
			}
			pr.orders[m] = ops
		}
		pr.seq, pr.ops, pr.at = seq, ops, 0
	}
	return pr.ops != nil
}

// programmed reports whether step seq runs in the program's order.
func (d *Device) programmed(seq int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.prog.set && d.prog.seq == seq && d.prog.ops != nil
}

// next returns the op at the cursor and its step, if the step has one
// left.
func (d *Device) next() (op SimOp, seq int, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pr := &d.prog
	if pr.at >= len(pr.ops) {
		return SimOp{}, pr.seq, false
	}
	return pr.ops[pr.at], pr.seq, true
}

// done moves the cursor past step seq's n ops at it and returns the stage
// actor whose op is next, or nil at the step's end. The op that ends a
// step may let the next one begin before done: its cursor then stays.
func (d *Device) done(seq, n int) *actor.PID {
	d.mu.Lock()
	defer d.mu.Unlock()
	pr := &d.prog
	if seq != pr.seq {
		return nil
	}
	pr.at += n
	if pr.at >= len(pr.ops) {
		return nil
	}
	return pr.pids[pr.ops[pr.at].Chunk]
}

// SetDevice makes the stage take turns on d with the other stage actors of
// its stage, as the actor of position in the chain. Call it before the
// actor starts.
func (s *Stage) SetDevice(d *Device, position int) { s.device, s.position = d, position }

// runOf returns how many ops from the cursor on are of kind on position:
// a stage actor runs such a run of weight gradients as one batch.
func (d *Device) runOf(position int, kind SimKind) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	pr := &d.prog
	n := 0
	for k := pr.at; k < len(pr.ops) && pr.ops[k].Chunk == position && pr.ops[k].Kind == kind; k++ {
		n++
	}
	return n
}
