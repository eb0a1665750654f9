package tensor_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/tensor"
)

func Example() {
	x := tensor.FromFloat64s(tensor.Float32, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	y := x.Reshape(3, -1) // a view: writes through y change x
	y.Set(60, 2, 1)
	fmt.Println(x.Shape(), x.Size(), x.DType())
	fmt.Println(y)
	fmt.Println(x.At(1, 2))

	s := tensor.Zeros(tensor.Float64) // a 0-D scalar
	fmt.Println(s.Shape(), s.Size())

	b, ok := tensor.BroadcastShapes([]int{4, 1, 3}, []int{5, 1})
	fmt.Println(b, ok)

	w := tensor.RandUniform(rand.New(rand.NewPCG(1, 1)), tensor.Float64, -1, 1, 2, 2)
	fmt.Println(w.Shape())
	// Output:
	// [2 3] 6 float32
	// float32[3 2] [1 2 3 4 5 60]
	// 60
	// [] 1
	// [4 5 3] true
	// [2 2]
}
