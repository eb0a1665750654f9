package gemm

import (
	"fmt"

	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// Threads is a thread budget: how many goroutines one call may use, the
// caller's included; 0 means runtime.GOMAXPROCS(0). Callers that run several
// calls at once (pipeline stages) share the machine by giving each a part.
// Results do not depend on it: any budget gives the same bits.
type Threads int

// Sgemm is Threads(0).Sgemm: every core the Go runtime has.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Threads(0).Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Sgemm computes C = alpha*op(A)*op(B) + beta*C in float32 on up to t
// goroutines, where op(A) is m×k and op(B) is k×n, all row-major with leading
// dimensions lda, ldb and ldc. When beta is 0, C is written without being read
// (NaNs in it do not survive); when alpha is 0, A and B are not read. It
// panics on negative sizes and on slices too short for their matrices.
func (t Threads) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Call{Threads: t}.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Post is work done on each block of C as soon as its sums are complete,
// while the block is in cache and on the goroutine that computed it: what a
// layer would otherwise do in a pass of its own over all of C, on one core or
// split differently from the product. The zero Post does nothing.
type Post struct {
	// Bias, if not nil, is added to every row of the product, before the
	// rest: C = Bias + alpha·op(A)·op(B), with the bits of a call whose C
	// held Bias in each row and whose beta was 1, which it saves a pass
	// over C (the call's beta must be 0). Only its first n values are read.
	Bias []float32
	// Add, if not nil, is added to C after the bias: C = (Bias + product) +
	// Add, a residual connection. It is m×n with leading dimension LDAdd and
	// may not overlap C.
	Add   []float32
	LDAdd int
	// RowSumsA, if not nil, gets each row of op(A) added into it, m values:
	// RowSumsA[i] += op(A)[i, p] for p in order, each sum rounded to
	// float32 (vec.Add of the rows of A when op(A) = Aᵀ), read while
	// the packing has the values in cache: a linear layer's bias gradient
	// beside its weight gradient. Not done on C, it does not make the Post
	// active.
	RowSumsA []float32
	// ReLU sets C to max(C, 0), as vec.Relu.
	ReLU bool
	// Mask, if not nil, keeps C where Mask > 0 and sets it to +0 elsewhere,
	// as vec.ReluBackward with C as dy: Mask is m×n, row-major with leading
	// dimension LDMask. It may not overlap C.
	Mask   []float32
	LDMask int
	// GELUGrad, if not nil, multiplies C by GELU's derivative at GELUGrad,
	// as vec.GELUBackward with C as dy: the input gradient of a GELU's
	// input. GELUGrad is m×n with leading dimension LDGELUGrad and may not
	// overlap C.
	GELUGrad   []float32
	LDGELUGrad int
	// GELU, if not nil, receives the exact GELU of C, as vec.GELU, done
	// last: C keeps its values, the activation's input. GELU is m×n with
	// leading dimension LDGELU and may not overlap C.
	GELU   []float32
	LDGELU int
}

// active reports whether p does anything.
func (p *Post) active() bool {
	return p.Bias != nil || p.Add != nil || p.ReLU || p.Mask != nil || p.GELUGrad != nil || p.GELU != nil
}

// apply does p on rows [i0, i0+rows) and columns [j0, j0+cols) of c, which
// hold the product's sums.
func (p *Post) apply(c []float32, ldc, i0, rows, j0, cols int) {
	for i := i0; i < i0+rows; i++ {
		row := c[i*ldc+j0 : i*ldc+j0+cols]
		if p.Bias != nil {
			vec.Add(row, p.Bias[j0:j0+cols]) // sums + bias: bias + sums, bit for bit
		}
		if p.Add != nil {
			vec.Add(row, p.Add[i*p.LDAdd+j0:i*p.LDAdd+j0+cols])
		}
		if p.ReLU {
			vec.Relu(row, row)
		}
		if p.Mask != nil {
			vec.ReluBackward(row, row, p.Mask[i*p.LDMask+j0:i*p.LDMask+j0+cols])
		}
		if p.GELUGrad != nil {
			vec.GELUBackward(row, row, p.GELUGrad[i*p.LDGELUGrad+j0:i*p.LDGELUGrad+j0+cols])
		}
		if p.GELU != nil {
			vec.GELU(p.GELU[i*p.LDGELU+j0:i*p.LDGELU+j0+cols], row)
		}
	}
}

// Call is a thread budget with a Post for the products called on it. Its
// methods are Threads' with the Post done on C after the product: the bits
// of the product and then the Post over C.
type Call struct {
	Threads Threads
	Post    Post
}

// Sgemm is Threads.Sgemm followed by cl.Post.
func (cl Call) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	cl.call(false, nil, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmChunked is Threads.SgemmChunked followed by cl.Post.
func (cl Call) SgemmChunked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	cl.call(true, nil, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// call checks and runs Sgemm or, if chunked, SgemmChunked; with a bf16 set
// their BF16 forms on it.
func (cl Call) call(chunked bool, bf16 *kernelSet, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	cl.checkPost(m, n, beta)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		if cl.Post.RowSumsA != nil {
			addRowSums(cl.Post.RowSumsA, a, lda, transA, 0, m, 0, k)
		}
		cl.Post.empty(m, n, beta, c, ldc)
		return
	}
	g := sgemmArgs{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, chunked: chunked, bf16: bf16, post: cl.Post}
	sgemm(&g, par.Budget(int(cl.Threads)))
}

// checkPost panics, as checkSgemm does, on a mask, addend or GELU operand too short
// for m×n, a bias too short for n, or a bias with a beta that is not 0.
func (cl Call) checkPost(m, n int, beta float32) {
	if cl.Post.Mask != nil {
		checkMatrix("mask", cl.Post.Mask, m, n, cl.Post.LDMask)
	}
	if cl.Post.Add != nil {
		checkMatrix("add", cl.Post.Add, m, n, cl.Post.LDAdd)
	}
	if cl.Post.GELUGrad != nil {
		checkMatrix("geluGrad", cl.Post.GELUGrad, m, n, cl.Post.LDGELUGrad)
	}
	if cl.Post.GELU != nil {
		checkMatrix("gelu", cl.Post.GELU, m, n, cl.Post.LDGELU)
	}
	if cl.Post.RowSumsA != nil && len(cl.Post.RowSumsA) < m {
		panic(fmt.Sprintf("gemm: row sums of %d values for %d rows", len(cl.Post.RowSumsA), m))
	}
	if cl.Post.Bias != nil {
		if len(cl.Post.Bias) < n {
			panic(fmt.Sprintf("gemm: bias of %d values for %d columns", len(cl.Post.Bias), n))
		}
		if beta != 0 {
			panic(fmt.Sprintf("gemm: bias with beta %v, not 0", beta))
		}
	}
}

// empty sets C, m×n, to beta·C, or to the bias, and does the rest of p: a
// call with no product to add (k or alpha 0).
func (p *Post) empty(m, n int, beta float32, c []float32, ldc int) {
	scale(m, n, beta, c, ldc)
	q := *p
	if q.Bias != nil {
		for i := range m {
			copy(c[i*ldc:i*ldc+n], q.Bias[:n])
		}
		q.Bias = nil
	}
	q.apply(c, ldc, 0, m, 0, n)
}

// KChunk is the length of the k chunks of SgemmChunked and DgemmChunked.
const KChunk = 32

// SgemmChunked is Threads(0).SgemmChunked.
func SgemmChunked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Threads(0).SgemmChunked(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmChunked is Sgemm on up to t goroutines with k cut into chunks of
// KChunk steps counted from the call's first: each chunk's product is summed
// from zero and added into C in chunk order, C = alpha*acc + beta*C for the
// first chunk and C = alpha*acc + C after. So one call over k = 256 gives the bits of calls
// over any split of k at multiples of KChunk, made in order with beta = 1
// after the first: a trainer's weight gradient does not depend on how the
// rows of a mini-batch are cut into micro-batches.
func (t Threads) SgemmChunked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Call{Threads: t}.SgemmChunked(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// DgemmChunked is Dgemm with k summed in chunks, as SgemmChunked: one Dgemm
// per chunk, beta for the first and 1 after.
func DgemmChunked(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		Dgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	for p := 0; p < k; p += KChunk {
		kk := min(KChunk, k-p)
		ap, bp := a[p:], b[p:] // op(A) = A: its columns p..; op(B) = Bᵀ: B's columns p..
		if transA {
			ap = a[p*lda:]
		}
		if !transB {
			bp = b[p*ldb:]
		}
		Dgemm(transA, transB, m, n, kk, alpha, ap, lda, bp, ldb, beta, c, ldc)
		beta = 1
	}
}

// Dgemm computes C = alpha*op(A)*op(B) + beta*C in float64, as Sgemm.
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	blas64.Implementation().Dgemm(trans(transA), trans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// scale sets the m×n block of c to beta*c, writing zeros when beta is 0 so that
// NaNs in an unset destination do not survive, as BLAS does.
func scale[T float32 | float64](m, n int, beta T, c []T, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

//go:generate go run genasm.go
