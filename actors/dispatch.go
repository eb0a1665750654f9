package actors

import "github.com/pipetrain/pipetrain/internal/par"

// Dispatcher runs actors' mailboxes (actor.WithDispatcher) on par.Runs:
// goroutines kept from run to run, with the stacks the kernels grew
// (protoactor's default starts a goroutine for every run of a mailbox),
// which yield their CPU to a run they start while GEMM helpers spin. Close
// it once its actors have stopped.
type Dispatcher struct{ r *par.Runs }

// NewDispatcher returns a Dispatcher with no goroutine yet.
func NewDispatcher() *Dispatcher { return &Dispatcher{par.NewRuns()} }

// Schedule starts a run of a mailbox.
func (d *Dispatcher) Schedule(fn func()) { d.r.Start(fn) }

// Throughput is the messages a mailbox runs before it yields its
// goroutine, as protoactor's default dispatcher.
func (*Dispatcher) Throughput() int { return 300 }

// Close ends the goroutines, waiting for a run still going.
func (d *Dispatcher) Close() { d.r.Close() }
