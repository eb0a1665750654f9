package par

import (
	"runtime"
	"sync"
)

// Runs starts functions (an actor's run of messages) on goroutines it
// keeps: a goroutine that finishes a run waits for the next instead of
// exiting, so the stack it grew is kept, and a run that finds no idle
// goroutine starts one, so a run that blocks never holds up another. The
// zero value is not ready: use NewRuns. Close ends its goroutines.
//
// Go puts a goroutine made runnable on the CPU (P) of the one that made it
// so, from where an idle CPU takes it within microseconds; but a CPU
// running an idle helper's spin is not idle and never takes it (the
// helper's yields go through the global queue, which that CPU serves
// first). So while helpers spin, Start yields its CPU to the run it
// started and goes on wherever the scheduler next finds room.
type Runs struct {
	work chan func()
	done chan struct{}
	wg   sync.WaitGroup
}

// NewRuns returns an empty Runs.
func NewRuns() *Runs { return &Runs{work: make(chan func()), done: make(chan struct{})} }

// Start runs fn on an idle goroutine of r, or on a new one.
func (r *Runs) Start(fn func()) {
	select {
	case r.work <- fn:
	default:
		r.wg.Add(1)
		go r.run(fn)
	}
	if idleCount.Load() > 0 {
		runtime.Gosched()
	}
}

// run runs fn, then each run handed to it, until r closes.
func (r *Runs) run(fn func()) {
	defer r.wg.Done()
	for {
		fn()
		select {
		case fn = <-r.work:
		case <-r.done:
			return
		}
	}
}

// Close ends r's goroutines, waiting for a run still going: call it once
// nothing can start another.
func (r *Runs) Close() {
	close(r.done)
	r.wg.Wait()
}
