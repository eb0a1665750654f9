package actors

import (
	"sync/atomic"

	"github.com/pipetrain/pipetrain/internal/par"
)

// Dispatcher runs actors' mailboxes (actor.WithDispatcher) on par.Runs:
// goroutines kept from run to run, with the stacks the kernels grew
// (protoactor's default starts a goroutine for every run of a mailbox),
// which yield their CPU to a run they start while GEMM helpers spin. Close
// it once its actors have stopped.
type Dispatcher struct {
	r      *par.Runs
	actors atomic.Int64 // actors that run on it (Add)
}

// NewDispatcher returns a Dispatcher with no goroutine yet.
func NewDispatcher() *Dispatcher { return &Dispatcher{r: par.NewRuns()} }

// Add tells d that one more actor runs on it: d keeps a goroutine for each,
// so that their runs, all at once if need be, start without a new one
// (par.Runs.Keep).
func (d *Dispatcher) Add() { d.r.Keep(int(d.actors.Add(1))) }

// Schedule starts a run of a mailbox.
func (d *Dispatcher) Schedule(fn func()) { d.r.Start(fn) }

// Throughput is the messages a mailbox runs before it yields its
// goroutine, as protoactor's default dispatcher.
func (*Dispatcher) Throughput() int { return 300 }

// Close ends the goroutines, waiting for a run still going.
func (d *Dispatcher) Close() { d.r.Close() }
