package par_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/internal/par"
)

// scale multiplies a slice by a factor over a range: a loop whose iterations
// are independent, so any split gives the same result.
type scale struct {
	x []float32
	f float32
}

func (s *scale) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		s.x[i] *= s.f
	}
}

func ExampleFor() {
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(i)
	}
	// up to 2 goroutines, parts of at least 4096 elements
	par.For(2, len(x), 1<<12, &scale{x: x, f: 0.5})
	fmt.Println(x[1], x[len(x)-1])
	// Output: 0.5 32767.5
}
