package dataset

import (
	"slices"
	"sync"
	"testing"
)

func TestLoaderBatchSizes(t *testing.T) {
	tests := []struct {
		n, batch    int
		wantBatches int
		wantLast    int
	}{
		{10, 3, 4, 1},
		{10, 5, 2, 5},
		{10, 10, 1, 10},
		{10, 64, 1, 10},
		{1, 1, 1, 1},
		{1438, 64, 23, 30},
		{0, 4, 0, 0},
	}
	for _, tc := range tests {
		for _, shuffle := range []bool{false, true} {
			l := NewLoader(rowsSet(tc.n, true), tc.batch, shuffle, 1)
			if got := l.BatchesPerEpoch(); got != tc.wantBatches {
				t.Errorf("n=%d batch=%d: BatchesPerEpoch() = %d, want %d", tc.n, tc.batch, got, tc.wantBatches)
				continue
			}
			var seen []int
			for i := range tc.wantBatches {
				x, labels, targets := l.Batch(0, i)
				want := tc.batch
				if i == tc.wantBatches-1 {
					want = tc.wantLast
				}
				if got := x.Shape(); !slices.Equal(got, []int{want, 2}) {
					t.Errorf("n=%d batch=%d shuffle=%v: Batch(0, %d) x shape %v, want %v", tc.n, tc.batch, shuffle, i, got, []int{want, 2})
				}
				if len(labels) != want || !slices.Equal(targets.Shape(), []int{want, 1}) {
					t.Errorf("n=%d batch=%d: Batch(0, %d) has %d labels and targets %v, want %d", tc.n, tc.batch, i, len(labels), targets.Shape(), want)
				}
				for j := range want {
					id := int(x.At(j, 0))
					if x.At(j, 1) != float64(10*id) || labels[j] != id%3 || targets.At(j, 0) != float64(id)/2 {
						t.Errorf("n=%d batch=%d: Batch(0, %d) row %d mixes rows: x %v %v label %d target %v",
							tc.n, tc.batch, i, j, x.At(j, 0), x.At(j, 1), labels[j], targets.At(j, 0))
					}
					seen = append(seen, id)
				}
			}
			if !shuffle && !slices.Equal(seen, identity(tc.n)) {
				t.Errorf("n=%d batch=%d unshuffled: rows %v, want 0..%d in order", tc.n, tc.batch, seen, tc.n-1)
			}
			slices.Sort(seen)
			if !slices.Equal(seen, identity(tc.n)) {
				t.Errorf("n=%d batch=%d shuffle=%v: epoch visits %v, want each row once", tc.n, tc.batch, shuffle, seen)
			}
		}
	}
}

