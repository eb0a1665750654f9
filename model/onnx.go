package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/internal/onnx"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// ONNXOpset is the ONNX operator set ExportONNX writes. 13 is the first
// whose Softmax works over one axis, as ours does, and runtimes from
// onnxruntime 1.6 on read it; GELU and layer norm, which became operators
// only in opsets 20 and 17, are written as the few operators they are made
// of, so that those runtimes take them too.
const ONNXOpset = 13

// onnxIRVersion is the IR version of ONNX 1.8, the release that brought
// opset 13: the oldest that may hold it.
const onnxIRVersion = 7

// ExportONNX writes m as an ONNX model (ONNXOpset) whose output equals
// Predict's: its graph takes the features, "input", float32 [N, sample
// shape...] ([N, C, H, W] for images, [N, F] otherwise, N any batch size),
// and gives "output", float32 [N, outputs], with the Predict head (softmax
// or sigmoid) for a classifier. The weights are initializers named as in a
// checkpoint ("0.weight", "1.running_mean"). The model's metadata holds the
// classes ("classes") and how raw values become features ("input"), as
// JSON. A layer type with no ONNX form is an error naming the layer.
func (m *Model) ExportONNX(w io.Writer) error {
	mp, err := exportONNX(&m.Description, m.weights)
	if err != nil {
		return err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(mp)
	if err != nil {
		return fmt.Errorf("model: onnx: %w", err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("model: writing the ONNX model: %w", err)
	}
	return nil
}

// exportONNX returns the ONNX model of d with the given weights.
func exportONNX(d *Description, weights map[string]*tensor.Tensor) (*onnx.ModelProto, error) {
	shapes, err := nn.OutShapes(d.Layers, d.Sample)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	g := newGraph(weights, 1+len(d.Sample))
	for i, s := range d.Layers {
		g.layer = i
		g.prefix = fmt.Sprintf("%d.%s", i, s.Type)
		if err := g.add(s); err != nil {
			return nil, fmt.Errorf("model: layer %d (%s): %w", i, s.Type, err)
		}
		g.rank = 1 + len(shapes[i])
	}
	if g.err != nil {
		return nil, g.err
	}
	// Predict's rows are flat and its head is over them: so is the output.
	g.prefix = "predict"
	g.flatten()
	if !d.Regression() {
		if d.Loss == nn.BCEWithLogits {
			g.apply("Sigmoid", nil)
		} else {
			g.apply("Softmax", nil, attrInt("axis", 1))
		}
	}
	if len(g.Node) == 0 {
		g.apply("Identity", nil) // only dropouts: the graph still needs a node
	}
	g.Node[len(g.Node)-1].Output[0] = "output"

	out := 1
	if n := len(shapes); n > 0 {
		out = tensor.SizeOf(shapes[n-1])
	}
	g.Input = []*onnx.ValueInfoProto{valueInfo("input", d.Sample)}
	g.Output = []*onnx.ValueInfoProto{valueInfo("output", []int{out})}
	classes, _ := json.Marshal(append([]string{}, d.Classes...)) // [] for regression, not null
	input, _ := json.Marshal(d.Input)
	return &onnx.ModelProto{
		IrVersion:    proto.Int64(onnxIRVersion),
		OpsetImport:  []*onnx.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(ONNXOpset)}},
		ProducerName: proto.String("pipetrain"),
		Graph:        g.GraphProto,
		MetadataProps: []*onnx.StringStringEntryProto{
			{Key: proto.String("classes"), Value: proto.String(string(classes))},
			{Key: proto.String("input"), Value: proto.String(string(input))},
		},
	}, nil
}

// graph builds an ONNX graph layer by layer: x is the value the next node
// reads, of rank rank ([N, sample shape...] as nn.OutShapes gives it).
type graph struct {
	*onnx.GraphProto
	weights map[string]*tensor.Tensor
	x       string
	rank    int
	layer   int
	prefix  string             // the layer's, so a node's name says which layer it is of
	names   map[string]int     // uses of each node name, to make them unique
	consts  map[float32]string // scalar initializers, shared
	err     error              // the first missing weight
}

