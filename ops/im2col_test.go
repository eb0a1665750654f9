package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// TestIm2colSame: at stride 1 with same-width output, the contiguous im2col
// and col2im give the bits of the row-by-row ones, NaNs, infinities and
// signed zeros in x included, for odd and even kernels and paddings that
// leave the output taller or shorter than the input.
func TestIm2colSame(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	val := func() float32 {
		switch r.IntN(10) {
		case 0:
			return float32(math.NaN())
		case 1:
			return float32(math.Inf(1 - 2*r.IntN(2)))
		case 2:
			return float32(math.Copysign(0, -1))
		}
		return float32(r.NormFloat64())
	}
	for _, c := range []struct{ c, h, w, kh, kw, pad int }{
		{1, 28, 28, 3, 3, 1}, {3, 5, 7, 3, 3, 1}, {2, 4, 4, 5, 5, 2}, {2, 6, 5, 1, 1, 0},
		{1, 3, 3, 3, 3, 1}, {2, 2, 9, 5, 5, 2}, {2, 7, 4, 3, 3, 1}, {1, 1, 1, 3, 3, 1},
	} {
		x := tensor.Zeros(tensor.Float32, 1, c.c, c.h, c.w)
		w := tensor.Zeros(tensor.Float32, 2, c.c, c.kh, c.kw)
		pl := planConv("test", x, w, nil, 1, c.pad)
		if pl.ow != pl.w {
			t.Fatalf("%+v: output width %d, not the input's", c, pl.ow)
		}
		xs := make([]float32, c.c*c.h*c.w)
		for i := range xs {
			xs[i] = val()
		}
		got, want := make([]float32, pl.k*pl.p), make([]float32, pl.k*pl.p)
		for i := range got {
			got[i], want[i] = 7, 7 // every element must be written
		}
		im2colSame(&pl, got, pl.p, xs)
		im2colRows(&pl, want, pl.p, xs)
		if !sameBits(got, want) {
			t.Errorf("%+v: im2colSame differs from im2colRows", c)
		}

		col := make([]float32, pl.k*pl.p)
		for i := range col {
			col[i] = float32(r.NormFloat64()) // GEMM results: finite, never -0
		}
		gotX, wantX := make([]float32, len(xs)), make([]float32, len(xs))
		col2imSame(&pl, gotX, slices.Clone(col), pl.p)
		col2imRows(&pl, wantX, col, pl.p)
		if !sameBits(gotX, wantX) {
			t.Errorf("%+v: col2imSame differs from col2imRows", c)
		}
	}
}

func sameBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			fmt.Printf("index %d: %v, %v\n", i, a[i], b[i])
			return false
		}
	}
	return len(a) == len(b)
}
