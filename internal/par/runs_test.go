package par

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestRuns: every started function runs once; a run that blocks does not
// hold up the others (each finds a goroutine); finished runs' goroutines
// are reused; Close ends them all.
func TestRuns(t *testing.T) {
	before := runtime.NumGoroutine()
	r := NewRuns()
	release := make(chan struct{})
	var blocked sync.WaitGroup
	blocked.Add(1)
	r.Start(func() { blocked.Done(); <-release })
	blocked.Wait()
	const n = 100
	var wg sync.WaitGroup
	wg.Add(n)
	counts := make([]int, n)
	for i := range n {
		r.Start(func() { counts[i]++; wg.Done() })
		if i%10 == 9 {
			time.Sleep(time.Millisecond) // let the runs finish, their goroutines go idle
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("runs held up behind a blocked one")
	}
	for i, c := range counts {
		if c != 1 {
			t.Errorf("run %d ran %d times", i, c)
		}
	}
	if g := runtime.NumGoroutine() - before; g > 20 {
		t.Errorf("%d goroutines for %d short runs: idle ones are not reused", g, n)
	}
	close(release)
	r.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after Close, %d before", g, before)
	}
}
