package dataset

import (
	"slices"
	"testing"
)

func TestDigits(t *testing.T) {
	s, err := Digits()
	if err != nil {
		t.Fatalf("Digits(): %v", err)
	}
	if got, want := s.X.Shape(), []int{1797, 64}; !slices.Equal(got, want) {
		t.Errorf("Digits() X shape = %v, want %v", got, want)
	}
	if got := s.SampleShape(); !slices.Equal(got, []int{1, 8, 8}) {
		t.Errorf("Digits() sample shape = %v, want [1 8 8]", got)
	}
	if tr, _, _ := Split(s, 0.2, 1); !slices.Equal(tr.SampleShape(), []int{1, 8, 8}) {
		t.Errorf("a split of the digits has sample shape %v", tr.SampleShape())
	}
	if s.Len() != 1797 || s.Features != 64 || len(s.Labels) != 1797 || s.Targets != nil {
		t.Errorf("Digits() = %d rows, %d features, %d labels, targets %v; want 1797, 64, 1797, nil", s.Len(), s.Features, len(s.Labels), s.Targets)
	}
	if want := digitClasses(10); !slices.Equal(s.Classes, want) {
		t.Errorf("Digits() classes = %v, want %v", s.Classes, want)
	}
	counts := make([]int, 10)
	for _, l := range s.Labels {
		counts[l]++
	}
	// Per-class counts of scikit-learn's load_digits.
	if want := []int{178, 182, 177, 183, 181, 182, 181, 179, 174, 180}; !slices.Equal(counts, want) {
		t.Errorf("Digits() label counts = %v, want %v", counts, want)
	}
	lo, hi := slices.Min(s.X.Data32()), slices.Max(s.X.Data32())
	if lo != 0 || hi != 1 {
		t.Errorf("Digits() pixels in [%v, %v], want [0, 1]", lo, hi)
	}
	// The first row of digits.csv: 0,0,5,13,9,1,0,0,... label 0.
	if got, want := s.X.Data32()[:4], []float32{0, 0, 5.0 / 16, 13.0 / 16}; !slices.Equal(got, want) || s.Labels[0] != 0 {
		t.Errorf("Digits() row 0 starts %v label %d, want %v label 0", got, s.Labels[0], want)
	}
	// Each call returns a set of its own.
	s.X.Data32()[2] = 7
	if s2, _ := Digits(); s2.X.Data32()[2] != 5.0/16 {
		t.Errorf("a second Digits() shares storage with the first")
	}
}
