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
		if err := s.ONNX(g); err != nil {
			return nil, fmt.Errorf("model: layer %d (%s): %w", i, s.Type, err)
		}
		g.rank = 1 + len(shapes[i])
	}
	if g.err != nil {
		return nil, g.err
	}
	// Predict's rows are flat and its head is over them: so is the output.
	g.prefix = "predict"
	g.Flatten()
	if !d.Regression() {
		if d.Loss == nn.BCEWithLogits {
			g.apply("Sigmoid", nil)
		} else {
			g.apply("Softmax", nil, nn.AttrInt("axis", 1))
		}
	}
	if len(g.GraphProto.Node) == 0 {
		g.apply("Identity", nil) // only dropouts: the graph still needs a node
	}
	g.GraphProto.Node[len(g.GraphProto.Node)-1].Output[0] = "output"

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

// X, SetX, Node, Param, Const and Flatten make graph an nn.ONNXGraph: the
// layer table writes each layer's nodes.
func (g *graph) X() string     { return g.x }
func (g *graph) SetX(v string) { g.x = v }

// Flatten makes an image [N, C, H, W] the flat rows [N, C·H·W] it is to
// the layers.
func (g *graph) Flatten() {
	if g.rank > 2 {
		g.apply("Flatten", nil, nn.AttrInt("axis", 1))
		g.rank = 2
	}
}

// apply appends op on the current value and more inputs, and makes its
// output the current value.
func (g *graph) apply(op string, more []string, attrs ...nn.ONNXAttr) {
	g.x = g.Node(op, append([]string{g.x}, more...), attrs...)
}

// Node appends op on inputs and returns its output, named as the node:
// "<layer>.<type>/<op>", with "_<n>" after the first of a layer's same ops.
func (g *graph) Node(op string, inputs []string, attrs ...nn.ONNXAttr) string {
	name := g.prefix + "/" + op
	if n := g.names[name]; n > 0 {
		g.names[name]++
		name = fmt.Sprintf("%s_%d", name, n)
	} else {
		g.names[name] = 1
	}
	var as []*onnx.AttributeProto
	for _, a := range attrs {
		as = append(as, attribute(a))
	}
	g.GraphProto.Node = append(g.GraphProto.Node, &onnx.NodeProto{Name: proto.String(name), OpType: proto.String(op),
		Input: inputs, Output: []string{name}, Attribute: as})
	return name
}

// Param returns the initializer of the current layer's tensor named name,
// adding it on first use.
func (g *graph) Param(name string) string {
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

// Const returns a shared float32 scalar initializer of value v.
func (g *graph) Const(v float64) string {
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

// attribute is a as ONNX keeps it.
func attribute(a nn.ONNXAttr) *onnx.AttributeProto {
	switch a.Kind {
	case nn.ONNXInt:
		return &onnx.AttributeProto{Name: proto.String(a.Name), Type: onnx.AttributeProto_INT.Enum(), I: proto.Int64(a.Ints[0])}
	case nn.ONNXInts:
		return &onnx.AttributeProto{Name: proto.String(a.Name), Type: onnx.AttributeProto_INTS.Enum(), Ints: a.Ints}
	default:
		return &onnx.AttributeProto{Name: proto.String(a.Name), Type: onnx.AttributeProto_FLOAT.Enum(), F: proto.Float32(float32(a.Float))}
	}
}
