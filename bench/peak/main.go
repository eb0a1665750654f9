// Command peak measures this machine's float32 FMA peak: a loop of
// independent VFMADD231PS instructions (16 on ZMM registers where AVX-512
// runs, 14 on YMM), on one core and on every core at once. Speed figures are
// given as shares of it, since machines of one kind differ from day to day.
//
//	go run ./bench/peak [-seconds 1]
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/cpu"
)

func main() {
	seconds := flag.Float64("seconds", 1, "how long each measurement runs")
	flag.Parse()
	type loop struct {
		name  string
		ok    bool
		flops float64 // a round's floating-point operations
		run   func(n int)
	}
	loops := []loop{
		{"AVX-512", cpu.X86.HasAVX512F, 512, fmaZMM},
		{"AVX2", cpu.X86.HasAVX2 && cpu.X86.HasFMA, 224, fmaYMM},
	}
	cores := runtime.GOMAXPROCS(0)
	fmt.Printf("cpu: %s, %d cores (GOMAXPROCS); float32 FMA peak, independent VFMADD231PS (16 on zmm, 14 on ymm):\n", cpuName(), cores)
	for _, l := range loops {
		if !l.ok {
			continue
		}
		one := measure(l.run, l.flops, 1, *seconds)
		all := measure(l.run, l.flops, cores, *seconds)
		fmt.Printf("%s: one core %.1f GFLOP/s, %d cores %.1f GFLOP/s\n", l.name, one, cores, all)
	}
}

// measure runs f on g goroutines, each locked to a thread, for about
// seconds, and returns their combined GFLOP/s: the best of three tries.
func measure(f func(int), flops float64, g int, seconds float64) float64 {
	const rounds = 1 << 20
	f(rounds) // warm up: clocks and power states settle
	best := 0.0
	for range 3 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0.0
		for range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				n := 0
				start := time.Now()
				for time.Since(start).Seconds() < seconds {
					f(rounds)
					n++
				}
				rate := float64(n) * rounds * flops / time.Since(start).Seconds() / 1e9
				mu.Lock()
				total += rate
				mu.Unlock()
			}()
		}
		wg.Wait()
		best = max(best, total)
	}
	return best
}
