package model_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pipetrain/pipetrain/internal/onnx"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// The models the ONNX tests export: an MNIST MLP and CNN, and between
// them and the two below every layer type, every key that changes a node
// and every Predict head.
var (
	mnistMLP = model.Description{
		Format: model.Format, Sample: []int{784}, Seed: 1, Loss: nn.CrossEntropy, Classes: digits,
		Input: model.Input{Data: "mnist", Divide: 255},
		Layers: []nn.Spec{{Type: "linear", Units: 128, Init: nn.HeUniform}, {Type: "relu"},
			{Type: "linear", Units: 10, Init: nn.TorchDefault}},
	}
	mnistCNN = model.Description{
		Format: model.Format, Sample: []int{1, 28, 28}, Seed: 2, Loss: nn.CrossEntropy, Classes: digits,
		Input: model.Input{Data: "mnist", Divide: 255},
		Layers: []nn.Spec{{Type: "conv2d", Channels: 4, Kernel: 3, Padding: 1, Init: nn.TorchDefault},
			{Type: "batchnorm", Eps: 1e-3}, {Type: "relu"}, {Type: "maxpool2d", Kernel: 2},
			{Type: "conv2d", Channels: 8, Kernel: 3, Init: nn.TorchDefault}, {Type: "relu"},
			{Type: "avgpool2d", Kernel: 2}, {Type: "flatten"}, {Type: "dropout", P: 0.5},
			{Type: "linear", Units: 10, Init: nn.TorchDefault}},
	}
	// dense layers on flat samples, a multi-label (sigmoid) head
	denseAll = model.Description{
		Format: model.Format, Sample: []int{6}, Seed: 3, Loss: nn.BCEWithLogits, Classes: []string{"a", "b", "c", "d", "e"},
		Input: model.Input{Data: "csv", Divide: 1},
		Layers: []nn.Spec{{Type: "linear", Units: 16, Init: nn.TorchDefault}, {Type: "leaky_relu", Alpha: 0.1},
			{Type: "prelu"}, {Type: "layernorm"}, {Type: "gelu"}, {Type: "linear", Units: 12, Init: nn.TorchDefault},
			{Type: "gelu", Approximate: true}, {Type: "batchnorm"}, {Type: "tanh"}, {Type: "dropout", P: 0.1},
			{Type: "sigmoid"}, {Type: "flatten"}, {Type: "linear", Units: 5, Init: nn.TorchDefault}, {Type: "softmax"}},
	}
	// image layers on an image that a linear layer reads unflattened, and
	// an image as the output: regression, no head
	imageAll = model.Description{
		Format: model.Format, Sample: []int{2, 6, 6}, Seed: 4, Loss: nn.MSE,
		Input: model.Input{Data: "csv", Divide: 1},
		Layers: []nn.Spec{{Type: "batchnorm"}, {Type: "conv2d", Channels: 3, Kernel: 3, Stride: 2, Padding: 1, Init: nn.TorchDefault},
			{Type: "prelu"}, {Type: "leaky_relu", Alpha: 0.2}, {Type: "gelu"}, {Type: "sigmoid"}, {Type: "tanh"},
			{Type: "avgpool2d", Kernel: 2, Stride: 1}, {Type: "conv2d", Channels: 2, Kernel: 1, Init: nn.TorchDefault}},
	}
	// a linear layer without a bias reading an image unflattened
	imageMLP = model.Description{
		Format: model.Format, Sample: []int{1, 4, 4}, Seed: 5, Loss: nn.MSE,
		Input:  model.Input{Data: "csv", Divide: 1},
		Layers: []nn.Spec{{Type: "linear", Units: 3, Init: nn.TorchDefault, Bias: new(false)}},
	}
	digits = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
)

