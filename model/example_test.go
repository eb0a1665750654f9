package model_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// A model from its description and weights; model.Load reads both from a
// checkpoint.
func Example() {
	d := model.Description{
		Format: model.Format, Sample: []int{2}, Loss: nn.CrossEntropy, Classes: []string{"left", "right"},
		Input:  model.Input{Data: "csv", Divide: 1},
		Layers: []nn.Spec{{Type: "linear", Units: 2, Init: nn.XavierUniform}}, // the init is overwritten by the weights
	}
	// class 1 when the second feature exceeds the first
	weights := map[string]*tensor.Tensor{
		"0.weight": tensor.FromFloat32s([]float32{1, 0, 0, 1}, 2, 2),
		"0.bias":   tensor.FromFloat32s([]float32{0, 0}, 2),
	}
	m, err := model.New(d, weights)
	if err != nil {
		fmt.Println(err)
		return
	}
	x := tensor.FromFloat32s([]float32{3, 1, 0, 2}, 2, 2)
	classes, _ := m.Classify(x)
	probs, _ := m.Predict(x)
	for i, c := range classes {
		fmt.Printf("row %d: %s (p = %.3f)\n", i, m.Classes[c], probs.At(i, c))
	}
	// Output:
	// row 0: left (p = 0.881)
	// row 1: right (p = 0.881)
}
