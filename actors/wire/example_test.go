package wire_test

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/actors/wire"
	"github.com/pipetrain/pipetrain/tensor"
)

// A tensor crosses a process boundary as protobuf bytes and comes back the same.
func ExampleFromTensor() {
	x := tensor.FromFloat64s(tensor.Float32, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	b, _ := proto.Marshal(wire.FromTensor(x))
	var w wire.Tensor
	_ = proto.Unmarshal(b, &w)
	y, err := w.ToTensor()
	fmt.Println(len(b), y.Shape(), y.Float64s(), err)
	// Output: 30 [2 3] [1 2 3 4 5 6] <nil>
}
