package vec_test

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/internal/vec"
)

func Example() {
	x := []float32{-2, float32(math.Copysign(0, -1)), 0.5, 3, -1, 4, 0, 2, 1}
	h := make([]float32, len(x))
	vec.Relu(h, x)
	fmt.Println(h)

	w := []float32{1, 1, 1, 1, 1, 1, 1, 1, 1}
	vec.SGD(w, x, 0.5)
	fmt.Println(w, vec.AllFinite(w))

	w[3] = float32(math.Inf(1))
	fmt.Println(vec.AllFinite(w))
	// Output:
	// [0 0 0.5 3 0 4 0 2 1]
	// [2 1 0.75 -0.5 1.5 -1 1 0 0.5] true
	// false
}