// TestLoaderGoldenOrder pins the epoch orders: a change here changes every run's data
// order and breaks resuming old checkpoints.
func TestLoaderGoldenOrder(t *testing.T) {
	tests := []struct {
		seed  uint64
		epoch int
		want  []int
	}{
		{1, 0, []int{6, 3, 1, 9, 7, 4, 8, 2, 0, 5}},
		{1, 1, []int{3, 5, 8, 2, 7, 1, 6, 4, 0, 9}},
		{42, 7, []int{8, 9, 1, 2, 5, 3, 6, 0, 4, 7}},
	}
	for _, tc := range tests {
		l := NewLoader(rowsSet(10, false), 4, true, tc.seed)
		if got := l.Order(tc.epoch); !slices.Equal(got, tc.want) {
			t.Errorf("seed %d: Order(%d) = %v, want %v", tc.seed, tc.epoch, got, tc.want)
		}
		var got []int
		for i := range l.BatchesPerEpoch() {
			x, _, _ := l.Batch(tc.epoch, i)
			got = append(got, firstColumn(&Set{X: x, Features: 2})...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("seed %d: rows of epoch %d = %v, want %v", tc.seed, tc.epoch, got, tc.want)
		}
	}
	if got := NewLoader(rowsSet(5, false), 2, false, 9).Order(3); !slices.Equal(got, identity(5)) {
		t.Errorf("unshuffled Order(3) = %v, want %v", got, identity(5))
	}
}

// TestLoaderResume checks that batch (e, i) does not depend on what was asked before:
// a fresh loader, as after a restart, gives the same batches as one that ran from the
// start, and epochs differ from one another.
func TestLoaderResume(t *testing.T) {
	s := rowsSet(50, false)
	a := NewLoader(s, 8, true, 3)
	var run [][]int // rows of every batch of epochs 0..2
	for e := range 3 {
		for i := range a.BatchesPerEpoch() {
			x, _, _ := a.Batch(e, i)
			run = append(run, firstColumn(&Set{X: x, Features: 2}))
		}
	}
	b := NewLoader(s, 8, true, 3)
	for _, at := range [][2]int{{2, 3}, {1, 6}, {2, 0}, {0, 0}} {
		x, _, _ := b.Batch(at[0], at[1])
		got := firstColumn(&Set{X: x, Features: 2})
		if want := run[at[0]*a.BatchesPerEpoch()+at[1]]; !slices.Equal(got, want) {
			t.Errorf("resumed Batch(%d, %d) = %v, want %v", at[0], at[1], got, want)
		}
	}
	if slices.Equal(a.Order(0), a.Order(1)) {
		t.Errorf("epochs 0 and 1 have the same order %v", a.Order(0))
	}
	if slices.Equal(a.Order(0), NewLoader(s, 8, true, 4).Order(0)) {
		t.Errorf("seeds 3 and 4 give the same order %v", a.Order(0))
	}
}

func TestLoaderConcurrent(t *testing.T) {
	s := rowsSet(100, false)
	l := NewLoader(s, 7, true, 5)
	want := make([][]int, 4)
	for e := range want {
		want[e] = l.Order(e)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range 50 {
				e := (g + k) % 4
				x, _, _ := l.Batch(e, 1)
				got := firstColumn(&Set{X: x, Features: 2})
				if !slices.Equal(got, want[e][7:14]) {
					t.Errorf("concurrent Batch(%d, 1) = %v, want %v", e, got, want[e][7:14])
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBatchIntoDoesNotAllocate(t *testing.T) {
	s := rowsSet(100, true)
	l := NewLoader(s, 16, true, 1)
	x := make([]float32, 16*2)
	labels := make([]int, 16)
	targets := make([]float32, 16)
	l.BatchInto(0, 0, x, labels, targets) // build epoch 0's order
	allocs := testing.AllocsPerRun(100, func() {
		for i := range l.BatchesPerEpoch() {
			l.BatchInto(0, i, x, labels, targets)
		}
	})
	if allocs != 0 {
		t.Errorf("BatchInto allocates %v times per epoch, want 0", allocs)
	}
	if n := l.BatchInto(0, 6, x, labels, nil); n != 4 {
		t.Errorf("BatchInto(0, 6) rows = %d, want 4", n)
	}
	xb, lb, _ := l.Batch(0, 6)
	if !slices.Equal(x[:8], xb.Data32()) || !slices.Equal(labels[:4], lb) {
		t.Errorf("BatchInto(0, 6) = %v %v, Batch(0, 6) = %v %v", x[:8], labels[:4], xb.Data32(), lb)
	}
}

func TestRowsIntoInParts(t *testing.T) {
	s := rowsSet(100, true)
	l := NewLoader(s, 16, true, 1)
	for _, i := range []int{0, 3, 6} { // batch 6 is the short last one
		rows := l.BatchLen(i)
		want, wantL, wantT := make([]float32, 32), make([]int, 16), make([]float32, 16)
		l.BatchInto(2, i, want, wantL, wantT)
		for _, step := range []int{1, 3, 16} {
			x, labels, targets := make([]float32, 32), make([]int, 16), make([]float32, 16)
			for lo := rows - 1; lo >= 0; lo -= step { // parts in reverse: each lands in place
				l.RowsInto(2, i, max(0, lo-step+1), lo+1, x, labels, targets)
			}
			if !slices.Equal(x, want) || !slices.Equal(labels, wantL) || !slices.Equal(targets, wantT) {
				t.Errorf("batch %d in parts of %d: %v %v %v, want %v %v %v", i, step, x, labels, targets, want, wantL, wantT)
			}
		}
	}
	// A part needs buffers up to its last row only.
	x := make([]float32, 2*2)
	l.RowsInto(0, 0, 1, 2, x, nil, nil)
	if want, _, _ := l.Batch(0, 0); !slices.Equal(x[2:], want.Data32()[2:4]) {
		t.Errorf("RowsInto(0, 0, 1, 2) = %v, want row 1 of %v", x[2:], want.Data32()[:4])
	}
}

func TestLoaderPanics(t *testing.T) {
	s := rowsSet(10, false)
	tests := []struct {
		name string
		f    func()
	}{
		{"batch size 0", func() { NewLoader(s, 0, true, 1) }},
		{"batch -1", func() { NewLoader(s, 4, true, 1).Batch(0, -1) }},
		{"batch 3 of 3", func() { NewLoader(s, 4, true, 1).Batch(0, 3) }},
		{"epoch -1", func() { NewLoader(s, 4, true, 1).Batch(-1, 0) }},
		{"short buffer", func() { NewLoader(s, 4, true, 1).BatchInto(0, 0, make([]float32, 7), nil, nil) }},
		{"rows past the batch", func() { NewLoader(s, 4, true, 1).RowsInto(0, 2, 0, 3, make([]float32, 6), nil, nil) }},
		{"rows reversed", func() { NewLoader(s, 4, true, 1).RowsInto(0, 0, 2, 1, make([]float32, 8), nil, nil) }},
		{"rows before 0", func() { NewLoader(s, 4, true, 1).RowsInto(0, 0, -1, 1, make([]float32, 8), nil, nil) }},
		{"short part buffer", func() { NewLoader(s, 4, true, 1).RowsInto(0, 0, 1, 3, make([]float32, 5), nil, nil) }},
		{"features mismatch", func() { NewLoader(&Set{X: s.X, Features: 3}, 4, true, 1) }},
	}
	for _, tc := range tests {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: no panic", tc.name)
				} else if _, ok := r.(error); !ok {
					t.Errorf("%s: panicked with %v (%T), want an error", tc.name, r, r)
				}
			}()
			tc.f()
		}()
	}
}
