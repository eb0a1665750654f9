package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Runs starts functions (an actor's run of messages) on goroutines it
// keeps: a goroutine that finishes a run waits for the next instead of
// exiting, so the stack it grew is kept, and a run that finds no goroutine
// between runs starts one, so a run that blocks never holds up another. The
// zero value is not ready: use NewRuns. Close ends its goroutines.
//
// Go puts a goroutine made runnable on the CPU (P) of the one that made it
// so, from where an idle CPU takes it within microseconds; but a CPU
// running an idle helper's spin is not idle and never takes it (the
// helper's yields go through the global queue, which that CPU serves
// first). So while helpers spin, Start yields its CPU to the run it
// started and goes on wherever the scheduler next finds room.
//
// A run may start while the goroutine that ended the last is on its way
// back, or while every goroutine is busy for a moment: left to itself, Runs
// would start one more goroutine now and then for as long as runs go on.
// Keep bounds them: given as many goroutines as runs that can be under way
// at once (one an actor: an actor's mailbox runs once at a time), a Start
// that finds all busy waits for the next to come back, which never waits on
// that Start (its actor is not among the runs under way).
type Runs struct {
	work  chan func()
	done  chan struct{}
	wg    sync.WaitGroup
	n     atomic.Int64 // goroutines started
	kept  atomic.Int64 // Keep's bound on n; 0: none
	avail atomic.Int64 // goroutines back from a run and not yet handed one, less the Starts waiting for one
}

// NewRuns returns an empty Runs.
func NewRuns() *Runs { return &Runs{work: make(chan func()), done: make(chan struct{})} }

// Start runs fn on a goroutine of r back from its last run, or on a new one
// while r has fewer than Keep's bound.
func (r *Runs) Start(fn func()) {
	if r.avail.Add(-1) >= 0 || r.full() {
		select {
		case r.work <- fn: // one back from its run takes it, now or once it gets there
		case <-r.done:
			go fn() // a late start after Close still runs, on a goroutine of its own
		}
	} else {
		r.avail.Add(1)
		r.n.Add(1)
		r.wg.Add(1)
		go r.run(fn)
	}
	if idleCount.Load() > 0 {
		runtime.Gosched()
	}
}

// full reports whether r has as many goroutines as Keep allows.
func (r *Runs) full() bool {
	k := r.kept.Load()
	return k > 0 && r.n.Load() >= k
}

// Keep starts goroutines, each waiting for a run, until r has n, and bounds
// them at n from then on (at the most asked for). Call it with at least
// the runs that can be under way at once.
func (r *Runs) Keep(n int) {
	for k := r.kept.Load(); k < int64(n) && !r.kept.CompareAndSwap(k, int64(n)); k = r.kept.Load() {
	}
	for have := r.n.Load(); have < int64(n); have = r.n.Load() {
		if r.n.CompareAndSwap(have, have+1) {
			r.wg.Add(1)
			go r.run(nil)
		}
	}
}

// run runs fn, if any, then each run handed to it, until r closes.
func (r *Runs) run(fn func()) {
	defer r.wg.Done()
	for {
		if fn != nil {
			fn()
		}
		r.avail.Add(1)
		select {
		case fn = <-r.work:
		case <-r.done:
			return
		}
	}
}

// Close ends r's goroutines, waiting for a run still going: call it once
// nothing should start another (one started later runs on a goroutine of
// its own).
func (r *Runs) Close() {
	close(r.done)
	r.wg.Wait()
}
