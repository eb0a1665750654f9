package opstest_test

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// Check the gradient of y = exp(x), elementwise, whose backward takes the
// forward output: dL/dx = g * y.
func ExampleCheck() {
	exp := func(in []*tensor.Tensor) *tensor.Tensor {
		v := in[0].Float64s()
		for i := range v {
			v[i] = math.Exp(v[i])
		}
		return tensor.FromFloat64s(tensor.Float64, v, in[0].Shape()...)
	}
	expBackward := func(g *tensor.Tensor, _ []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		gv, ov := g.Float64s(), out.Float64s()
		for i := range gv {
			gv[i] *= ov[i]
		}
		return []*tensor.Tensor{tensor.FromFloat64s(tensor.Float64, gv, g.Shape()...)}
	}
	x := tensor.FromFloat64s(tensor.Float64, []float64{-1, 0, 0.5, 2}, 2, 2)
	fmt.Println("exp:", opstest.Check("Exp", []*tensor.Tensor{x}, exp, expBackward, 1e-6))

	// A backward that forgets the chain rule (returns g, not g * y) is caught.
	forgetful := func(g *tensor.Tensor, _ []*tensor.Tensor, _ *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{g.Clone()}
	}
	err := opstest.Check("BadExp", []*tensor.Tensor{x}, exp, forgetful, 1e-6)
	fmt.Println("forgetful:", err != nil)
	// Output:
	// exp: <nil>
	// forgetful: true
}