// newGraph returns an empty graph whose input, "input", has the given rank.
func newGraph(weights map[string]*tensor.Tensor, rank int) *graph {
	return &graph{GraphProto: &onnx.GraphProto{Name: proto.String("pipetrain")}, weights: weights,
		x: "input", rank: rank, names: map[string]int{}, consts: map[float32]string{}}
}

// add appends the nodes of layer s. The defaults of the keys are those of
// nn's layer table, which Build applies.
func (g *graph) add(s nn.Spec) error {
	switch s.Type {
	case "linear":
		g.flatten() // a linear layer takes the flattened sample
		g.apply("Gemm", []string{g.param("weight"), g.param("bias")}, attrInt("transB", 1))
	case "relu":
		g.apply("Relu", nil)
	case "leaky_relu":
		g.apply("LeakyRelu", nil, attrFloat("alpha", s.Alpha))
	case "prelu":
		g.apply("PRelu", []string{g.param("alpha")})
	case "sigmoid":
		g.apply("Sigmoid", nil)
	case "tanh":
		g.apply("Tanh", nil)
	case "gelu":
		g.gelu(s.Approximate)
	case "softmax":
		g.apply("Softmax", nil, attrInt("axis", 1))
	case "dropout":
		// the identity in inference: no node
	case "layernorm":
		g.layerNorm(1e-5) // nn.LayerNorm's eps, which no key sets
	case "conv2d":
		k, p := int64(s.Kernel), int64(s.Padding)
		g.apply("Conv", []string{g.param("weight"), g.param("bias")}, attrInts("kernel_shape", k, k),
			attrInts("strides", repeat(int64(max(1, s.Stride)), 2)...), attrInts("pads", repeat(p, 4)...))
	case "maxpool2d":
		g.pool("MaxPool", s)
	case "avgpool2d":
		g.pool("AveragePool", s) // unpadded: every window is whole, count_include_pad does not matter
	case "batchnorm":
		eps := s.Eps
		if eps == 0 {
			eps = 1e-5
		}
		// in inference, with the running statistics; the momentum plays no part
		g.apply("BatchNormalization", []string{g.param("weight"), g.param("bias"), g.param("running_mean"), g.param("running_var")},
			attrFloat("epsilon", eps))
	case "flatten":
		g.flatten()
	default:
		return fmt.Errorf("no ONNX form for this layer type")
	}
	return nil
}

// pool appends a MaxPool or AveragePool node; stride 0 means the kernel.
func (g *graph) pool(op string, s nn.Spec) {
	stride := s.Stride
	if stride == 0 {
		stride = s.Kernel
	}
	k, st := int64(s.Kernel), int64(stride)
	g.apply(op, nil, attrInts("kernel_shape", k, k), attrInts("strides", st, st))
}

// gelu appends x·Φ(x) as ops.GELU computes it: 0.5·x·(1 + erf(x/√2)), or
// with the tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func (g *graph) gelu(approximate bool) {
	x := g.x
	if approximate {
		cube := g.node("Mul", []string{g.node("Mul", []string{x, x}), x})
		inner := g.node("Add", []string{x, g.node("Mul", []string{cube, g.constant(0.044715)})})
		g.x = g.node("Mul", []string{inner, g.constant(math.Sqrt(2 / math.Pi))})
		g.apply("Tanh", nil)
	} else {
		g.x = g.node("Mul", []string{x, g.constant(1 / math.Sqrt2)})
		g.apply("Erf", nil)
	}
	g.apply("Add", []string{g.constant(1)})
	g.x = g.node("Mul", []string{x, g.x})
	g.apply("Mul", []string{g.constant(0.5)})
}

