package gemm

import "github.com/pipetrain/pipetrain/internal/par"

// Parallel calls split C into parts (blocks of rows or of columns, never of
// k) and run them with par.Do on the calling goroutine and pooled helpers.
// Which goroutine computes a part never changes its bits.

// job is one parallel Sgemm call, as par.Work.
type job struct {
	ks     *kernelSet
	g      sgemmArgs
	parts  int
	alongN bool
}

// Part runs block q of C: a block of columns in whole vectors, so that the
// threads' shares are even (in whole nr-wide panels when B was packed in
// advance, as its panels are), or a block of rows in whole A micro-panels.
func (j *job) Part(q int) {
	g, ks := &j.g, j.ks
	i0, i1, j0, j1 := 0, g.m, 0, g.n
	if j.alongN {
		unit := ks.vec
		if g.bpre != nil {
			unit = ks.nr()
		}
		j0, j1 = par.Bound(q, j.parts, g.n, unit), par.Bound(q+1, j.parts, g.n, unit)
	} else {
		i0, i1 = par.Bound(q, j.parts, g.m, ks.mr), par.Bound(q+1, j.parts, g.m, ks.mr)
	}
	w := getWorkspace()
	w.run(ks, g, i0, i1, j0, j1)
	putWorkspace(w)
}

// jobs are kept for reuse: a steady call allocates nothing.
var jobs par.FreeList[job]

// runParallel runs the call in parts over the caller and up to threads-1
// helpers.
func runParallel(ks *kernelSet, g *sgemmArgs, parts int, alongN bool, threads int) {
	j := jobs.Get()
	j.ks, j.g, j.parts, j.alongN = ks, *g, parts, alongN
	par.Do(threads, parts, j)
	j.g = sgemmArgs{} // drop the caller's matrices before pooling
	jobs.Put(j)
}
