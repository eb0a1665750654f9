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

// A language model's continuation of a prompt. This tiny model has a
// context of 4 tokens; its token embeddings and head, set by hand, map each
// token to the next of "a", "b", "c" in turn, and its position vectors and
// transformer block keep the random weights nn.BuildShape draws at GPT-2's
// init. At temperature 0 each token is the most likely one; the ten tokens
// overrun the context, which Generate then slides.
func ExampleModel_Generate() {
	d := model.Description{
		Format: model.Format, Sample: []int{4}, Loss: nn.CrossEntropy,
		Classes: []string{"a", "b", "c"}, Vocab: "chars", Input: model.Input{Data: "text", Divide: 1},
		Layers: []nn.Spec{
			{Type: "embedding", Dim: 3, Vocab: 3, Init: nn.GPT},
			{Type: "transformer_block", Heads: 1, Init: nn.GPT},
			{Type: "layernorm"},
			{Type: "linear", Units: 3, Init: nn.GPT},
		},
	}
	layers, err := nn.BuildShape(d.Layers, d.Sample, 1, tensor.Float32, 0, len(d.Layers))
	if err != nil {
		fmt.Println(err)
		return
	}
	weights := map[string]*tensor.Tensor{}
	for i, l := range layers {
		for _, p := range l.Params() {
			weights[nn.ParamName(i, p.Name)] = p.Value
		}
	}
	weights["0.weight"] = tensor.FromFloat32s([]float32{1, 0, 0, 0, 1, 0, 0, 0, 1}, 3, 3) // token i: e_i
	weights["3.weight"] = tensor.FromFloat32s([]float32{0, 0, 4, 4, 0, 0, 0, 4, 0}, 3, 3) // e_i: token i+1
	m, err := model.New(d, weights)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := m.Generate([]int{0}, 10, model.GenerateOptions{Temperature: 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range ids {
		fmt.Print(m.Classes[id])
	}
	fmt.Println()
	// Output:
	// bcabcabcab
}
