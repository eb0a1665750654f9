package dataset

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// sharedData is the project's shared data folder, seen from the package folder.
const sharedData = "../../shared/data"

// needData returns sharedData/sub, skipping the test when it is absent.
func needData(t testing.TB, sub string) string {
	t.Helper()
	p := filepath.Join(sharedData, sub)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: shared data %s is not available (%v); these tests need ../shared beside the repository", p, err)
	}
	return p
}

// rowsSet returns a set of n rows with features (i, 10i) and labels i%3, and targets i/2
// when withTargets.
func rowsSet(n int, withTargets bool) *Set {
	x := make([]float32, 0, 2*n)
	labels := make([]int, n)
	tg := make([]float32, n)
	for i := range n {
		x = append(x, float32(i), float32(10*i))
		labels[i] = i % 3
		tg[i] = float32(i) / 2
	}
	s := &Set{Name: "rows", X: tensor.Wrap32(x, n, 2), Labels: labels, Classes: []string{"a", "b", "c"}, Features: 2}
	if withTargets {
		s.Targets = tensor.Wrap32(tg, n, 1)
	}
	return s
}

// firstColumn returns column 0 of s.X as ints (the row ids of a rowsSet).
func firstColumn(s *Set) []int {
	x := s.X.Data32()
	ids := make([]int, s.Len())
	for i := range ids {
		ids[i] = int(x[i*s.Features])
	}
	return ids
}

func TestSubset(t *testing.T) {
	tests := []struct {
		idx  []int
		want []int
	}{
		{[]int{}, []int{}},
		{[]int{4}, []int{4}},
		{[]int{3, 0, 3}, []int{3, 0, 3}},
	}
	for _, withTargets := range []bool{false, true} {
		s := rowsSet(5, withTargets)
		for _, tc := range tests {
			sub := s.Subset(tc.idx)
			if got := firstColumn(sub); !slices.Equal(got, tc.want) {
				t.Errorf("Subset(%v) rows = %v, want %v", tc.idx, got, tc.want)
			}
			if got := sub.X.Shape(); !slices.Equal(got, []int{len(tc.idx), 2}) {
				t.Errorf("Subset(%v) X shape = %v, want %v", tc.idx, got, []int{len(tc.idx), 2})
			}
			for j, i := range tc.idx {
				if sub.Labels[j] != i%3 {
					t.Errorf("Subset(%v) label %d = %d, want %d", tc.idx, j, sub.Labels[j], i%3)
				}
				if withTargets && sub.Targets.At(j, 0) != float64(i)/2 {
					t.Errorf("Subset(%v) target %d = %v, want %v", tc.idx, j, sub.Targets.At(j, 0), float64(i)/2)
				}
			}
			if got := sub.Targets != nil; got != withTargets {
				t.Errorf("Subset(%v) has targets %v, want %v", tc.idx, got, withTargets)
			}
		}
		// The subset is a copy.
		sub := s.Subset([]int{1})
		sub.X.Data32()[0] = 99
		sub.Labels[0] = 2
		if s.X.At(1, 0) != 1 || s.Labels[1] != 1 {
			t.Errorf("writing to a subset changed its source")
		}
	}
}

func TestSubsetPanicsOutOfRange(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Errorf("Subset([5]) of 5 rows did not panic")
		} else if _, ok := r.(error); !ok {
			t.Errorf("Subset panicked with %v (%T), want an error", r, r)
		}
	}()
	rowsSet(5, false).Subset([]int{5})
}

func TestSplit(t *testing.T) {
	tests := []struct {
		n         int
		frac      float64
		wantTrain int
		wantTest  int
		wantErr   string
	}{
		{10, 0.2, 8, 2, ""},
		{10, 0, 10, 0, ""},
		{10, 0.5, 5, 5, ""},
		{1797, 0.2, 1438, 359, ""},
		{3, 0.5, 1, 2, ""}, // round(1.5) = 2
		{10, 0.04, 0, 0, "leaves the test set empty"},
		{10, 0.99, 0, 0, "leaves the training set empty"},
		{1, 0.5, 0, 0, "leaves the training set empty"},
		{10, 1, 0, 0, "outside [0, 1)"},
		{10, -0.1, 0, 0, "outside [0, 1)"},
		{10, math.NaN(), 0, 0, "outside [0, 1)"},
		{0, 0.2, 0, 0, "empty set"},
	}
	for _, tc := range tests {
		train, test, err := Split(rowsSet(tc.n, true), tc.frac, 7)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "dataset: ") {
				t.Errorf("Split(%d rows, %v) error = %v, want one containing %q", tc.n, tc.frac, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Split(%d rows, %v): %v", tc.n, tc.frac, err)
			continue
		}
		if train.Len() != tc.wantTrain || test.Len() != tc.wantTest {
			t.Errorf("Split(%d rows, %v) = %d train, %d test, want %d, %d", tc.n, tc.frac, train.Len(), test.Len(), tc.wantTrain, tc.wantTest)
		}
		// Each side is in ascending row order, and together they cover every row once.
		a, b := firstColumn(train), firstColumn(test)
		if !slices.IsSorted(a) || !slices.IsSorted(b) {
			t.Errorf("Split(%d rows, %v) sides not in row order: %v, %v", tc.n, tc.frac, a, b)
		}
		all := slices.Sorted(slices.Values(append(a, b...)))
		if !slices.Equal(all, identity(tc.n)) {
			t.Errorf("Split(%d rows, %v) rows = %v, want each of 0..%d once", tc.n, tc.frac, all, tc.n-1)
		}
		for i, id := range b {
			if test.Labels[i] != id%3 || test.Targets.At(i, 0) != float64(id)/2 {
				t.Errorf("Split(%d rows, %v): test row %d (id %d) has label %d target %v", tc.n, tc.frac, i, id, test.Labels[i], test.Targets.At(i, 0))
			}
		}
	}
}

