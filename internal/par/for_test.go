package par

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// countTask records how often each index was visited and the ranges it got.
type countTask struct {
	mu     sync.Mutex
	seen   []int
	ranges int
}

func (c *countTask) Run(lo, hi int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranges++
	for i := lo; i < hi; i++ {
		c.seen[i]++
	}
}

func TestForCoversEveryIndexOnce(t *testing.T) {
	for _, c := range []struct{ threads, n, grain, wantRanges int }{
		{1, 1000, 10, 1},     // one thread: one range
		{2, 1000, 10, 2},     // split in two
		{2, 15, 10, 1},       // too little work to split
		{4, 100, 30, 3},      // parts limited by the grain
		{4, 0, 1, 1},         // nothing to do: one empty call
		{3, 100003, 1000, 3}, // uneven split
	} {
		t.Run(fmt.Sprintf("threads=%d/n=%d/grain=%d", c.threads, c.n, c.grain), func(t *testing.T) {
			task := &countTask{seen: make([]int, c.n)}
			For(c.threads, c.n, c.grain, task)
			if task.ranges != c.wantRanges {
				t.Errorf("got %d ranges, want %d", task.ranges, c.wantRanges)
			}
			for i, v := range task.seen {
				if v != 1 {
					t.Fatalf("index %d visited %d times, want 1", i, v)
				}
			}
		})
	}
}

func TestBudget(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, runtime.GOMAXPROCS(0)}, {-3, runtime.GOMAXPROCS(0)}, {1, 1}, {5, 5}} {
		if got := Budget(c.in); got != c.want {
			t.Errorf("Budget(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

type sumTask struct{ x, y []float32 }

func (s *sumTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		s.y[i] += s.x[i]
	}
}

// TestForNoAllocNoLeak: steady calls allocate nothing, and the helpers exit
// once idle.
func TestForNoAllocNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	task := &sumTask{x: make([]float32, 1<<16), y: make([]float32, 1<<16)}
	For(2, len(task.x), 1<<10, task)
	if allocs := testing.AllocsPerRun(50, func() { For(2, len(task.x), 1<<10, task) }); allocs > 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
	for range 1000 {
		if runtime.NumGoroutine() <= before && LiveHelpers() == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Errorf("%d goroutines (%d helpers) a second after the calls, %d before", runtime.NumGoroutine(), LiveHelpers(), before)
}

// orderWork records the order parts were claimed in and checks that every
// part runs once, whatever the budget.
type orderWork struct {
	mu   sync.Mutex
	runs []int
}

func (o *orderWork) Part(q int) {
	o.mu.Lock()
	o.runs = append(o.runs, q)
	o.mu.Unlock()
}

func TestDoRunsEveryPartOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		for _, parts := range []int{0, 1, 2, 7, 64} {
			w := &orderWork{}
			Do(threads, parts, w)
			seen := make([]int, parts)
			for _, q := range w.runs {
				seen[q]++
			}
			for q, n := range seen {
				if n != 1 {
					t.Errorf("threads=%d parts=%d: part %d ran %d times", threads, parts, q, n)
				}
			}
			if len(w.runs) != parts {
				t.Errorf("threads=%d parts=%d: %d runs", threads, parts, len(w.runs))
			}
		}
	}
}

// endsWork records which goroutine ran each part.
type endsWork struct {
	mu     sync.Mutex
	caller uint64
	byCall []bool // part q ran on the caller
	ran    []int  // times part q ran
	slow   time.Duration
}

func (e *endsWork) Part(q int) {
	e.mu.Lock()
	e.ran[q]++
	e.byCall[q] = goid() == e.caller
	e.mu.Unlock()
	time.Sleep(e.slow) // gives a helper time to turn up
}

// goid is the running goroutine's id, from its stack trace's header.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	var id uint64
	for _, c := range b[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// TestDoClaimsFromBothEnds: the caller runs a run of parts from 0 and the
// helpers the rest, from the last.
func TestDoClaimsFromBothEnds(t *testing.T) {
	for _, c := range []struct{ threads, parts int }{{2, 2}, {2, 8}, {2, 9}, {3, 16}, {4, 12}} {
		t.Run(fmt.Sprintf("threads=%d/parts=%d", c.threads, c.parts), func(t *testing.T) {
			e := &endsWork{caller: goid(), byCall: make([]bool, c.parts), ran: make([]int, c.parts), slow: 200 * time.Microsecond}
			Do(c.threads, c.parts, e)
			for q, n := range e.ran {
				if n != 1 {
					t.Fatalf("part %d ran %d times", q, n)
				}
			}
			if !e.byCall[0] {
				t.Errorf("part 0 ran on a helper")
			}
			// The caller's parts are one run, the helpers' the rest.
			k := 0
			for k < c.parts && e.byCall[k] {
				k++
			}
			for q := k; q < c.parts; q++ {
				if e.byCall[q] {
					t.Errorf("caller ran part %d after a helper ran part %d: parts %v", q, k, e.byCall)
				}
			}
			if k == c.parts {
				t.Errorf("no helper ran a part: %v", e.byCall)
			}
		})
	}
}