// layerNorm appends nn.LayerNorm over axis 1: (x − mean)/√(var + eps)·weight
// + bias, with the biased variance.
func (g *graph) layerNorm(eps float64) {
	x := g.x
	mean := g.node("ReduceMean", []string{x}, attrInts("axes", 1), attrInt("keepdims", 1))
	d := g.node("Sub", []string{x, mean})
	v := g.node("ReduceMean", []string{g.node("Mul", []string{d, d})}, attrInts("axes", 1), attrInt("keepdims", 1))
	std := g.node("Sqrt", []string{g.node("Add", []string{v, g.constant(eps)})})
	g.x = g.node("Div", []string{d, std})
	g.apply("Mul", []string{g.param("weight")})
	g.apply("Add", []string{g.param("bias")})
}

// flatten makes an image [N, C, H, W] the flat rows [N, C·H·W] it is to
// the layers.
func (g *graph) flatten() {
	if g.rank > 2 {
		g.apply("Flatten", nil, attrInt("axis", 1))
		g.rank = 2
	}
}

// apply appends op on the current value and more inputs, and makes its
// output the current value.
func (g *graph) apply(op string, more []string, attrs ...*onnx.AttributeProto) {
	g.x = g.node(op, append([]string{g.x}, more...), attrs...)
}

// node appends op on inputs and returns its output, named as the node:
// "<layer>.<type>/<op>", with "_<n>" after the first of a layer's same ops.
func (g *graph) node(op string, inputs []string, attrs ...*onnx.AttributeProto) string {
	name := g.prefix + "/" + op
	if n := g.names[name]; n > 0 {
		g.names[name]++
		name = fmt.Sprintf("%s_%d", name, n)
	} else {
		g.names[name] = 1
	}
	g.Node = append(g.Node, &onnx.NodeProto{Name: proto.String(name), OpType: proto.String(op),
		Input: inputs, Output: []string{name}, Attribute: attrs})
	return name
}

// param returns the initializer of the current layer's tensor named name,
// adding it on first use.
func (g *graph) param(name string) string {
	name = nn.ParamName(g.layer, name)
	for _, t := range g.Initializer {
		if t.GetName() == name {
			return name
		}
	}
	w, ok := g.weights[name]
	if !ok || w.DType() != tensor.Float32 {
		if g.err == nil {
			g.err = fmt.Errorf("model: no float32 tensor %q among the weights", name)
		}
		return name
	}
	g.Initializer = append(g.Initializer, initializer(name, w.Data32(), w.Shape()))
	return name
}

// constant returns a shared float32 scalar initializer of value v.
func (g *graph) constant(v float64) string {
	f := float32(v)
	if name, ok := g.consts[f]; ok {
		return name
	}
	name := fmt.Sprintf("const/%g", f)
	g.consts[f] = name
	g.Initializer = append(g.Initializer, initializer(name, []float32{f}, nil))
	return name
}

// initializer is a float32 tensor as ONNX keeps it: little-endian raw data.
func initializer(name string, data []float32, shape []int) *onnx.TensorProto {
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	dims := make([]int64, len(shape))
	for i, d := range shape {
		dims[i] = int64(d)
	}
	return &onnx.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnx.TensorProto_FLOAT)), Dims: dims, RawData: raw}
}

// valueInfo is a float32 graph input or output of shape [N, sample...],
// N free.
func valueInfo(name string, sample []int) *onnx.ValueInfoProto {
	dims := []*onnx.TensorShapeProto_Dimension{{Value: &onnx.TensorShapeProto_Dimension_DimParam{DimParam: "N"}}}
	for _, d := range sample {
		dims = append(dims, &onnx.TensorShapeProto_Dimension{Value: &onnx.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
	}
	return &onnx.ValueInfoProto{Name: proto.String(name), Type: &onnx.TypeProto{Value: &onnx.TypeProto_TensorType{
		TensorType: &onnx.TypeProto_Tensor{ElemType: proto.Int32(int32(onnx.TensorProto_FLOAT)), Shape: &onnx.TensorShapeProto{Dim: dims}}}}}
}

func attrInt(name string, v int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: proto.String(name), Type: onnx.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: proto.String(name), Type: onnx.AttributeProto_INTS.Enum(), Ints: v}
}

func attrFloat(name string, v float64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: proto.String(name), Type: onnx.AttributeProto_FLOAT.Enum(), F: proto.Float32(float32(v))}
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
