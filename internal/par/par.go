package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Work is a job cut into parts: Part(q) does part q. Parts run on the caller
// and on helper goroutines, each claimed once: the caller claims from the
// front (0, 1, ...) and the helpers from the back (parts-1, parts-2, ...).
type Work interface{ Part(q int) }

// Task is a loop body for For: Run handles indices [lo, hi).
type Task interface{ Run(lo, hi int) }

// Budget returns the goroutines a call with budget threads may use: threads
// itself, or runtime.GOMAXPROCS(0) when threads < 1.
func Budget(threads int) int {
	if threads < 1 {
		return runtime.GOMAXPROCS(0)
	}
	return threads
}

// For runs t over [0, n) in up to Budget(threads) parts of at least grain
// indices, on the calling goroutine and pooled helpers, and returns when all
// are done. The parts are disjoint ranges, so a loop whose iterations are
// independent gives the same bits for any split. Pass a pointer to a struct
// the caller keeps: For itself allocates nothing.
func For(threads, n, grain int, t Task) {
	threads = Budget(threads)
	parts := min(threads, n/max(1, grain))
	if parts <= 1 {
		t.Run(0, n)
		return
	}
	f := fors.Get()
	f.t, f.n, f.parts = t, n, parts
	Do(threads, parts, f)
	f.t = nil
	fors.Put(f)
}

// forWork is one call of For as Work.
type forWork struct {
	t        Task
	n, parts int
}

func (f *forWork) Part(q int) { f.t.Run(Bound(q, f.parts, f.n, 1), Bound(q+1, f.parts, f.n, 1)) }

// Bound returns the start of part q of parts over [0, size), in whole units.
func Bound(q, parts, size, unit int) int {
	units := (size + unit - 1) / unit
	return min(size, (units*q/parts)*unit)
}

// Parts are claimed with an atomic counter, so the caller alone finishes the
// work if no helper turns up, and a helper slowed down by a busy CPU holds up
// the call by at most the part it is on. The caller takes parts from the
// front and the helpers from the back, so that calls cut alike give each
// goroutine the same end of the data call after call: on two cores a GEMM's
// columns, an update's halves of a weight and the weight gradient's rows
// then stay with the core whose cache holds them (an epoch of the MNIST MLP
// ran 1-3% faster on two cores than with parts claimed in order by all).
//
// Waking a parked goroutine on an idle CPU costs tens to hundreds of
// microseconds on a virtual machine (the idle vCPU is halted), more than a
// whole 128×512×256 product. So a helper that finishes its work spins,
// yielding to any runnable goroutine, for up to helperSpin waiting for the
// next call before it exits. Back-to-back calls, as in a training step, find
// their helpers running; no helper outlives helperSpin of idleness, and a
// call never uses more goroutines than its budget.
//
// The caller, once no part is left to claim, spins for callerSpin waiting for
// the helpers' last parts, then blocks: a helper whose thread the OS has
// descheduled then gets the caller's CPU instead of waiting out another
// process's time slice.

const (
	helperSpin = 2 * time.Millisecond  // idle helper's wait for work before exiting
	callerSpin = 50 * time.Microsecond // caller's spin before blocking for helpers
)

// job is one call of Do.
type job struct {
	w     Work
	parts int
	ends  atomic.Uint64 // parts claimed: from the front in the low half, from the back in the high
	refs  atomic.Int64  // helpers holding the job
	done  chan struct{} // a helper dropping refs to 0 sends here (buffer 1)
}

// work claims and runs parts until none is left: from the back for a
// helper.
func (j *job) work(helper bool) {
	for {
		q := j.claim(helper)
		if q < 0 {
			return
		}
		j.w.Part(q)
	}
}

// claim takes the next part from the front, or for a helper from the back,
// and returns it, or -1 when none is left.
func (j *job) claim(helper bool) int {
	for {
		e := j.ends.Load()
		front, back := int(e&(1<<32-1)), int(e>>32)
		if front+back >= j.parts {
			return -1
		}
		if helper {
			if j.ends.CompareAndSwap(e, e+1<<32) {
				return j.parts - 1 - back
			}
			continue
		}
		if j.ends.CompareAndSwap(e, e+1) {
			return front
		}
	}
}

// claimed marks a helper's mailbox once it has taken the job offered there.
var claimed = new(job)

// helper is a pooled goroutine.
type helper struct {
	mail atomic.Pointer[job] // nil, an offered job, or claimed
}

// The pool's bookkeeping reuses its structs, so that a helper that exits
// when idle and is started again later allocates nothing; the lists start
// with room for more helpers than a call may use, and jobs come in batches,
// so that a new peak of concurrent calls rarely allocates either.
var (
	poolMu   sync.Mutex
	idle     = make([]*helper, 0, maxOffer+1) // live helpers with an empty mailbox
	helpers  int                              // live helpers
	starting = make([]*helper, 0, maxOffer+1) // helpers offered a job whose goroutine has not begun
	spare    = make([]*helper, 0, maxOffer+1) // structs of helpers that exited

	idleCount atomic.Int64 // len(idle), read without poolMu
)

// jobBatch is how many jobs are made at once: concurrent calls (one per
// actor running a GEMM or a For) rarely exceed it.
const jobBatch = 16