// randomModel returns d with its layers' initial weights plus noise, and
// positive running variances, so that no bias, gain or statistic is the
// identity value that would hide a wiring mistake.
func randomModel(t testing.TB, d model.Description) *model.Model {
	layers, err := nn.BuildShape(d.Layers, d.Sample, d.Seed, tensor.Float32, 0, len(d.Layers))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(d.Seed, 9))
	weights := map[string]*tensor.Tensor{}
	add := func(i int, name string, v *tensor.Tensor) {
		x := v.Clone()
		for j := range x.Data32() {
			if name == "running_var" {
				x.Data32()[j] = 0.5 + rng.Float32()
			} else {
				x.Data32()[j] += float32(0.2 * rng.NormFloat64())
			}
		}
		weights[fmt.Sprintf("%d.%s", i, name)] = x
	}
	for i, l := range layers {
		for _, p := range l.Params() {
			add(i, p.Name, p.Value)
		}
		for _, b := range nn.BuffersOf(l) {
			add(i, b.Name, b.Value)
		}
	}
	m, err := model.New(d, weights)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func exportONNX(t testing.TB, m *model.Model) []byte {
	var b bytes.Buffer
	if err := m.ExportONNX(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// describe renders a node as its operator, the initializers it reads and
// its attributes: "Gemm 0.weight 0.bias transB=1".
func describe(n *onnx.NodeProto, inits map[string]bool) string {
	s := []string{n.GetOpType()}
	for _, in := range n.Input {
		if inits[in] {
			s = append(s, in)
		}
	}
	for _, a := range n.Attribute {
		switch a.GetType() {
		case onnx.AttributeProto_INT:
			s = append(s, fmt.Sprintf("%s=%d", a.GetName(), a.GetI()))
		case onnx.AttributeProto_INTS:
			s = append(s, fmt.Sprintf("%s=%v", a.GetName(), a.GetInts()))
		case onnx.AttributeProto_FLOAT:
			s = append(s, fmt.Sprintf("%s=%g", a.GetName(), a.GetF()))
		default:
			s = append(s, a.GetName()+"=?")
		}
	}
	return strings.Join(s, " ")
}

func shapeOf(v *onnx.ValueInfoProto) string {
	var dims []string
	for _, d := range v.GetType().GetTensorType().GetShape().GetDim() {
		if p := d.GetDimParam(); p != "" {
			dims = append(dims, p)
		} else {
			dims = append(dims, fmt.Sprint(d.GetDimValue()))
		}
	}
	return v.GetName() + " " + onnx.TensorProto_DataType(v.GetType().GetTensorType().GetElemType()).String() + fmt.Sprint(dims)
}

// TestONNXGraph: each model's nodes, in order, with the initializers they
// read and their attributes; the initializers' shapes; the graph's input
// and output; every node reading what the one before it wrote.
func TestONNXGraph(t *testing.T) {
	tests := []struct {
		name    string
		d       model.Description
		nodes   []string
		inits   map[string][]int64 // the layers' tensors, not the constants
		in, out string
	}{
		{"mnist mlp", mnistMLP,
			[]string{"Gemm 0.weight 0.bias transB=1", "Relu", "Gemm 2.weight 2.bias transB=1", "Softmax axis=1"},
			map[string][]int64{"0.weight": {128, 784}, "0.bias": {128}, "2.weight": {10, 128}, "2.bias": {10}},
			"input FLOAT[N 784]", "output FLOAT[N 10]"},
		{"mnist cnn", mnistCNN,
			[]string{
				"Conv 0.weight 0.bias kernel_shape=[3 3] strides=[1 1] pads=[1 1 1 1]",
				"BatchNormalization 1.weight 1.bias 1.running_mean 1.running_var epsilon=0.001",
				"Relu",
				"MaxPool kernel_shape=[2 2] strides=[2 2]",
				"Conv 4.weight 4.bias kernel_shape=[3 3] strides=[1 1] pads=[0 0 0 0]",
				"Relu",
				"AveragePool kernel_shape=[2 2] strides=[2 2]",
				"Flatten axis=1",
				"Gemm 9.weight 9.bias transB=1",
				"Softmax axis=1"},
			map[string][]int64{"0.weight": {4, 1, 3, 3}, "0.bias": {4}, "1.weight": {4}, "1.bias": {4}, "1.running_mean": {4},
				"1.running_var": {4}, "4.weight": {8, 4, 3, 3}, "4.bias": {8}, "9.weight": {10, 288}, "9.bias": {10}},
			"input FLOAT[N 1 28 28]", "output FLOAT[N 10]"},
		{"image to linear without bias, no head", imageMLP,
			[]string{"Flatten axis=1", "Gemm 0.weight transB=1"},
			map[string][]int64{"0.weight": {3, 16}},
			"input FLOAT[N 1 4 4]", "output FLOAT[N 3]"},
		{"dense layers, sigmoid head", denseAll,
			[]string{
				"Gemm 0.weight 0.bias transB=1",
				"LeakyRelu alpha=0.1",
				"PRelu 2.alpha",
				"ReduceMean axes=[-1] keepdims=1", "Sub", "Mul", "ReduceMean axes=[-1] keepdims=1", "Add const/1e-05", "Sqrt", "Div",
				"Mul 3.weight", "Add 3.bias",
				"Mul const/0.70710677", "Erf", "Add const/1", "Mul", "Mul const/0.5",
				"Gemm 5.weight 5.bias transB=1",
				"Mul", "Mul", "Mul const/0.044715", "Add", "Mul const/0.7978846", "Tanh", "Add const/1", "Mul", "Mul const/0.5",
				"BatchNormalization 7.weight 7.bias 7.running_mean 7.running_var epsilon=1e-05",
				"Tanh",
				"Sigmoid",
				"Gemm 12.weight 12.bias transB=1",
				"Softmax axis=1",
				"Sigmoid"},
			map[string][]int64{"0.weight": {16, 6}, "0.bias": {16}, "2.alpha": {1}, "3.weight": {16}, "3.bias": {16},
				"5.weight": {12, 16}, "5.bias": {12}, "7.weight": {12}, "7.bias": {12}, "7.running_mean": {12},
				"7.running_var": {12}, "12.weight": {5, 12}, "12.bias": {5}},
			"input FLOAT[N 6]", "output FLOAT[N 5]"},
		{"image layers, image output", imageAll,
			[]string{
				"BatchNormalization 0.weight 0.bias 0.running_mean 0.running_var epsilon=1e-05",
				"Conv 1.weight 1.bias kernel_shape=[3 3] strides=[2 2] pads=[1 1 1 1]",
				"PRelu 2.alpha",
				"LeakyRelu alpha=0.2",
				"Mul const/0.70710677", "Erf", "Add const/1", "Mul", "Mul const/0.5",
				"Sigmoid", "Tanh",
				"AveragePool kernel_shape=[2 2] strides=[1 1]",
				"Conv 8.weight 8.bias kernel_shape=[1 1] strides=[1 1] pads=[0 0 0 0]",
				"Flatten axis=1"},
			map[string][]int64{"0.weight": {2}, "0.bias": {2}, "0.running_mean": {2}, "0.running_var": {2},
				"1.weight": {3, 2, 3, 3}, "1.bias": {3}, "2.alpha": {1}, "8.weight": {2, 3, 1, 1}, "8.bias": {2}},
			"input FLOAT[N 2 6 6]", "output FLOAT[N 8]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mp onnx.ModelProto
			if err := proto.Unmarshal(exportONNX(t, randomModel(t, tc.d)), &mp); err != nil {
				t.Fatal(err)
			}
			if o := mp.GetOpsetImport(); len(o) != 1 || o[0].GetDomain() != "" || o[0].GetVersion() != model.ONNXOpset {
				t.Errorf("opsets %v, want the default domain's %d", o, model.ONNXOpset)
			}
			g := mp.GetGraph()
			inits := map[string]bool{}
			gotInits := map[string][]int64{}
			for _, in := range g.Initializer {
				inits[in.GetName()] = true
				if !strings.HasPrefix(in.GetName(), "const/") {
					gotInits[in.GetName()] = in.Dims
				}
				if in.GetDataType() != int32(onnx.TensorProto_FLOAT) || len(in.RawData) != 4*int(product(in.Dims)) {
					t.Errorf("initializer %s: type %d, %d bytes for %v", in.GetName(), in.GetDataType(), len(in.RawData), in.Dims)
				}
			}
			var got []string
			prev := "input"
			for i, n := range g.Node {
				got = append(got, describe(n, inits))
				if i > 0 && !slices.Contains(n.Input, prev) {
					t.Errorf("node %d %s reads %v, not the node before's %s", i, n.GetName(), n.Input, prev)
				}
				prev = n.Output[0]
			}
			if !slices.Equal(got, tc.nodes) {
				t.Errorf("nodes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.nodes, "\n"))
			}
			if fmt.Sprint(gotInits) != fmt.Sprint(tc.inits) {
				t.Errorf("initializers %v, want %v", gotInits, tc.inits)
			}
			if len(g.Input) != 1 || shapeOf(g.Input[0]) != tc.in || len(g.Output) != 1 || shapeOf(g.Output[0]) != tc.out {
				t.Errorf("inputs %v, outputs %v, want %s and %s", g.Input, g.Output, tc.in, tc.out)
			}
			if prev != "output" {
				t.Errorf("the last node writes %s, not output", prev)
			}
		})
	}
}

func product(dims []int64) int64 {
	p := int64(1)
	for _, d := range dims {
		p *= d
	}
	return p
}

// python returns a Python that imports the modules, /usr/bin/python3 first
// (where Debian's python3-onnx and torch go), or skips the test saying why.
func python(t *testing.T, modules string) string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(py); err == nil && exec.Command(path, "-c", "import "+modules).Run() == nil {
			return path
		}
	}
	t.Skipf("no python3 here imports %s (Debian: apt-get install python3-onnx; torch for the outputs): not checking the ONNX files in Python", modules)
	return ""
}

