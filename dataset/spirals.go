package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/tensor"
)

// Spirals returns a synthetic 2-D classification set of classes interleaved spiral arms
// with n points each, as in Stanford's CS231n notes: point i of class k has radius
// r = i/(n-1) and angle t = 4k + 4r + noise*N(0, 1), and features (r sin t, r cos t).
// Rows are grouped by class (the Loader shuffles them). The same arguments always give
// the same set; noise 0.2 matches CS231n. It panics if n < 1 or classes < 1.
func Spirals(n, classes int, noise float64, seed uint64) *Set {
	if n < 1 || classes < 1 {
		panic(fmt.Errorf("dataset.Spirals: %d points per class and %d classes; both must be positive", n, classes))
	}
	rng := rand.New(rand.NewPCG(seed, spiralsStream))
	x := make([]float32, 0, 2*n*classes)
	labels := make([]int, 0, n*classes)
	for k := range classes {
		for i := range n {
			r := 0.0
			if n > 1 {
				r = float64(i) / float64(n-1)
			}
			t := 4*float64(k) + 4*r + noise*rng.NormFloat64()
			x = append(x, float32(r*math.Sin(t)), float32(r*math.Cos(t)))
			labels = append(labels, k)
		}
	}
	return &Set{
		Name:     "spirals",
		X:        tensor.Wrap32(x, n*classes, 2),
		Labels:   labels,
		Classes:  digitClasses(classes),
		Features: 2,
	}
}
