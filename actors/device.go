package actors

import (
	"slices"
	"sync"
)

// Device is the share of the cores one stage of a chunked schedule
// (Interleaved, ZBV) has: the stage actors of its positions take turns on
// it, one computing at a time, so a stage's positions run as one worker
// would run them and the stages' thread budgets stay apart. A waiting
// backward goes first, then a forward, then weight gradients; among
// equals the lower micro-batch, then the position nearer the chain's end
// for a forward (it finishes a micro-batch sooner) and nearer its start
// for a backward. The order of turns never changes a result: each stage
// actor's sums run in micro-batch order whatever runs between them.
type Device struct {
	mu      sync.Mutex
	busy    bool
	waiting []deviceWait
}

type deviceWait struct {
	rank [3]int
	go_  chan struct{}
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
		d = new(Device)
		g.devices[i] = d
	}
	return d
}

// deviceRank orders waiting work: lower goes first.
func deviceRank(kind SpanKind, micro, position int) [3]int {
	switch kind {
	case SpanBackward, SpanUpdate:
		return [3]int{0, micro, position}
	case SpanWeights:
		return [3]int{2, micro, position}
	}
	return [3]int{1, micro, -position}
}

// acquire waits for the device's turn; release hands it on.
func (d *Device) acquire(rank [3]int) {
	d.mu.Lock()
	if !d.busy {
		d.busy = true
		d.mu.Unlock()
		return
	}
	w := deviceWait{rank, make(chan struct{})}
	d.waiting = append(d.waiting, w)
	d.mu.Unlock()
	<-w.go_
}

func (d *Device) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.waiting) == 0 {
		d.busy = false
		return
	}
	best := 0
	for i, w := range d.waiting {
		if slices.Compare(w.rank[:], d.waiting[best].rank[:]) < 0 {
			best = i
		}
	}
	w := d.waiting[best]
	d.waiting = append(d.waiting[:best], d.waiting[best+1:]...)
	close(w.go_) // busy stays: the turn passes to w
}

// SetDevice makes the stage take turns on d with the other stage actors of
// its stage, as the actor of position in the chain. Call it before the
// actor starts.
func (s *Stage) SetDevice(d *Device, position int) { s.device, s.position = d, position }
