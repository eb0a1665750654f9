package nn_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

func TestSplitRows(t *testing.T) {
	for _, c := range []struct {
		n, m int
		want []nn.Span
	}{
		{10, 3, []nn.Span{{0, 4}, {4, 7}, {7, 10}}},
		{2, 4, []nn.Span{{0, 1}, {1, 2}}},
		{0, 1, []nn.Span{}},
		{0, 3, []nn.Span{}},
		{1, 1, []nn.Span{{0, 1}}},
		{5, 1, []nn.Span{{0, 5}}},
		{6, 3, []nn.Span{{0, 2}, {2, 4}, {4, 6}}},
		{7, 7, []nn.Span{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}}},
		{11, 4, []nn.Span{{0, 3}, {3, 6}, {6, 9}, {9, 11}}},
		{32, 5, []nn.Span{{0, 7}, {7, 14}, {14, 20}, {20, 26}, {26, 32}}},
	} {
		got := nn.SplitRows(c.n, c.m)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("SplitRows(%d, %d): got %v, want %v", c.n, c.m, got, c.want)
		}
	}
	// Invariants over a range: contiguous, covering, sizes differ by at most
	// one, larger first.
	for n := range 40 {
		for m := 1; m <= 12; m++ {
			spans := nn.SplitRows(n, m)
			if len(spans) != min(n, m) {
				t.Errorf("SplitRows(%d, %d): %d spans, want %d", n, m, len(spans), min(n, m))
			}
			lo := 0
			for i, s := range spans {
				size := s.Hi - s.Lo
				if s.Lo != lo || size < 1 || size < n/m || size > n/m+1 || (i > 0 && size > spans[i-1].Hi-spans[i-1].Lo) {
					t.Errorf("SplitRows(%d, %d) = %v: span %d is wrong", n, m, spans, i)
				}
				lo = s.Hi
			}
			if lo != n {
				t.Errorf("SplitRows(%d, %d) = %v covers %d rows, want %d", n, m, spans, lo, n)
			}
		}
	}
	for _, m := range []int{0, -1} {
		if _, ok := panicText(func() { nn.SplitRows(4, m) }); !ok {
			t.Errorf("SplitRows(4, %d) did not panic", m)
		}
	}
}

func TestSliceRows(t *testing.T) {
	data := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	for _, c := range []struct {
		shape  []int
		lo, hi int
		want   []float64
		wantSh []int
	}{
		{[]int{4, 3}, 1, 3, []float64{3, 4, 5, 6, 7, 8}, []int{2, 3}},
		{[]int{4, 3}, 0, 4, data, []int{4, 3}},
		{[]int{4, 3}, 3, 4, []float64{9, 10, 11}, []int{1, 3}},
		{[]int{4, 3}, 2, 2, []float64{}, []int{0, 3}},
		{[]int{12}, 5, 8, []float64{5, 6, 7}, []int{3}},
		{[]int{3, 2, 2}, 1, 2, []float64{4, 5, 6, 7}, []int{1, 2, 2}},
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			x := tensor.FromFloat64s(dt, data, c.shape...)
			got := nn.SliceRows(x, c.lo, c.hi)
			if got.DType() != dt || !tensor.EqualShapes(got.Shape(), c.wantSh) || fmt.Sprint(got.Float64s()) != fmt.Sprint(c.want) {
				t.Errorf("SliceRows(%v %v, %d, %d): got %v, want %v%v %v", dt, c.shape, c.lo, c.hi, got, dt, c.wantSh, c.want)
			}
			if got.Size() > 0 {
				got.Set(-1, make([]int, len(c.wantSh))...)
				if x.Float64s()[c.lo*len(data)/c.shape[0]] == -1 {
					t.Errorf("SliceRows(%v %v, %d, %d) shares storage with its input", dt, c.shape, c.lo, c.hi)
				}
			}
		}
	}
	x := tensor.Zeros(tensor.Float64, 4, 3)
	for _, c := range []struct{ lo, hi int }{{-1, 2}, {0, 5}, {3, 2}} {
		if _, ok := panicText(func() { nn.SliceRows(x, c.lo, c.hi) }); !ok {
			t.Errorf("SliceRows(shape [4 3], %d, %d) did not panic", c.lo, c.hi)
		}
	}
	if _, ok := panicText(func() { nn.SliceRows(tensor.Zeros(tensor.Float64), 0, 0) }); !ok {
		t.Errorf("SliceRows of a 0-D tensor did not panic")
	}
}
