package nn

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/pipetrain/pipetrain/tensor"
)

// Spec describes a layer as plain data: its type and the keys of its type.
// A model is a list of specs, a seed and an input width; Build makes its
// layers anywhere from them (a stage on another host builds its own), with
// the same weights bit for bit, since layer i draws from its own stream.
type Spec struct {
	Type        string  `json:"type"`
	Units       int     `json:"units,omitempty"`       // linear: output features
	Init        Init    `json:"init,omitempty"`        // linear
	Alpha       float64 `json:"alpha,omitempty"`       // leaky_relu
	P           float64 `json:"p,omitempty"`           // dropout
	Approximate bool    `json:"approximate,omitempty"` // gelu: the tanh form
}

// layerType is one row of the table of layer types: the keys the type takes
// besides "type", its output width for an input width, and its constructor.
type layerType struct {
	name  string
	keys  []string
	width func(s Spec, in int) int
	build func(s Spec, b built) (Layer, error)
}

// built is what a constructor may use: the layer's place in the model, its
// input width, the model's seed and the dtype.
type built struct {
	index, in int
	seed      uint64
	dt        tensor.DType
}

func same(_ Spec, in int) int { return in }

// layerTypes is the one table of layer types, in the order messages list
// them: adding a type is adding a row.
var layerTypes = []layerType{
	{name: "linear", keys: []string{"units", "init"},
		width: func(s Spec, _ int) int { return s.Units },
		build: func(s Spec, b built) (Layer, error) {
			// layer i draws from PCG stream (seed, i): its weights do not
			// depend on the layers before it
			return NewLinear(b.dt, b.in, s.Units, s.Init, rand.New(rand.NewPCG(b.seed, uint64(b.index))))
		}},
	{name: "relu", width: same, build: func(Spec, built) (Layer, error) { return NewReLU(), nil }},
	{name: "leaky_relu", keys: []string{"alpha"}, width: same,
		build: func(s Spec, _ built) (Layer, error) { return NewLeakyReLU(s.Alpha), nil }},
	{name: "prelu", width: same, build: func(_ Spec, b built) (Layer, error) { return NewPReLU(b.dt), nil }},
	{name: "sigmoid", width: same, build: func(Spec, built) (Layer, error) { return NewSigmoid(), nil }},
	{name: "tanh", width: same, build: func(Spec, built) (Layer, error) { return NewTanh(), nil }},
	{name: "gelu", keys: []string{"approximate"}, width: same,
		build: func(s Spec, _ built) (Layer, error) { return NewGELU(s.Approximate), nil }},
	{name: "softmax", width: same, build: func(Spec, built) (Layer, error) { return NewSoftmax(), nil }},
	{name: "dropout", keys: []string{"p"}, width: same,
		build: func(s Spec, b built) (Layer, error) { return NewDropout(s.P, b.seed, b.index) }},
	{name: "layernorm", width: same, build: func(_ Spec, b built) (Layer, error) { return NewLayerNorm(b.dt, b.in), nil }},
}

// LayerTypes lists the layer types.
func LayerTypes() []string {
	var out []string
	for _, t := range layerTypes {
		out = append(out, t.name)
	}
	return out
}

func lookup(typ string) (layerType, bool) {
	for _, t := range layerTypes {
		if t.name == typ {
			return t, true
		}
	}
	return layerType{}, false
}

// LayerKeys returns the keys a layer type takes besides "type", and whether
// the type exists.
func LayerKeys(typ string) ([]string, bool) {
	t, ok := lookup(typ)
	return slices.Clone(t.keys), ok
}

// Build makes layers [lo, hi) of the model specs for inputs of width
// features: the same layers, weights included, whatever range is built, so
// a stage can build only its own. Layer i draws its random numbers from the
// streams of (seed, i). An error names the layer.
func Build(specs []Spec, features int, seed uint64, dt tensor.DType, lo, hi int) ([]Layer, error) {
	if lo < 0 || hi > len(specs) || lo > hi {
		return nil, fmt.Errorf("nn: layers [%d, %d) of a model of %d", lo, hi, len(specs))
	}
	var out []Layer
	width := features
	for i, s := range specs[:hi] {
		t, ok := lookup(s.Type)
		if !ok {
			return nil, fmt.Errorf("nn: layer %d: unknown type %q (want one of %v)", i, s.Type, LayerTypes())
		}
		if i >= lo {
			l, err := t.build(s, built{index: i, in: width, seed: seed, dt: dt})
			if err != nil {
				return nil, fmt.Errorf("nn: layer %d (%s): %w", i, s.Type, err)
			}
			out = append(out, l)
		}
		width = t.width(s, width)
	}
	return out, nil
}
