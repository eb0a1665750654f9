package gemm

import (
	"runtime"
	"sync/atomic"
)

// threads is the budget set by SetThreads; 0 means not yet set.
var threads atomic.Int64

// SetThreads sets how many goroutines one Sgemm call may use, the calling one
// included. n < 1 restores the default, runtime.GOMAXPROCS(0) read at the next
// call of Threads. The budget caps a single call: callers that run several
// calls at once (pipeline stages) share the machine by giving each a part.
// Results do not depend on it: any budget gives the same bits.
func SetThreads(n int) {
	if n < 1 {
		n = 0
	}
	threads.Store(int64(n))
}

// Threads returns the goroutine budget of one Sgemm call: the value of the last
// SetThreads, or by default runtime.GOMAXPROCS(0) as read at first use.
func Threads() int {
	if n := threads.Load(); n > 0 {
		return int(n)
	}
	n := int64(runtime.GOMAXPROCS(0))
	threads.CompareAndSwap(0, n)
	return int(threads.Load())
}
