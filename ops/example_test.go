package ops_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

func Example() {
	x := tensor.FromFloat64s(tensor.Float64, []float64{1, 2, 3, 4}, 2, 2)
	w := tensor.FromFloat64s(tensor.Float64, []float64{1, 0, 0, 1}, 2, 2)
	logits := ops.MatMul(x, w)
	loss := ops.CrossEntropy(logits, []int{1, 0})
	fmt.Printf("loss %.4f\n", loss.Item())

	gLogits := ops.CrossEntropyBackward(tensor.Full(tensor.Float64, 1), logits, []int{1, 0})
	gx, gw := ops.MatMulBackward(gLogits, x, w)
	fmt.Println(gx.Shape(), gw.Shape())

	b := tensor.FromFloat64s(tensor.Float64, []float64{10, 20}, 2)
	fmt.Println(ops.Add(x, b)) // b broadcasts over the rows
	// Output:
	// loss 0.8133
	// [2 2] [2 2]
	// float64[2 2] [11 22 13 24]
}