// onnxModels are the models the Python checks run on, each with an input.
var onnxModels = []struct {
	name string
	d    model.Description
}{{"mnist mlp", mnistMLP}, {"mnist cnn", mnistCNN}, {"dense layers", denseAll}, {"image layers", imageAll}, {"image mlp", imageMLP}}

// writeONNX exports m into dir as NAME.onnx, and x as NAME.json, and
// returns the two files.
func writeONNX(t *testing.T, dir, name string, m *model.Model, x *tensor.Tensor) (string, string) {
	file, in := filepath.Join(dir, name+".onnx"), filepath.Join(dir, name+".json")
	b, _ := json.Marshal(map[string]any{"shape": x.Shape(), "data": x.Float32s()})
	if err := os.WriteFile(file, exportONNX(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file, in
}

// TestONNXChecker: onnx.checker.check_model, with full_check (shape
// inference included), accepts the exported models, the MNIST MLP and CNN
// among them.
func TestONNXChecker(t *testing.T) {
	py := python(t, "onnx")
	dir := t.TempDir()
	args := []string{"testdata/onnx_check.py"}
	for i, c := range onnxModels {
		file, _ := writeONNX(t, dir, fmt.Sprint(i), randomModel(t, c.d), tensor.Zeros(tensor.Float32, 0))
		args = append(args, file)
	}
	out, err := exec.Command(py, args...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("check_model: %v\n%s", err, out)
	}
}

// TestONNXMatchesPredict: each ONNX graph, run node by node on torch in
// float32, gives what Predict gives, within 1e-5.
func TestONNXMatchesPredict(t *testing.T) {
	py := python(t, "onnx, torch")
	dir := t.TempDir()
	args := []string{"testdata/onnx_check.py", "--run"}
	var wants []*tensor.Tensor
	for i, c := range onnxModels {
		m := randomModel(t, c.d)
		x := tensor.RandNormal(rand.New(rand.NewPCG(7, uint64(i))), tensor.Float32, 0, 1, append([]int{7}, c.d.Sample...)...)
		want, err := m.Predict(x)
		if err != nil {
			t.Fatal(err)
		}
		wants = append(wants, want)
		file, in := writeONNX(t, dir, fmt.Sprint(i), m, x)
		args = append(args, file, in)
	}
	cmd := exec.Command(py, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("onnx_check.py: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for i, c := range onnxModels {
		var got struct {
			Shape []int
			Data  []float64
		}
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%s: onnx_check.py's output %q: %v", c.name, out, err)
		}
		want := wants[i]
		if !slices.Equal(got.Shape, want.Shape()) {
			t.Errorf("%s: ONNX output shape %v, Predict's %v", c.name, got.Shape, want.Shape())
			continue
		}
		worst := 0.0
		for j, w := range want.Float64s() {
			worst = max(worst, math.Abs(got.Data[j]-w))
		}
		t.Logf("%s: max |ONNX − Predict| = %.3g over %v", c.name, worst, want.Shape())
		if !(worst <= 1e-5) {
			t.Errorf("%s: max |ONNX − Predict| = %g, want <= 1e-5", c.name, worst)
		}
	}
}
