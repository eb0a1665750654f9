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
							e.run(Call{Threads: th}, o, 0.5, want)
							for i := range o.m {
								row := want[i*o.ldc : i*o.ldc+o.n]
								if post.ReLU {
									vec.Relu(row, row)
								}
								if post.Mask != nil {
									vec.ReluBackward(row, row, mask[i*o.ldc:i*o.ldc+o.n])
								}
							}
							e.run(Call{Threads: th, Post: post}, o, 0.5, got)
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
// the beta given (C's padding is NaN and must stay so: the comparisons
// check it).
var postEntries = []struct {
	name   string
	packed bool
	run    func(cl Call, o *operands, beta float32, c []float32)
}{
	{"Sgemm", false, func(cl Call, o *operands, beta float32, c []float32) {
		cl.Sgemm(o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
	}},
	{"SgemmChunked", false, func(cl Call, o *operands, beta float32, c []float32) {
		cl.SgemmChunked(o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
	}},
	{"SgemmBF16", false, func(cl Call, o *operands, beta float32, c []float32) {
		cl.SgemmBF16(Pairs, o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
	}},
	{"SgemmBF16Chunked", false, func(cl Call, o *operands, beta float32, c []float32) {
		cl.SgemmBF16Chunked(Pairs, o.tA, o.tB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
	}},
	{"SgemmPacked", true, func(cl Call, o *operands, beta float32, c []float32) {
		var pb PackedB
		pb.Pack(false, o.k, o.n, o.b, o.ldb)
		cl.SgemmPacked(o.tA, o.m, 1, o.a, o.lda, &pb, beta, c, o.ldc)
	}},
	{"SgemmPackedBF16", true, func(cl Call, o *operands, beta float32, c []float32) {
		var pb PackedB
		pb.PackBF16(Pairs, false, o.k, o.n, o.b, o.ldb)
		cl.SgemmPackedBF16(o.tA, o.m, 1, o.a, o.lda, &pb, beta, c, o.ldc)
	}},
}

// TestPostBiasSameBits holds a product with Post.Bias (beta 0) to the bits
// of the product added to C holding the bias in each row (beta 1), then the
// rest of the post (a residual added, a ReLU), for every entry point, kernel set, layout and thread
// count, over shapes of one k block, of several, and of k = 0; a bias of
// negative zeros among them.
func TestPostBiasSameBits(t *testing.T) {
	shapes := [][3]int{{37, 101, 70}, {20, 60, 600}, {8, 48, 1}, {3, 5, 0}, {260, 64, 64}}
	eachOperands(t, 23, shapes, 2, func(t *testing.T, rng *rand.Rand, o *operands) {
		bias, add := normals(rng, o.n+3), normals(rng, o.m*o.ldc)
		bias[0] = float32(math.Copysign(0, -1))
		for _, pr := range [][2]bool{{false, false}, {true, true}} {
			relu, residual := pr[0], pr[1]
			for _, th := range []Threads{1, 2, 3} {
				for _, e := range postEntries {
					name := fmt.Sprintf("%s %dx%dx%d %s relu=%v add=%v threads=%d", layoutName(o.tA, o.tB), o.m, o.n, o.k, e.name, relu, residual, th)
					if e.packed && (o.tB || o.k == 0) {
						continue
					}
					want, got := append([]float32(nil), o.c...), append([]float32(nil), o.c...)
					for i := range o.m {
						copy(want[i*o.ldc:i*o.ldc+o.n], bias)
					}
					e.run(Call{Threads: th}, o, 1, want)
					for i := range o.m {
						row := want[i*o.ldc : i*o.ldc+o.n]
						if residual {
							vec.Add(row, add[i*o.ldc:i*o.ldc+o.n])
						}
						if relu {
							vec.Relu(row, row)
						}
					}
					post := Post{Bias: bias, ReLU: relu}
					if residual {
						post.Add, post.LDAdd = add, o.ldc
					}
					e.run(Call{Threads: th, Post: post}, o, 0, got)
					sameSlices(t, name+": C", got, want)
				}
			}
		}
	})
}

// TestPostGELUSameBits holds a product with Post.GELUGrad to the bits of
// the product then vec.GELUBackward over C, and one with Post.GELU (and a
// bias) to the bits of the product, then the bias, then vec.GELU of C into
// another matrix, C unchanged: every entry point, kernel set, layout and
// thread count.
func TestPostGELUSameBits(t *testing.T) {
	shapes := [][3]int{{37, 101, 70}, {20, 60, 600}, {3, 5, 0}}
	eachOperands(t, 25, shapes, 1, func(t *testing.T, rng *rand.Rand, o *operands) {
		u, bias := normals(rng, o.m*o.ldc), normals(rng, o.n)
		for i := range u {
			u[i] *= 2
		}
		for _, th := range []Threads{1, 2, 3} {
			for _, e := range postEntries {
				name := fmt.Sprintf("%s %dx%dx%d %s threads=%d", layoutName(o.tA, o.tB), o.m, o.n, o.k, e.name, th)
				if e.packed && (o.tB || o.k == 0) {
					continue
				}
				// the input gradient of a GELU
				want, got := append([]float32(nil), o.c...), append([]float32(nil), o.c...)
				e.run(Call{Threads: th}, o, 0.5, want)
				for i := range o.m {
					row := want[i*o.ldc : i*o.ldc+o.n]
					vec.GELUBackward(row, row, u[i*o.ldc:i*o.ldc+o.n])
				}
				e.run(Call{Threads: th, Post: Post{GELUGrad: u, LDGELUGrad: o.ldc}}, o, 0.5, got)
				sameSlices(t, name+" GELUGrad: C", got, want)
				// a GELU's input and output
				want, got = append([]float32(nil), o.c...), append([]float32(nil), o.c...)
				e.run(Call{Threads: th, Post: Post{Bias: bias}}, o, 0, want)
				wantOut, gotOut := make([]float32, len(want)), make([]float32, len(want))
				for i := range o.m {
					vec.GELU(wantOut[i*o.ldc:i*o.ldc+o.n], want[i*o.ldc:i*o.ldc+o.n])
				}
				e.run(Call{Threads: th, Post: Post{Bias: bias, GELU: gotOut, LDGELU: o.ldc}}, o, 0, got)
				sameSlices(t, name+" GELU: C", got, want)
				sameSlices(t, name+" GELU: out", gotOut, wantOut)
			}
		}
	})
}

// sameSlices fails t unless got and want hold the same bits (any NaN for a
// NaN).
func sameSlices(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for x := range want {
		if math.Float32bits(got[x]) != math.Float32bits(want[x]) && !(math.IsNaN(float64(got[x])) && math.IsNaN(float64(want[x]))) {
			t.Fatalf("%s[%d] = %v, the product then the post gave %v", name, x, got[x], want[x])
		}
	}
}

// TestPostRowSums holds Post.RowSumsA to the rows of op(A) added in order
// of k, each addition rounded (vec.Add of A's rows for op(A) = Aᵀ), C to the
// product's bits without it, for every entry point, kernel set, layout and
// thread count, over one k block, several, and k = 0.
func TestPostRowSums(t *testing.T) {
	shapes := [][3]int{{37, 101, 70}, {16, 1000, 70}, {3, 5, 0}, {260, 64, 64}, {20, 60, 600}}
	eachOperands(t, 27, shapes, 2, func(t *testing.T, rng *rand.Rand, o *operands) {
		sums0 := normals(rng, o.m+2)
		wantSums := append([]float32(nil), sums0...)
		if o.tA {
			for p := range o.k {
				vec.Add(wantSums[:o.m], o.a[p*o.lda:p*o.lda+o.m])
			}
		} else {
			for i := range o.m {
				for _, v := range o.a[i*o.lda : i*o.lda+o.k] {
					wantSums[i] += v
				}
			}
		}
		for _, th := range []Threads{1, 2, 3} {
			for _, e := range postEntries {
				name := fmt.Sprintf("%s %dx%dx%d %s threads=%d", layoutName(o.tA, o.tB), o.m, o.n, o.k, e.name, th)
				if e.packed && (o.tB || o.k == 0) {
					continue
				}
				want, got := append([]float32(nil), o.c...), append([]float32(nil), o.c...)
				e.run(Call{Threads: th}, o, 0.5, want)
				sums := append([]float32(nil), sums0...)
				e.run(Call{Threads: th, Post: Post{RowSumsA: sums, ReLU: true}}, o, 0.5, got)
				for i := range o.m {
					row := want[i*o.ldc : i*o.ldc+o.n]
					vec.Relu(row, row)
				}
				sameSlices(t, name+" C", got, want)
				sameSlices(t, name+" row sums", sums, wantSums)
			}
		}
	})
}

// TestPostBiasErrors: a bias shorter than C's rows, or with a beta that is
// not 0, panics as a short C does.
func TestPostBiasErrors(t *testing.T) {
	a, b, c := make([]float32, 4), make([]float32, 4), make([]float32, 4)
	for _, tc := range []struct {
		name string
		bias []float32
		beta float32
		want string
	}{
		{"short", make([]float32, 1), 0, "gemm: bias of 1 values for 2 columns"},
		{"beta", make([]float32, 2), 1, "gemm: bias with beta 1, not 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tc.want {
					t.Fatalf("panic %v, want %q", r, tc.want)
				}
			}()
			Call{Post: Post{Bias: tc.bias}}.Sgemm(false, false, 2, 2, 2, 1, a, 2, b, 2, tc.beta, c, 2)
		})
	}
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

// eachOperands runs f on operands of every shape (the first short of them
// under -short) in every layout, for each kernel set, drawn from seed.
func eachOperands(t *testing.T, seed uint64, shapes [][3]int, short int, f func(t *testing.T, rng *rand.Rand, o *operands)) {
	withKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, seed+1))
		if testing.Short() {
			shapes = shapes[:short]
		}
		for _, d := range shapes {
			for _, l := range layouts {
				f(t, rng, newOperands(rng, l[0], l[1], d[0], d[1], d[2], 3))
			}
		}
	})
}

// normals returns n draws of N(0, 1) from rng.
func normals(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}
