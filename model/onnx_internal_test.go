package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestEveryLayerTypeExports: every layer type of nn's table writes its ONNX
// form, or says it has none (ErrNoONNX), which export reports naming the
// layer; at least the image and dense types have one.
func TestEveryLayerTypeExports(t *testing.T) {
	forms := 0
	for _, typ := range nn.LayerTypes() {
		err := (nn.Spec{Type: typ, Kernel: 1, Units: 1, Channels: 1}).ONNX(newGraph(nil, 4))
		switch {
		case errors.Is(err, nn.ErrNoONNX):
			// a sequence model, which these types are so far: its first layer has none
			emb := nn.Spec{Type: "embedding", Dim: 2, Vocab: 5}
			d := Description{Format: Format, Sample: []int{3}, Loss: nn.CrossEntropy, Input: Input{Divide: 1},
				Layers: []nn.Spec{emb, {Type: typ, Heads: 1}}}
			if typ == emb.Type {
				d.Layers = d.Layers[:1]
			}
			if _, err := exportONNX(&d, nil); err == nil || !strings.Contains(err.Error(), "layer 0 (embedding): no ONNX form") {
				t.Errorf("layer type %s without an ONNX form: export error %v, want one naming layer 0 and saying so", typ, err)
			}
		case err != nil:
			t.Errorf("layer type %s: %v", typ, err)
		default:
			forms++
		}
	}
	if forms < 15 {
		t.Errorf("%d layer types have an ONNX form, want the 15 dense and image ones at least", forms)
	}
	if err := (nn.Spec{Type: "swish"}).ONNX(newGraph(nil, 4)); err == nil || !strings.Contains(err.Error(), "unknown layer type") {
		t.Errorf("layer type swish: %v, want unknown layer type", err)
	}
}

// TestExportErrors: what cannot be exported is an error naming the layer or
// the tensor.
func TestExportErrors(t *testing.T) {
	d := Description{Format: Format, Sample: []int{3}, Loss: nn.MSE, Input: Input{Divide: 1},
		Layers: []nn.Spec{{Type: "linear", Units: 2}, {Type: "relu"}}}
	full := map[string]*tensor.Tensor{"0.weight": tensor.Zeros(tensor.Float32, 2, 3), "0.bias": tensor.Zeros(tensor.Float32, 2)}
	unknown := d
	unknown.Layers = append([]nn.Spec{}, d.Layers...)
	unknown.Layers[1].Type = "swish"
	tests := []struct {
		name    string
		d       Description
		weights map[string]*tensor.Tensor
		want    string
	}{
		{"unknown type", unknown, full, `layer 1: unknown type "swish"`},
		{"missing bias", d, map[string]*tensor.Tensor{"0.weight": full["0.weight"]}, `"0.bias"`},
		{"float64 weights", d, map[string]*tensor.Tensor{"0.weight": tensor.Zeros(tensor.Float64, 2, 3), "0.bias": full["0.bias"]}, `"0.weight"`},
	}
	for _, tc := range tests {
		if _, err := exportONNX(&tc.d, tc.weights); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "model: ") {
			t.Errorf("%s: %v, want an error containing %s", tc.name, err, tc.want)
		}
	}
	if _, err := exportONNX(&d, full); err != nil {
		t.Errorf("the whole model: %v", err)
	}
}
