package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/internal/vec"
)

// TestPostSameBits holds every product of a Call to the bits of the same
// product on Threads followed by its Post over all of C: ReLU, a mask, or
// both, for each kernel set, layout, thread count and entry point, over
// shapes with edge tiles, several k blocks and padded leading dimensions,
// with zeros, NaNs and negative zeros in the products and the mask.
func TestPostSameBits(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		shapes := [][3]int{{37, 101, 70}, {64, 200, 600}, {8, 48, 1}, {130, 20, 300}, {1, 1, 0}}
		if testing.Short() {
			shapes = shapes[:1]
		}
		for _, d := range shapes {
			for _, l := range layouts {
				o := newOperands(rng, l[0], l[1], d[0], d[1], d[2], 3)
				if len(o.a) > 1 {
					o.a[0], o.a[len(o.a)/2] = float32(math.NaN()), 0
				}
				mask := make([]float32, o.m*o.ldc)
				for i := range mask {
					mask[i] = []float32{1, -1, 0, float32(math.Copysign(0, -1)), float32(math.NaN()), 1e-40}[rng.IntN(6)]
				}
				posts := []Post{{ReLU: true}, {Mask: mask, LDMask: o.ldc}, {ReLU: true, Mask: mask, LDMask: o.ldc}}
				for _, post := range posts {
					for _, th := range []Threads{1, 2, 3} {
						for _, e := range postEntries {
							name := fmt.Sprintf("%s %v %s relu=%v mask=%v threads=%d", layoutName(l[0], l[1]), d, e.name, post.ReLU, post.Mask != nil, th)
							if e.packed && (o.tB || o.k == 0) {
								continue // op(B) is packed: one layout of B is enough, and k = 0 has none
							}
							want, got := append([]float32(nil), o.c...), append([]float32(nil), o.c...)
							e.run(Call{Threads: th}, o, want)
							for i := range o.m {
								row := want[i*o.ldc : i*o.ldc+o.n]
								if post.ReLU {
									vec.Relu(row, row)
								}
								if post.Mask != nil {
									vec.ReluBackward(row, row, mask[i*o.ldc:i*o.ldc+o.n])
								}
							}
							e.run(Call{Threads: th, Post: post}, o, got)
							for x := range want {
								if math.Float32bits(got[x]) != math.Float32bits(want[x]) && !(math.IsNaN(float64(got[x])) && math.IsNaN(float64(want[x]))) {
									t.Fatalf("%s: C[%d] = %v, the product then the post gave %v", name, x, got[x], want[x])
								}
							}
						}
					}
				}
			}
		}
	})
}

// postEntries are the Call methods, each run on o with C = c, alpha 1 and
// beta 0.5 (C's padding is NaN and must stay so: the comparison checks it).
var postEntries = []struct {
	name   string
	packed bool
	run    func(cl Call, o *operands, c []float32)
}{
	{"Sgemm", false, func(cl Call, o *operands, c []float32) {
		cl.Sgemm(o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, c, o.ldc)
	}},
	{"SgemmChunked", false, func(cl Call, o *operands, c []float32) {
		cl.SgemmChunked(o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, c, o.ldc)
	}},
	{"SgemmBF16", false, func(cl Call, o *operands, c []float32) {
		cl.SgemmBF16(Pairs, o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, c, o.ldc)
	}},
	{"SgemmBF16Chunked", false, func(cl Call, o *operands, c []float32) {
		cl.SgemmBF16Chunked(Pairs, o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, c, o.ldc)
	}},
	{"SgemmPacked", true, func(cl Call, o *operands, c []float32) {
		var pb PackedB
		pb.Pack(false, o.k, o.n, o.b, o.ldb)
		cl.SgemmPacked(o.tA, o.m, 1, o.a, o.lda, &pb, 0.5, c, o.ldc)
	}},
	{"SgemmPackedBF16", true, func(cl Call, o *operands, c []float32) {
		var pb PackedB
		pb.PackBF16(Pairs, false, o.k, o.n, o.b, o.ldb)
		cl.SgemmPackedBF16(o.tA, o.m, 1, o.a, o.lda, &pb, 0.5, c, o.ldc)
	}},
}

// TestPostMaskTooShort: a mask that cannot hold C's shape panics, as a
// short C does.
func TestPostMaskTooShort(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("no panic for a mask too short for C")
		}
	}()
	a, b, c := make([]float32, 4), make([]float32, 4), make([]float32, 4)
	Call{Post: Post{Mask: make([]float32, 3), LDMask: 2}}.Sgemm(false, false, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2)
}
