package model_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// tinyLM is a language model of 5 tokens with a context of 4 and random
// weights.
func tinyLM(t *testing.T) *model.Model {
	t.Helper()
	d := model.Description{
		Format: model.Format, Sample: []int{4}, Loss: nn.CrossEntropy,
		Classes: []string{"a", "b", "c", "d", "e"}, Vocab: "chars", Input: model.Input{Data: "text", Divide: 1},
		Layers: []nn.Spec{
			{Type: "embedding", Dim: 8, Vocab: 5, Init: nn.GPT},
			{Type: "transformer_block", Heads: 2, Init: nn.GPT},
			{Type: "layernorm"},
			{Type: "linear", Units: 5, Init: nn.GPT},
		},
	}
	layers, err := nn.BuildShape(d.Layers, d.Sample, 3, tensor.Float32, 0, len(d.Layers))
	if err != nil {
		t.Fatal(err)
	}
	weights := map[string]*tensor.Tensor{}
	for i, l := range layers {
		for _, p := range l.Params() {
			weights[nn.ParamName(i, p.Name)] = p.Value
		}
	}
	m, err := model.New(d, weights)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGenerateEach(t *testing.T) {
	m := tinyLM(t)
	opt := model.GenerateOptions{Temperature: 1, TopK: 4, TopP: 0.9, Seed: 7}
	want, err := m.Generate([]int{0, 1}, 12, opt)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	opt.Each = func(id int) error { seen = append(seen, id); return nil }
	got, err := m.Generate([]int{0, 1}, 12, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || !slices.Equal(seen, want) {
		t.Fatalf("with Each: returned %v and saw %v, without: %v", got, seen, want)
	}
	stop := errors.New("enough")
	seen = nil
	opt.Each = func(id int) error {
		seen = append(seen, id)
		if len(seen) == 3 {
			return stop
		}
		return nil
	}
	got, err = m.Generate([]int{0, 1}, 12, opt)
	if !errors.Is(err, stop) || !slices.Equal(got, want[:3]) {
		t.Fatalf("Each stopping at the third token: got %v, %v; want %v, %v", got, err, want[:3], stop)
	}
}

func TestGenerateTopPRange(t *testing.T) {
	m := tinyLM(t)
	for _, p := range []float64{-0.1, 1.5} {
		if _, err := m.Generate([]int{0}, 1, model.GenerateOptions{Temperature: 1, TopP: p}); err == nil {
			t.Errorf("top_p %v: no error", p)
		}
	}
}