// FreeList keeps values for reuse, made in batches, so that steady calls
// allocate nothing and a new peak of concurrent calls rarely does. Init, if
// set, prepares each value once when its batch is made. It is safe for
// concurrent use.
type FreeList[T any] struct {
	Init func(*T)
	mu   sync.Mutex
	free []*T
}

// Get returns a value from the list, or one of a new batch.
func (f *FreeList[T]) Get() *T {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.free) == 0 {
		batch := make([]T, jobBatch)
		for i := range batch {
			if f.Init != nil {
				f.Init(&batch[i])
			}
			f.free = append(f.free, &batch[i])
		}
	}
	x := f.free[len(f.free)-1]
	f.free = f.free[:len(f.free)-1]
	return x
}

// Put gives x back for reuse; the caller no longer touches it.
func (f *FreeList[T]) Put(x *T) {
	f.mu.Lock()
	f.free = append(f.free, x)
	f.mu.Unlock()
}

var (
	jobs = FreeList[job]{Init: func(j *job) { j.done = make(chan struct{}, 1) }}
	fors FreeList[forWork]
)

// runHelper is a helper goroutine's body: it takes the newest helper waiting
// to start. (A go statement without arguments allocates no closure.)
func runHelper() {
	poolMu.Lock()
	h := starting[len(starting)-1]
	starting = starting[:len(starting)-1]
	poolMu.Unlock()
	h.loop()
}

// loop runs offered jobs until it has been idle for helperSpin.
func (h *helper) loop() {
	last := time.Now()
	for i := 1; ; i++ {
		if j := h.mail.Load(); j != nil && j != claimed {
			if h.mail.CompareAndSwap(j, claimed) {
				j.work(true)
				done := j.done
				if j.refs.Add(-1) == 0 { // j may be reused from here on
					select {
					case done <- struct{}{}:
					default:
					}
				}
				h.mail.Store(nil)
				poolMu.Lock()
				idle = append(idle, h)
				idleCount.Store(int64(len(idle)))
				poolMu.Unlock()
				last = time.Now()
			}
			// Else the caller took the offer back and returns h to idle.
			continue
		}
		if i%64 != 0 {
			continue
		}
		runtime.Gosched()
		osYield()
		if time.Since(last) < helperSpin {
			continue
		}
		poolMu.Lock()
		for x, y := range idle {
			if y == h {
				idle = append(idle[:x], idle[x+1:]...)
				idleCount.Store(int64(len(idle)))
				helpers--
				spare = append(spare, h) // h is not touched again here
				poolMu.Unlock()
				return
			}
		}
		// A caller has taken h from idle to offer it a job: wait for it.
		poolMu.Unlock()
		last = time.Now()
	}
}

// Do runs parts 0..parts-1 of w on the caller and on up to Budget(threads)-1
// helpers, and returns when every part is done: the caller claims parts from
// the front, helpers from the back (see Work). A part must not wait for
// another.
func Do(threads, parts int, w Work) {
	threads = Budget(threads)
	if parts <= 1 || threads <= 1 {
		for q := range parts {
			w.Part(q)
		}
		return
	}
	if parts >= 1<<31 {
		panic("par: too many parts")
	}
	j := jobs.Get()
	j.w, j.parts = w, parts
	j.ends.Store(0)
	var offered [maxOffer]*helper
	want := min(parts-1, threads-1, maxOffer)
	poolMu.Lock()
	n := min(want, len(idle))
	copy(offered[:n], idle[len(idle)-n:])
	idle = idle[:len(idle)-n]
	idleCount.Store(int64(len(idle)))
	helpers += want - n
	poolMu.Unlock()
	j.refs.Store(int64(want))
	for _, h := range offered[:n] {
		h.mail.Store(j)
	}
	for x := n; x < want; x++ {
		poolMu.Lock()
		if len(spare) == 0 {
			batch := make([]helper, jobBatch) // as jobs: a new peak rarely allocates
			for i := range batch {
				spare = append(spare, &batch[i])
			}
		}
		h := spare[len(spare)-1]
		spare = spare[:len(spare)-1]
		h.mail.Store(j)
		starting = append(starting, h)
		poolMu.Unlock()
		offered[x] = h
		go runHelper()
	}

	j.work(false)

	// Take back the offers no helper has claimed, then wait for the helpers
	// that did to finish their parts: spin a little, then block.
	for _, h := range offered[:want] {
		if h.mail.CompareAndSwap(j, nil) {
			j.refs.Add(-1)
			poolMu.Lock()
			idle = append(idle, h)
			idleCount.Store(int64(len(idle)))
			poolMu.Unlock()
		}
	}
	if j.refs.Load() != 0 {
		start := time.Now()
		for i := 1; j.refs.Load() != 0; i++ {
			if i%64 == 0 {
				if time.Since(start) > callerSpin {
					// A token left by an earlier use of j only costs a
					// second look at refs.
					for j.refs.Load() != 0 {
						<-j.done
					}
					break
				}
				runtime.Gosched()
				osYield()
			}
		}
	}
	j.w = nil
	jobs.Put(j)
}

// maxOffer bounds the helpers of one call.
const maxOffer = 63

// LiveHelpers reports how many helper goroutines exist, for tests that check
// that none outlives its idleness.
func LiveHelpers() int {
	poolMu.Lock()
	defer poolMu.Unlock()
	return helpers
}
