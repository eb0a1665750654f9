package nn_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

var specModel = []nn.Spec{
	{Type: "linear", Units: 16, Init: nn.HeUniform},
	{Type: "prelu"},
	{Type: "dropout", P: 0.2},
	{Type: "linear", Units: 12, Init: nn.XavierNormal},
	{Type: "layernorm"},
	{Type: "gelu", Approximate: true},
	{Type: "linear", Units: 4, Init: nn.XavierUniform},
}

// TestBuildRange: any range of a model builds the layers, weights included,
// that building the whole model gives there: a stage builds only its own.
func TestBuildRange(t *testing.T) {
	whole, err := nn.Build(specModel, 9, 7, tensor.Float32, 0, len(specModel))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, 3}, {3, 7}, {2, 5}, {6, 7}, {4, 4}} {
		part, err := nn.Build(specModel, 9, 7, tensor.Float32, r[0], r[1])
		if err != nil {
			t.Fatalf("Build range %v: %v", r, err)
		}
		if len(part) != r[1]-r[0] {
			t.Fatalf("Build range %v: %d layers", r, len(part))
		}
		for k, l := range part {
			w := whole[r[0]+k]
			if l.Kind() != w.Kind() || reflect.TypeOf(l) != reflect.TypeOf(w) {
				t.Errorf("range %v: layer %d is %s, the whole model has %s", r, r[0]+k, l.Kind(), w.Kind())
			}
			ps, ws := l.Params(), w.Params()
			for j := range ps {
				if !slices.Equal(ps[j].Value.Float32s(), ws[j].Value.Float32s()) {
					t.Errorf("range %v: layer %d %s differs from the whole model's", r, r[0]+k, ps[j].Name)
				}
			}
		}
	}
	// a different seed draws different weights
	other, _ := nn.Build(specModel, 9, 8, tensor.Float32, 0, 1)
	if slices.Equal(other[0].Params()[0].Value.Float32s(), whole[0].Params()[0].Value.Float32s()) {
		t.Error("seeds 7 and 8 drew the same first-layer weights")
	}
}

func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		specs  []nn.Spec
		lo, hi int
		want   string
	}{
		{[]nn.Spec{{Type: "relu"}, {Type: "conv9d"}}, 0, 2, `nn: layer 1: unknown type "conv9d" (want one of [linear relu`},
		{[]nn.Spec{{Type: "linear", Units: 0, Init: nn.XavierUniform}}, 0, 1, "nn: layer 0 (linear): nn: linear layer needs positive sizes"},
		{[]nn.Spec{{Type: "dropout", P: 1.5}}, 0, 1, "nn: layer 0 (dropout): nn: dropout p = 1.5 is outside [0, 1)"},
		{[]nn.Spec{{Type: "relu"}}, 0, 2, "nn: layers [0, 2) of a model of 1"},
		{[]nn.Spec{{Type: "relu"}}, 1, 0, "nn: layers [1, 0) of a model of 1"},
	} {
		_, err := nn.Build(c.specs, 4, 1, tensor.Float32, c.lo, c.hi)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build(%v, [%d, %d)): error %v, want one containing %q", c.specs, c.lo, c.hi, err, c.want)
		}
	}
}

func TestLayerKeys(t *testing.T) {
	for _, c := range []struct {
		typ  string
		keys []string
		ok   bool
	}{
		{"linear", []string{"units", "init"}, true},
		{"relu", nil, true},
		{"dropout", []string{"p"}, true},
		{"gelu", []string{"approximate"}, true},
		{"leaky_relu", []string{"alpha"}, true},
		{"conv9d", nil, false},
	} {
		keys, ok := nn.LayerKeys(c.typ)
		if ok != c.ok || !slices.Equal(keys, c.keys) {
			t.Errorf("LayerKeys(%q) = %v, %v; want %v, %v", c.typ, keys, ok, c.keys, c.ok)
		}
	}
	// every type builds after a linear layer
	for _, typ := range nn.LayerTypes() {
		s := nn.Spec{Type: typ, Units: 3, Init: nn.XavierUniform, Alpha: 0.1, P: 0.1}
		ls, err := nn.Build([]nn.Spec{{Type: "linear", Units: 5, Init: nn.XavierUniform}, s}, 4, 1, tensor.Float32, 0, 2)
		if err != nil || len(ls) != 2 || ls[1].Kind() != typ {
			t.Errorf("Build of a %s layer: %v, %v", typ, ls, err)
		}
	}
}

// ExampleBuild builds a model from plain data, and the second half of it
// alone, as a pipeline stage on another host would.
func ExampleBuild() {
	specs := []nn.Spec{
		{Type: "linear", Units: 32, Init: nn.HeUniform},
		{Type: "relu"},
		{Type: "linear", Units: 10, Init: nn.XavierUniform},
	}
	whole, _ := nn.Build(specs, 64, 1, tensor.Float32, 0, len(specs))
	tail, _ := nn.Build(specs, 64, 1, tensor.Float32, 1, 3)
	fmt.Println(len(whole), len(tail), tail[1].Kind(), slices.Equal(whole[2].Params()[0].Value.Float32s(), tail[1].Params()[0].Value.Float32s()))
	// Output: 3 2 linear true
}
