// Package gemm is the one place general matrix multiplication happens, so the
// kernel behind it can be swapped without touching its callers.
//
// Matrices are row-major with leading dimensions; C = alpha*op(A)*op(B) + beta*C
// where op transposes in place of a copy. It currently runs on gonum's BLAS.
package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// Sgemm computes C = alpha*op(A)*op(B) + beta*C in float32, where op(A) is m×k and
// op(B) is k×n. Degenerate sizes (0 rows, columns or depth) are handled here.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	if k <= sgemmKBlock {
		blas32.Implementation().Sgemm(trans(transA), trans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	// One running float32 sum per element loses about 2e-3 relative by K = 4M:
	// sum blocks of K into scratch and add the block sums into C.
	scale(m, n, beta, c, ldc)
	tmp := make([]float32, m*n)
	for k0 := 0; k0 < k; k0 += sgemmKBlock {
		kb := min(sgemmKBlock, k-k0)
		ao, bo := k0, k0*ldb
		if transA {
			ao = k0 * lda
		}
		if transB {
			bo = k0
		}
		blas32.Implementation().Sgemm(trans(transA), trans(transB), m, n, kb, alpha, a[ao:], lda, b[bo:], ldb, 0, tmp, n)
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for j, v := range tmp[i*n : (i+1)*n] {
				row[j] += v
			}
		}
	}
}

// sgemmKBlock bounds how many products one float32 running sum takes.
const sgemmKBlock = 16384

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
