// Command peak measures this machine's float32 FMA peak: a loop of
// independent VFMADD231PS instructions (16 on ZMM registers where AVX-512
// runs, 14 on YMM), on one core and on every core at once; where
// AVX512_BF16 runs, the same for VDPBF16PS, and where AMX runs (Linux
// grants the tile state) for TDPBF16PS on 4 independent 16×16 tiles of C;
// and the instructions' throughput and latency in cycles, and what a
// 16×32 tile of C costs AMX at k ≤ 32, loads and stores included. Speed figures are
// given as shares of it, since machines of one kind differ from day to day.
//
//	go run ./bench/peak [-seconds 1]
package main

import (
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/cpu"
)

func main() {
	seconds := flag.Float64("seconds", 1, "how long each measurement runs")
	flag.Parse()
	amx := enableAMX()
	type loop struct {
		name  string
		ok    bool
		flops float64 // a round's floating-point operations
		run   func(n int)
	}
	loops := []loop{
		{"AVX-512", cpu.X86.HasAVX512F, 512, fmaZMM},
		{"AVX2", cpu.X86.HasAVX2 && cpu.X86.HasFMA, 224, fmaYMM},
		// 16 VDPBF16PS on zmm: 32 bf16 products and 32 adds each.
		{"AVX512-BF16 VDPBF16PS", cpu.X86.HasAVX512BF16, 1024, dpbf16ZMM},
		// 4 TDPBF16PS: 16×16 sums of 32 bf16 products each.
		{"AMX TDPBF16PS", amx, 4 * 16 * 16 * 32 * 2, tdpTilesLoop},
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
	if cpu.X86.HasAVX512F {
		latencies(cpu.X86.HasAVX512BF16, amx)
	}
}

// latencies prints, in cycles, the throughput and latency of VFMADD231PS
// and VDPBF16PS on zmm (and TDPBF16PS on tiles): the time of 16 independent
// and of 16 dependent instructions, over that of a chain of 16 ADDQ (one
// cycle each), medians of 41 interleaved runs. The kernels' tiles need
// latency×throughput independent accumulators.
func latencies(bf16, amx bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fs := []func(int){addChain, fmaZMM, fmaChain}
	names := []string{"VFMADD231PS zmm"}
	if bf16 {
		fs = append(fs, dpbf16ZMM, dpbf16Chain)
		names = append(names, "VDPBF16PS zmm")
	}
	if amx {
		// 4 instructions a round: 4 rounds for the others' 16.
		fs = append(fs, func(n int) { tdpTilesLoop(4 * n) }, func(n int) { tdpChainLoop(4 * n) })
		names = append(names, "TDPBF16PS")
		fs = append(fs, tileCallLoop) // one call a round
	}
	times := make([][]float64, len(fs))
	for range 41 {
		for i, f := range fs {
			const n = 1 << 16
			start := time.Now()
			f(n)
			times[i] = append(times[i], float64(time.Since(start).Nanoseconds())/(16*n))
		}
	}
	med := make([]float64, len(fs))
	for i := range fs {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
	}
	fmt.Printf("one core at about %.2f GHz (a chain of ADDQ):\n", 1/med[0])
	for i, name := range names {
		thru, lat := med[1+2*i]/med[0], med[2+2*i]/med[0]
		fmt.Printf("%s: %.2f cycles an instruction (%.2f a cycle), latency %.1f cycles\n", name, thru, 1/thru, lat)
	}
	if amx {
		// the least a GEMM's 16×32 tile call at k ≤ 32 costs, whatever drives it
		fmt.Printf("AMX 16×32 tile of C at k ≤ 32 (2 TILEZERO, 3 TILELOADD, 2 TDPBF16PS, 2 TILESTORED): %.0f cycles\n", 16*med[len(med)-1]/med[0])
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
