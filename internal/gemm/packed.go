package gemm

import (
	"fmt"

	"github.com/pipetrain/pipetrain/internal/par"
)

// PackedB is op(B) packed once into the micro-panels the kernels read, for
// many Sgemm calls that share it: a layer's weights between two updates, used
// by every micro-batch of a step. Without it each call packs B again, which
// for a few rows against a large weight costs as much as the product.
//
// The layout depends only on k, n and the kernel set: for each k block (as
// Sgemm cuts k), panels of nr columns over all of n, so that any part of a
// parallel call finds its columns' panels in place. SgemmPacked gives the
// same bits as Sgemm on the same matrices. The zero value is empty; Pack
// reuses its storage.
type PackedB struct {
	k, n  int
	width int // floats of one k step across all panels: n rounded up to the vector width
	ks    *kernelSet
	data  []float32
}

// Pack packs op(B), k×n, row-major with leading dimension ldb (B itself is
// n×k when transB), into p, reusing p's storage when it is large enough.
func (p *PackedB) Pack(transB bool, k, n int, b []float32, ldb int) {
	p.pack(kernels, transB, k, n, b, ldb)
}

// pack packs op(B) for kernel set ks.
func (p *PackedB) pack(ks *kernelSet, transB bool, k, n int, b []float32, ldb int) {
	br, bc := stored(transB, k, n)
	if k <= 0 || n <= 0 {
		panic(fmt.Sprintf("gemm: Pack: sizes k=%d n=%d must be positive", k, n))
	}
	checkMatrix("b", b, br, bc, ldb)
	kcb := ks.kBlock(k, false)
	p.k, p.n, p.ks = k, n, ks
	p.width = roundUp(n, ks.vec)
	size := p.width * roundUp(k, kcb)
	if cap(p.data) < size {
		p.data = make([]float32, size)
	}
	p.data = p.data[:size]
	for pc := 0; pc < k; pc += kcb {
		ks.packB(p.data[pc*p.width:], b, ldb, transB, 0, n, pc, min(kcb, k-pc))
	}
}

// nextBlock returns the packed panels Sgemm sweeps after the block of k steps
// [pc, pc+kcb) and columns [jc, jc+ncb) of a part over columns [j0, j1): the
// next column block of the same k block, or the first of the next k block; or
// nil after the last.
func (p *PackedB) nextBlock(pc, kcb, jc, ncb, j0, j1 int) []float32 {
	vec := p.ks.vec
	if jc += ncb; jc < j1 {
		kc := min(kcb, p.k-pc)
		return p.data[pc*p.width+jc*kc:][:roundUp(min(ncb, j1-jc), vec)*kc]
	}
	if pc += kcb; pc < p.k {
		kc := min(kcb, p.k-pc)
		return p.data[pc*p.width+j0*kc:][:roundUp(min(ncb, j1-j0), vec)*kc]
	}
	return nil
}

// K and N return the shape of the packed op(B); 0 before the first Pack.
func (p *PackedB) K() int { return p.k }
func (p *PackedB) N() int { return p.n }

// SgemmPacked is Threads(0).SgemmPacked.
func SgemmPacked(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	Threads(0).SgemmPacked(transA, m, alpha, a, lda, pb, beta, c, ldc)
}

// SgemmPacked computes C = alpha*op(A)*B + beta*C as Sgemm does, where B is
// op(B) as packed in pb: op(A) is m×pb.K(), C is m×pb.N(). It gives the same
// bits as Sgemm with the matrix pb was packed from, for any thread budget.
func (t Threads) SgemmPacked(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	Call{Threads: t}.SgemmPacked(transA, m, alpha, a, lda, pb, beta, c, ldc)
}

// SgemmPacked is Threads.SgemmPacked followed by cl.Post.
func (cl Call) SgemmPacked(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	pb.check("SgemmPacked", false)
	cl.packed(transA, m, alpha, a, lda, pb, beta, c, ldc)
}

// check panics unless pb was packed, by PackBF16 if bf16 or else by Pack.
func (pb *PackedB) check(fn string, bf16 bool) {
	switch {
	case pb.ks == nil:
		panic("gemm: " + fn + ": pb was never packed")
	case pb.ks.pairs != bf16 && bf16:
		panic("gemm: " + fn + ": pb was packed by Pack, not PackBF16")
	case pb.ks.pairs != bf16:
		panic("gemm: " + fn + ": pb was packed by PackBF16, not Pack")
	}
}

// packed runs SgemmPacked or SgemmPackedBF16, as pb's kernel set does.
func (cl Call) packed(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	n, k := pb.n, pb.k
	if m < 0 {
		panic(fmt.Sprintf("gemm: negative size m=%d", m))
	}
	ar, ac := stored(transA, m, k)
	checkMatrix("a", a, ar, ac, lda)
	checkMatrix("c", c, m, n, ldc)
	cl.checkPost(m, n, beta)
	if m == 0 {
		return
	}
	if alpha == 0 {
		if cl.Post.RowSumsA != nil {
			addRowSums(cl.Post.RowSumsA, a, lda, transA, 0, m, 0, k)
		}
		cl.Post.empty(m, n, beta, c, ldc)
		return
	}
	g := sgemmArgs{transA: transA, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a: a, lda: lda, ldb: n, c: c, ldc: ldc, bpre: pb, post: cl.Post}
	sgemm(&g, par.Budget(int(cl.Threads)))
}