func TestSplitIsSeeded(t *testing.T) {
	s := rowsSet(100, false)
	_, t1, _ := Split(s, 0.3, 1)
	_, t2, _ := Split(s, 0.3, 1)
	_, t3, _ := Split(s, 0.3, 2)
	if a, b := firstColumn(t1), firstColumn(t2); !slices.Equal(a, b) {
		t.Errorf("Split with seed 1 twice gave test rows %v and %v", a, b)
	}
	if a, b := firstColumn(t1), firstColumn(t3); slices.Equal(a, b) {
		t.Errorf("Split with seeds 1 and 2 gave the same test rows %v", a)
	}
}

func TestStandardize(t *testing.T) {
	// Column 0: 1, 2, 3 (mean 2, population std sqrt(2/3)); column 1 constant 5.
	train := &Set{Name: "t", X: tensor.FromFloat32s([]float32{1, 5, 2, 5, 3, 5}, 3, 2), Labels: []int{0, 1, 0}, Features: 2}
	test := &Set{Name: "t", X: tensor.FromFloat32s([]float32{2, 7, 4, 5}, 2, 2), Labels: []int{1, 1}, Features: 2}
	z := FitStandardizer(train)
	sd := math.Sqrt(2.0 / 3)
	if want := []float64{2, 5}; !slices.Equal(z.Mean, want) {
		t.Errorf("Mean = %v, want %v", z.Mean, want)
	}
	if want := []float64{sd, 1}; !slices.Equal(z.Std, want) {
		t.Errorf("Std = %v, want %v", z.Std, want)
	}
	strain, stest := Standardize(train, test)
	tests := []struct {
		name string
		got  *Set
		want []float64
	}{
		{"train", strain, []float64{-1 / sd, 0, 0, 0, 1 / sd, 0}},
		{"test", stest, []float64{0, 2, 2 / sd, 0}},
	}
	for _, tc := range tests {
		got := tc.got.X.Float64s()
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-6 {
				t.Errorf("Standardize %s X = %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
	if train.X.At(0, 0) != 1 || test.X.At(0, 1) != 7 {
		t.Errorf("Standardize modified its inputs")
	}
	if _, nilTest := Standardize(train, nil); nilTest != nil {
		t.Errorf("Standardize(train, nil) test = %v, want nil", nilTest)
	}
	empty := FitStandardizer(rowsSet(0, false))
	if !slices.Equal(empty.Mean, []float64{0, 0}) || !slices.Equal(empty.Std, []float64{1, 1}) {
		t.Errorf("FitStandardizer(empty) = %v, %v, want [0 0], [1 1]", empty.Mean, empty.Std)
	}
}

// TestSampleShapeOf: the shapes known before loading are those the sets
// give once loaded.
func TestSampleShapeOf(t *testing.T) {
	digits, err := Digits()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		set  *Set
	}{{"digits", digits}, {"spirals", Spirals(30, 3, 0.2, 1)}} {
		if got, want := SampleShapeOf(c.name), c.set.SampleShape(); !slices.Equal(got, want) {
			t.Errorf("SampleShapeOf(%q) = %v, loaded %v", c.name, got, want)
		}
	}
	if got := SampleShapeOf("mnist"); !slices.Equal(got, []int{1, 28, 28}) {
		t.Errorf("SampleShapeOf(mnist) = %v", got)
	}
	if got := SampleShapeOf("csv"); got != nil {
		t.Errorf("SampleShapeOf(csv) = %v, want nil: only the file tells", got)
	}
}
