package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSgemmPackedSameBits: a product with op(B) packed in advance has the bits
// of Sgemm on the same matrices, for every kernel set, both layouts of B,
// edge sizes, k over several blocks, and any thread budget; one packed B
// serves many products.
func TestSgemmPackedSameBits(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		ks := kernels
		rng := rand.New(rand.NewPCG(7, 7))
		sizes := []int{1, ks.mr + 1, 2*ks.nr() + 3}
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, m := range sizes {
					for _, n := range append(sizes, 384+ks.vec+1) {
						for _, k := range []int{1, 7, ks.kc + 5} {
							o := newOperands(rng, tA, tB, m, n, k, 3)
							var pb PackedB
							pb.Pack(tB, k, n, o.b, o.ldb)
							for _, beta := range []float32{0, 1, 0.5} {
								for _, th := range []int{1, 2, 3} {
									want := o.run(1.5, beta)
									got := append([]float32(nil), o.c...)
									if beta == 0 {
										for i := range got {
											got[i] = float32(math.NaN())
										}
									}
									Threads(th).SgemmPacked(tA, m, 1.5, o.a, o.lda, &pb, beta, got, o.ldc)
									if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
										t.Fatalf("tA=%v tB=%v m=%d n=%d k=%d beta=%v threads=%d: SgemmPacked differs from Sgemm", tA, tB, m, n, k, beta, th)
									}
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestPackReuse: packing another matrix into the same PackedB replaces it.
func TestPackReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var pb PackedB
	for _, kn := range [][2]int{{64, 64}, {8, 16}, {100, 30}} {
		o := newOperands(rng, false, true, 5, kn[1], kn[0], 0)
		pb.Pack(true, kn[0], kn[1], o.b, o.ldb)
		got := make([]float32, len(o.c))
		SgemmPacked(false, 5, 1, o.a, o.lda, &pb, 0, got, o.ldc)
		o.check(t, fmt.Sprintf("packed k=%d n=%d", kn[0], kn[1]), 1, 0, got)
	}
}

func TestSgemmPackedPanics(t *testing.T) {
	for name, f := range map[string]func(pb *PackedB){
		"never packed": func(pb *PackedB) { SgemmPacked(false, 1, 1, make([]float32, 4), 4, pb, 0, make([]float32, 4), 4) },
		"short b":      func(pb *PackedB) { pb.Pack(false, 4, 4, make([]float32, 15), 4) },
		"short a": func(pb *PackedB) {
			pb.Pack(false, 4, 4, make([]float32, 16), 4)
			SgemmPacked(false, 2, 1, make([]float32, 7), 4, pb, 0, make([]float32, 8), 4)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f(new(PackedB))
		}()
	}
}
