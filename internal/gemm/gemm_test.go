package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naive is the reference C = alpha*op(A)*op(B) + beta*C in float64.
func naive(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				var av, bv float64
				if tA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
		}
	}
}

func TestGemmLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {4, 6, 0}, {0, 3, 2}} {
		m, n, k := d[0], d[1], d[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				a := make([]float64, m*k)
				b := make([]float64, k*n)
				c := make([]float64, m*n)
				for _, s := range [][]float64{a, b, c} {
					for i := range s {
						s[i] = rng.Float64()*2 - 1
					}
				}
				want := append([]float64(nil), c...)
				naive(tA, tB, m, n, k, 1.5, a, max(lda, 1), b, max(ldb, 1), 0.5, want, max(n, 1))
				got := append([]float64(nil), c...)
				Dgemm(tA, tB, m, n, k, 1.5, a, max(lda, 1), b, max(ldb, 1), 0.5, got, max(n, 1))
				a32, b32, c32 := to32(a), to32(b), to32(c)
				Sgemm(tA, tB, m, n, k, 1.5, a32, max(lda, 1), b32, max(ldb, 1), 0.5, c32, max(n, 1))
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
						t.Fatalf("Dgemm(%v, %v, m=%d n=%d k=%d)[%d] = %v, want %v", tA, tB, m, n, k, i, got[i], want[i])
					}
					if math.Abs(float64(c32[i])-want[i]) > 1e-4*(1+math.Abs(want[i])) {
						t.Fatalf("Sgemm(%v, %v, m=%d n=%d k=%d)[%d] = %v, want %v", tA, tB, m, n, k, i, c32[i], want[i])
					}
				}
			}
		}
	}
}

func to32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// TestSgemmLongK checks that a long inner axis keeps float32 close to float64.
func TestSgemmLongK(t *testing.T) {
	const k = 1 << 20
	rng := rand.New(rand.NewPCG(5, 6))
	a := make([]float32, k)
	b := make([]float32, k)
	want := 0.0
	for i := range a {
		a[i], b[i] = rng.Float32(), rng.Float32()
		want += float64(a[i]) * float64(b[i])
	}
	c := []float32{7}
	Sgemm(false, false, 1, 1, k, 1, a, k, b, 1, 1, c, 1)
	want += 7
	if rel := math.Abs(float64(c[0])-want) / want; rel > 2e-5 {
		t.Fatalf("Sgemm over K=%d: got %v, want %v (relative error %.2g)", k, c[0], want, rel)
	}
}
