package dataset

import (
	"math"
	"slices"
	"testing"
)

func TestSpirals(t *testing.T) {
	tests := []struct {
		n, classes int
		noise      float64
	}{
		{100, 3, 0.2},
		{1, 2, 0},
		{50, 5, 0},
	}
	for _, tc := range tests {
		s := Spirals(tc.n, tc.classes, tc.noise, 1)
		if got, want := s.X.Shape(), []int{tc.n * tc.classes, 2}; !slices.Equal(got, want) || s.Features != 2 {
			t.Errorf("Spirals(%d, %d, %v) X shape = %v, want %v", tc.n, tc.classes, tc.noise, got, want)
		}
		if got, want := labelCounts(s), slices.Repeat([]int{tc.n}, tc.classes); !slices.Equal(got, want) {
			t.Errorf("Spirals(%d, %d, %v) label counts = %v, want %v", tc.n, tc.classes, tc.noise, got, want)
		}
		x := s.X.Data32()
		for i := range s.Len() {
			// The radius is i/(n-1) within a class, whatever the noise.
			r := math.Hypot(float64(x[2*i]), float64(x[2*i+1]))
			want := 0.0
			if tc.n > 1 {
				want = float64(i%tc.n) / float64(tc.n-1)
			}
			if math.Abs(r-want) > 1e-6 {
				t.Errorf("Spirals(%d, %d, %v) row %d radius = %v, want %v", tc.n, tc.classes, tc.noise, i, r, want)
				break
			}
		}
		if !slices.Equal(s.X.Data32(), Spirals(tc.n, tc.classes, tc.noise, 1).X.Data32()) {
			t.Errorf("Spirals(%d, %d, %v, seed 1) differs between calls", tc.n, tc.classes, tc.noise)
		}
	}
	// Without noise, point 1 of class 0 of Spirals(3, 2, 0, _) is at r = 0.5, t = 2.
	s := Spirals(3, 2, 0, 9)
	if got, want := []float64{s.X.At(1, 0), s.X.At(1, 1)}, []float64{float64(float32(0.5 * math.Sin(2))), float64(float32(0.5 * math.Cos(2)))}; !slices.Equal(got, want) {
		t.Errorf("Spirals(3, 2, 0) row 1 = %v, want %v", got, want)
	}
	a, b := Spirals(10, 2, 0.2, 1), Spirals(10, 2, 0.2, 2)
	if slices.Equal(a.X.Data32(), b.X.Data32()) {
		t.Errorf("Spirals with seeds 1 and 2 are equal")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Spirals(0, 3, 0.2, 1) did not panic")
			}
		}()
		Spirals(0, 3, 0.2, 1)
	}()
}
