package nn

import (
	"errors"
	"fmt"
	"math"
)

// ONNXGraph is what a layer writes its ONNX form to, one node at a time
// (package model builds the ONNX protobuf behind it). Values are named;
// X is the one the layer reads, and SetX names the one the next layer
// reads.
type ONNXGraph interface {
	X() string
	SetX(v string)
	// Node appends operator op on inputs and returns its output.
	Node(op string, inputs []string, attrs ...ONNXAttr) string
	// Param returns the layer's tensor named as in Params or Buffers
	// ("weight", "running_mean"), as an initializer.
	Param(name string) string
	// Const returns a float32 scalar initializer.
	Const(v float64) string
	// Flatten makes an image [N, C, H, W] the flat rows [N, C·H·W] it is
	// to the layers; a flat value stays as it is.
	Flatten()
}

// ONNXAttrKind is the type of an ONNX attribute.
type ONNXAttrKind int

const (
	ONNXInt ONNXAttrKind = iota
	ONNXInts
	ONNXFloat
)

// ONNXAttr is an operator's attribute: Ints[0] for an ONNXInt.
type ONNXAttr struct {
	Name  string
	Kind  ONNXAttrKind
	Ints  []int64
	Float float64
}

// AttrInt, AttrInts and AttrFloat make attributes.
func AttrInt(name string, v int64) ONNXAttr {
	return ONNXAttr{Name: name, Kind: ONNXInt, Ints: []int64{v}}
}

func AttrInts(name string, v ...int64) ONNXAttr { return ONNXAttr{Name: name, Kind: ONNXInts, Ints: v} }

func AttrFloat(name string, v float64) ONNXAttr {
	return ONNXAttr{Name: name, Kind: ONNXFloat, Float: v}
}

// ErrNoONNX is the error of a layer type with no ONNX form.
var ErrNoONNX = errors.New("no ONNX form for this layer type")

// ONNX appends the layer's ONNX form to g, for inference: what Forward
// computes without Train. The defaults of the keys are the table's, which
// Check applies.
func (s Spec) ONNX(g ONNXGraph) error {
	t, ok := lookup(s.Type)
	if !ok {
		return fmt.Errorf("unknown layer type %q", s.Type)
	}
	if t.onnx == nil {
		return ErrNoONNX
	}
	t.onnx(s, g)
	return nil
}

// onnxApply appends op on the current value and more inputs, and makes its
// output the current value.
func onnxApply(g ONNXGraph, op string, more []string, attrs ...ONNXAttr) {
	g.SetX(g.Node(op, append([]string{g.X()}, more...), attrs...))
}

// onnxOp is the form of a layer that is one operator on its input and
// parameters.
func onnxOp(op string, params ...string) func(Spec, ONNXGraph) {
	return func(_ Spec, g ONNXGraph) {
		var more []string
		for _, p := range params {
			more = append(more, g.Param(p))
		}
		onnxApply(g, op, more)
	}
}

// onnxGELU is x·Φ(x) as ops.GELU computes it: 0.5·x·(1 + erf(x/√2)), or
// with the tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
// Opset 13 has no Gelu: it is written as the operators it is made of.
func onnxGELU(s Spec, g ONNXGraph) {
	x := g.X()
	if s.Approximate {
		cube := g.Node("Mul", []string{g.Node("Mul", []string{x, x}), x})
		inner := g.Node("Add", []string{x, g.Node("Mul", []string{cube, g.Const(0.044715)})})
		g.SetX(g.Node("Mul", []string{inner, g.Const(math.Sqrt(2 / math.Pi))}))
		onnxApply(g, "Tanh", nil)
	} else {
		g.SetX(g.Node("Mul", []string{x, g.Const(1 / math.Sqrt2)}))
		onnxApply(g, "Erf", nil)
	}
	onnxApply(g, "Add", []string{g.Const(1)})
	g.SetX(g.Node("Mul", []string{x, g.X()}))
	onnxApply(g, "Mul", []string{g.Const(0.5)})
}

// onnxLayerNorm is LayerNorm over the last axis: (x − mean)/√(var + eps)·
// weight + bias, with the biased variance. Opset 13 has no
// LayerNormalization: it is written as the operators it is made of.
func onnxLayerNorm(eps float64) func(Spec, ONNXGraph) {
	return func(_ Spec, g ONNXGraph) {
		x := g.X()
		mean := g.Node("ReduceMean", []string{x}, AttrInts("axes", -1), AttrInt("keepdims", 1))
		d := g.Node("Sub", []string{x, mean})
		v := g.Node("ReduceMean", []string{g.Node("Mul", []string{d, d})}, AttrInts("axes", -1), AttrInt("keepdims", 1))
		std := g.Node("Sqrt", []string{g.Node("Add", []string{v, g.Const(eps)})})
		g.SetX(g.Node("Div", []string{d, std}))
		onnxApply(g, "Mul", []string{g.Param("weight")})
		onnxApply(g, "Add", []string{g.Param("bias")})
	}
}

// onnxPool is a MaxPool or AveragePool; stride 0 means the kernel.
func onnxPool(op string) func(Spec, ONNXGraph) {
	return func(s Spec, g ONNXGraph) {
		stride := s.Stride
		if stride == 0 {
			stride = s.Kernel
		}
		k, st := int64(s.Kernel), int64(stride)
		onnxApply(g, op, nil, AttrInts("kernel_shape", k, k), AttrInts("strides", st, st))
	}
}
