package gemm

import (
	"runtime"
	"sync/atomic"

	"github.com/pipetrain/pipetrain/internal/par"
)

// Parallel calls split C into parts (blocks of rows or of columns, never of
// k) and run them with par.Do on the calling goroutine and pooled helpers.
// Which goroutine computes a part never changes its bits.

// job is one parallel Sgemm call, as par.Work.
type job struct {
	ks     *kernelSet
	g      sgemmArgs
	parts  int
	alongN bool
	apre   []float32 // all of op(A) packed, shared by column parts; or nil
	// Column parts first pack apre together: parts 0..packParts-1 each pack
	// a share of its panels, and a column part starts once all are done.
	packParts int
	packed    atomic.Int64 // pack parts finished
}

// Prefix makes the pack parts, which every column part waits for, the first
// claimed (par.Prefixed).
func (j *job) Prefix() int { return j.packParts }

// Part runs part q: a pack part, or block q-packParts of C.
func (j *job) Part(q int) {
	if q < j.packParts {
		j.pack(q)
		j.packed.Add(1)
		return
	}
	q -= j.packParts
	if j.packParts > 0 {
		j.waitPacked()
	}
	g, ks := &j.g, j.ks
	i0, i1, j0, j1 := 0, g.m, 0, g.n
	if j.alongN {
		j0, j1 = par.Bound(q, j.parts, g.n, ks.nr()), par.Bound(q+1, j.parts, g.n, ks.nr())
	} else {
		i0, i1 = par.Bound(q, j.parts, g.m, ks.mr), par.Bound(q+1, j.parts, g.m, ks.mr)
	}
	w := getWorkspace()
	w.run(ks, g, i0, i1, j0, j1, j.apre)
	putWorkspace(w)
}

// pack runs pack part q of the job: its share of the micro-panels of op(A),
// each k block after the other, in the layout run reads when given apre
// (block pc at apre[pc*mPad:], its panel of rows r at r*depth(kc) within it).
func (j *job) pack(q int) {
	g, ks := &j.g, j.ks
	kcb := ks.kBlock(g.k, g.chunked)
	mPad := roundUp(g.m, ks.mr)
	panels := mPad / ks.mr
	units := panels * ((g.k + kcb - 1) / kcb)
	for u := par.Bound(q, j.packParts, units, 1); u < par.Bound(q+1, j.packParts, units, 1); u++ {
		pc, r := (u/panels)*kcb, (u%panels)*ks.mr
		kc := min(kcb, g.k-pc)
		ks.packA(j.apre[pc*mPad+r*ks.depth(kc):], g.a, g.lda, g.transA, r, min(ks.mr, g.m-r), pc, kc)
	}
}

// waitPacked spins until every pack part is done: they were all claimed
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

// sharedA is a buffer for all of op(A) packed once for a call's column
// parts. Such buffers have a free list of their own, apart from the parts'
// workspaces: only as many exist as parallel calls have run at once, each
// grows once to the largest size, and a part's workspace never carries one.
type sharedA struct{ buf []float32 }

var shareds par.FreeList[sharedA]

// jobs are kept for reuse: a steady call allocates nothing.
var jobs par.FreeList[job]

// runParallel runs the call in parts over the caller and up to threads-1
// helpers.
func runParallel(ks *kernelSet, g *sgemmArgs, parts int, alongN bool, threads int) {
	j := jobs.Get()
	j.ks, j.g, j.parts, j.alongN = ks, *g, parts, alongN
	j.packed.Store(0)
	j.packParts = 0
	j.apre = nil
	var sa *sharedA
	if alongN {
		// Column parts all need all of op(A): the threads pack it together
		// first, so that it is packed once and no part packs alone.
		kcb := ks.kBlock(g.k, g.chunked)
		if size := roundUp(g.m, ks.mr) * roundUp(g.k, kcb); size <= sharedAMax {
			sa = shareds.Get()
			sa.buf = grow(sa.buf, size, &largestShared)
			j.apre = sa.buf
			j.packParts = threads
		}
	}
	par.Do(threads, j.packParts+parts, j)
	if sa != nil {
		shareds.Put(sa)
	}
	j.g, j.apre = sgemmArgs{}, nil // drop the caller's matrices before pooling
	jobs.Put(j)
}
