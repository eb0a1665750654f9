package nn_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

func TestSplitRows(t *testing.T) {
	if nn.ChunkRows != 32 {
		t.Fatalf("ChunkRows = %d: the table assumes 32", nn.ChunkRows)
	}
	for _, c := range []struct {
		n, m int
		want []nn.Span
	}{
		{256, 1, []nn.Span{{0, 256}}},
		{256, 2, []nn.Span{{0, 128}, {128, 256}}},
		{256, 3, []nn.Span{{0, 96}, {96, 192}, {192, 256}}},
		{256, 8, []nn.Span{{0, 32}, {32, 64}, {64, 96}, {96, 128}, {128, 160}, {160, 192}, {192, 224}, {224, 256}}},
		{256, 9, []nn.Span{{0, 32}, {32, 64}, {64, 96}, {96, 128}, {128, 160}, {160, 192}, {192, 224}, {224, 256}}},
		{100, 2, []nn.Span{{0, 64}, {64, 100}}},
		{100, 3, []nn.Span{{0, 64}, {64, 96}, {96, 100}}},
		{97, 4, []nn.Span{{0, 32}, {32, 64}, {64, 96}, {96, 97}}},
		{64, 3, []nn.Span{{0, 32}, {32, 64}}},
		{33, 2, []nn.Span{{0, 32}, {32, 33}}},
		{32, 4, []nn.Span{{0, 32}}},
		{10, 3, []nn.Span{{0, 10}}},
		{1, 1, []nn.Span{{0, 1}}},
		{0, 1, []nn.Span{}},
		{0, 3, []nn.Span{}},
	} {
		got := nn.SplitRows(c.n, c.m)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("SplitRows(%d, %d): got %v, want %v", c.n, c.m, got, c.want)
		}
	}
	// Invariants over a range: contiguous, covering, boundaries at multiples
	// of ChunkRows, sizes in chunks differing by at most one, larger first.
	for n := range 300 {
		for m := 1; m <= 12; m++ {
			spans := nn.SplitRows(n, m)
			chunks := (n + nn.ChunkRows - 1) / nn.ChunkRows
			if got, want := len(spans), min(m, chunks); got != want {
				t.Errorf("SplitRows(%d, %d): got %d spans, want %d", n, m, got, want)
			}
			lo := 0
			for i, s := range spans {
				c := (s.Hi - s.Lo + nn.ChunkRows - 1) / nn.ChunkRows
				first := (spans[0].Hi - spans[0].Lo + nn.ChunkRows - 1) / nn.ChunkRows
				if s.Lo != lo || s.Hi <= s.Lo || s.Lo%nn.ChunkRows != 0 || (s.Hi%nn.ChunkRows != 0 && s.Hi != n) ||
					c > first || c < first-1 || (i > 0 && s.Hi-s.Lo > spans[i-1].Hi-spans[i-1].Lo) {
					t.Errorf("SplitRows(%d, %d) = %v: span %d is wrong", n, m, spans, i)
				}
				lo = s.Hi
			}
			if lo != n {
				t.Errorf("SplitRows(%d, %d) = %v: got %d rows covered, want %d", n, m, spans, lo, n)
			}
		}
	}
	for _, m := range []int{0, -1} {
		if _, ok := panicText(func() { nn.SplitRows(4, m) }); !ok {
			t.Errorf("SplitRows(4, %d) did not panic", m)
		}
	}
}

func TestSplitEven(t *testing.T) {
	for _, c := range []struct {
		n, m int
		want []nn.Span
	}{
		{10, 3, []nn.Span{{0, 4}, {4, 7}, {7, 10}}},
		{2, 4, []nn.Span{{0, 1}, {1, 2}}},
		{0, 3, []nn.Span{}},
		{11, 4, []nn.Span{{0, 3}, {3, 6}, {6, 9}, {9, 11}}},
		{32, 5, []nn.Span{{0, 7}, {7, 14}, {14, 20}, {20, 26}, {26, 32}}},
	} {
		if got := nn.SplitEven(c.n, c.m); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("SplitEven(%d, %d): got %v, want %v", c.n, c.m, got, c.want)
		}
	}
	if _, ok := panicText(func() { nn.SplitEven(4, 0) }); !ok {
		t.Errorf("SplitEven(4, 0) did not panic")
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
