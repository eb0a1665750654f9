package pipeline

import "sync"

// pool is the dispatcher of the engine's actors: it runs a mailbox's
// messages on goroutines it keeps. protoactor's default starts a goroutine
// for every run of messages, and the kernels then grow its stack again, a
// copy at a time, on every step's critical path; a kept goroutine keeps the
// stack it grew. A run that finds no idle goroutine starts one, so a run
// that blocks never holds up another. close ends them once the actors have
// stopped.
type pool struct {
	work chan func()
	done chan struct{}
	wg   sync.WaitGroup
}

// poolThroughput is the messages a mailbox runs before it yields its
// goroutine, as protoactor's default dispatcher.
const poolThroughput = 300

func newPool() *pool { return &pool{work: make(chan func()), done: make(chan struct{})} }

// Schedule runs fn on an idle goroutine of the pool, or on a new one.
func (p *pool) Schedule(fn func()) {
	select {
	case p.work <- fn:
	default:
		p.wg.Add(1)
		go p.run(fn)
	}
}

func (p *pool) Throughput() int { return poolThroughput }

// run runs fn, then each run handed to it, until the pool closes.
func (p *pool) run(fn func()) {
	defer p.wg.Done()
	for {
		fn()
		select {
		case fn = <-p.work:
		case <-p.done:
			return
		}
	}
}

// close ends the pool's goroutines, waiting for a run still going: call it
// once no actor of the pool can get a message.
func (p *pool) close() {
	close(p.done)
	p.wg.Wait()
}
