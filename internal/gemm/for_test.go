package gemm

import (
	"fmt"
	"sync"
	"testing"
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
			withThreads(c.threads, func() {
				task := &countTask{seen: make([]int, c.n)}
				For(c.n, c.grain, task)
				if task.ranges != c.wantRanges {
					t.Errorf("got %d ranges, want %d", task.ranges, c.wantRanges)
				}
				for i, v := range task.seen {
					if v != 1 {
						t.Fatalf("index %d visited %d times, want 1", i, v)
					}
				}
			})
		})
	}
}

type sumTask struct{ x, y []float32 }

func (s *sumTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		s.y[i] += s.x[i]
	}
}

func TestForNoAlloc(t *testing.T) {
	task := &sumTask{x: make([]float32, 1<<16), y: make([]float32, 1<<16)}
	withThreads(2, func() {
		For(len(task.x), 1<<10, task)
		if allocs := testing.AllocsPerRun(50, func() { For(len(task.x), 1<<10, task) }); allocs > 0 {
			t.Errorf("%v allocations per call, want 0", allocs)
		}
	})
}
