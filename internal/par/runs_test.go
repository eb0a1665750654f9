package par

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestRuns: every started function runs once; a run that blocks does not
// hold up the others (each finds a goroutine); a goroutine whose run ended
// waits for the next; Close ends them all.
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
	// A goroutine whose run ended waits for the next: one takes a
	// function handed to r directly, as Start hands it.
	kept := make(chan struct{})
	probe := time.Now()
	for handed := false; !handed; {
		select {
		case r.work <- func() { close(kept) }:
			handed = true
		default:
			if time.Since(probe) > 5*time.Second {
				t.Fatal("no goroutine of r waits for a run once its own has ended")
			}
			time.Sleep(time.Millisecond)
		}
	}
	<-kept
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

// TestRunsKeep: runs started back to back, each the moment the last has
// signalled its end (so two may be under way at once), never take more
// goroutines than Keep allows; without Keep, r starts one more now and
// then (the last run's is not yet back), and so would grow for as long as
// runs go on.
func TestRunsKeep(t *testing.T) {
	const runs = 20000
	count := func(keep int) int64 {
		r := NewRuns()
		defer r.Close()
		r.Keep(keep)
		ended := make(chan struct{})
		for range runs {
			r.Start(func() { ended <- struct{}{} })
			<-ended
		}
		return r.n.Load()
	}
	if n := count(2); n != 2 {
		t.Errorf("with Keep(2), %d back-to-back runs started %d goroutines in all, want 2", runs, n)
	}
	// a run started after Close (a late message) still runs, and Start
	// does not wait for a goroutine that will never come back
	r := NewRuns()
	r.Keep(1)
	r.Close()
	ran := make(chan struct{})
	r.Start(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Error("a run started after Close did not run within 5 s")
	}
	t.Logf("without Keep: %d goroutines after %d back-to-back runs", count(0), runs)
}
