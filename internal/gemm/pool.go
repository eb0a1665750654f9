package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel calls split C into parts (blocks of rows or of columns, never of
// k) and run them on the calling goroutine and on helper goroutines from a
// small pool. Parts are claimed with an atomic counter, so the caller alone
// finishes the call if no helper turns up, and a helper slowed down by a busy
// CPU holds up the call by at most the part it is on. Which goroutine computes
// a part never changes its bits.
//
// Waking a parked goroutine on an idle CPU costs tens to hundreds of
// microseconds on a virtual machine (the idle vCPU is halted), more than a
// whole 128×512×256 product. So a helper that finishes its work spins,
// yielding to any runnable goroutine, for up to helperSpin waiting for the
// next call before it exits. Back-to-back calls, as in a training step, find
// their helpers running; no helper outlives helperSpin of idleness, and a
// call never uses more goroutines than its thread budget.
//
// The caller, once no part is left to claim, spins for callerSpin waiting for
// the helpers' last parts, then blocks: a helper whose thread the OS has
// descheduled then gets the caller's CPU instead of waiting out another
// process's time slice.

const (
	helperSpin = 2 * time.Millisecond  // idle helper's wait for work before exiting
	callerSpin = 50 * time.Microsecond // caller's spin before blocking for helpers
)

// job is one parallel Sgemm call, or one parallel loop of For.
type job struct {
	task   Task // a loop of For over [0, size), or nil for Sgemm
	size   int
	ks     *kernelSet
	g      sgemmArgs
	parts  int
	alongN bool
	apre   []float32 // all of op(A) packed, shared by column parts; or nil
	// Column parts first pack apre together: tasks 0..packParts-1 each pack
	// a share of its panels, and a column part starts once all are done.
	packParts int
	packed    atomic.Int64  // pack tasks finished
	next      atomic.Int64  // next task to claim: pack tasks, then parts
	refs      atomic.Int64  // helpers holding the job
	done      chan struct{} // a helper dropping refs to 0 sends here (buffer 1)
}

// part computes part q of the job on workspace w.
func (j *job) part(w *workspace, q int) {
	if j.task != nil {
		j.task.Run(bounds(q, j.parts, j.size, 1), bounds(q+1, j.parts, j.size, 1))
		return
	}
	g, ks := &j.g, j.ks
	i0, i1, j0, j1 := 0, g.m, 0, g.n
	if j.alongN {
		j0, j1 = bounds(q, j.parts, g.n, ks.nr()), bounds(q+1, j.parts, g.n, ks.nr())
	} else {
		i0, i1 = bounds(q, j.parts, g.m, ks.mr), bounds(q+1, j.parts, g.m, ks.mr)
	}
	w.run(ks, g, i0, i1, j0, j1, j.apre)
}

// work claims and computes parts until none is left, on w or, if w is nil, on
// a workspace of its own.
func (j *job) work(w *workspace) {
	own := false
	for {
		q := int(j.next.Add(1) - 1)
		if q < j.packParts {
			j.pack(q)
			j.packed.Add(1)
			continue
		}
		q -= j.packParts
		if q >= j.parts {
			break
		}
		if j.packParts > 0 {
			j.waitPacked()
		}
		if w == nil && j.task == nil {
			w, own = getWorkspace(), true
		}
		j.part(w, q)
	}
	if own {
		putWorkspace(w)
	}
}

// bounds returns the start of part q of parts over [0, size), in whole units.
func bounds(q, parts, size, unit int) int {
	units := (size + unit - 1) / unit
	return min(size, (units*q/parts)*unit)
}

// pack runs pack task q of the job: its share of the micro-panels of op(A),
// each k block after the other, in the layout run reads when given apre
// (block pc at apre[pc*mPad:], its panel of rows r at r*kc within it).
func (j *job) pack(q int) {
	g, ks := &j.g, j.ks
	kcb := kBlock(g.k, ks.kc, g.chunked)
	mPad := roundUp(g.m, ks.mr)
	panels := mPad / ks.mr
	units := panels * ((g.k + kcb - 1) / kcb)
	for u := bounds(q, j.packParts, units, 1); u < bounds(q+1, j.packParts, units, 1); u++ {
		pc, r := (u/panels)*kcb, (u%panels)*ks.mr
		kc := min(kcb, g.k-pc)
		ks.packA(j.apre[pc*mPad+r*kc:], g.a, g.lda, g.transA, r, min(ks.mr, g.m-r), pc, kc)
	}
}

// waitPacked spins until every pack task is done: they were all claimed
// before this part, by goroutines that are running them.
func (j *job) waitPacked() {
	for i := 1; j.packed.Load() < int64(j.packParts); i++ {
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
}

// sharedAMax bounds the floats of a shared packed A.
const sharedAMax = 1 << 22

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
	jobFree  = make([]*job, 0, jobBatch)
)

// jobBatch is how many jobs are made at once: concurrent calls (one per
// actor running a GEMM or a For) rarely exceed it.
const jobBatch = 16

func getJob() *job {
	poolMu.Lock()
	defer poolMu.Unlock()
	if len(jobFree) == 0 {
		batch := make([]job, jobBatch)
		for i := range batch {
			batch[i].done = make(chan struct{}, 1)
			jobFree = append(jobFree, &batch[i])
		}
	}
	j := jobFree[len(jobFree)-1]
	jobFree = jobFree[:len(jobFree)-1]
	return j
}

func putJob(j *job) {
	poolMu.Lock()
	jobFree = append(jobFree, j)
	poolMu.Unlock()
}

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
				j.work(nil)
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

// runParallel runs the call in parts over the caller and up to threads-1
// helpers.
func runParallel(ks *kernelSet, g *sgemmArgs, parts int, alongN bool, threads int) {
	j := getJob()
	j.ks, j.g, j.parts, j.alongN = ks, *g, parts, alongN
	j.next.Store(0)
	j.packed.Store(0)
	j.packParts = 0
	w := getWorkspace()
	j.apre = nil
	if alongN {
		// Column parts all need all of op(A): the threads pack it together
		// first, so that it is packed once and no part packs alone.
		kcb := kBlock(g.k, ks.kc, g.chunked)
		if size := roundUp(g.m, ks.mr) * roundUp(g.k, kcb); size <= sharedAMax {
			w.shared = grow(w.shared, size)
			j.apre = w.shared
			j.packParts = threads
		}
	}

	share(j, w, threads)
	putWorkspace(w)
	j.g, j.apre = sgemmArgs{}, nil // drop the caller's matrices before pooling
	putJob(j)
}

// Task is a loop body for For: Run handles indices [lo, hi).
type Task interface{ Run(lo, hi int) }

// For runs t over [0, n) in up to Threads() parts of at least grain indices,
// on the calling goroutine and the GEMM's helpers, and returns when all are
// done. The parts are disjoint ranges, so a loop whose iterations are
// independent gives the same bits for any split. Pass a pointer to a struct
// the caller keeps: For itself allocates nothing.
func For(n, grain int, t Task) {
	threads := Threads()
	parts := min(threads, n/max(1, grain))
	if parts <= 1 {
		t.Run(0, n)
		return
	}
	j := getJob()
	j.task, j.size, j.parts, j.packParts = t, n, parts, 0
	j.next.Store(0)
	share(j, nil, threads)
	j.task = nil
	putJob(j)
}

// share runs job j's parts on the caller (with workspace w, or none) and on up
// to threads-1 helpers, and returns when every part is done.
func share(j *job, w *workspace, threads int) {
	parts := j.parts
	var offered [maxOffer]*helper
	want := min(parts-1, threads-1, maxOffer)
	poolMu.Lock()
	n := min(want, len(idle))
	copy(offered[:n], idle[len(idle)-n:])
	idle = idle[:len(idle)-n]
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

	j.work(w)

	// Take back the offers no helper has claimed, then wait for the helpers
	// that did to finish their parts: spin a little, then block.
	for _, h := range offered[:want] {
		if h.mail.CompareAndSwap(j, nil) {
			j.refs.Add(-1)
			poolMu.Lock()
			idle = append(idle, h)
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
}

// maxOffer bounds the helpers of one call.
const maxOffer = 63

// liveHelpers reports how many helper goroutines exist (for tests).
func liveHelpers() int {
	poolMu.Lock()
	defer poolMu.Unlock()
	return helpers
}
