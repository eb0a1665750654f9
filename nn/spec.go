package nn

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/pipetrain/pipetrain/tensor"
)

// Spec describes a layer as plain data: its type and the keys of its type.
// A model is a list of specs, a seed and an input sample shape; Build makes
// its layers anywhere from them (a stage on another host builds its own),
// with the same weights bit for bit, since layer i draws from its own stream.
type Spec struct {
	Type        string  `json:"type" toml:"type"`
	Units       int     `json:"units,omitempty" toml:"units"`             // linear: output features
	Init        Init    `json:"init,omitempty" toml:"init"`               // linear, conv2d
	Alpha       float64 `json:"alpha,omitempty" toml:"alpha"`             // leaky_relu
	P           float64 `json:"p,omitempty" toml:"p"`                     // dropout
	Approximate bool    `json:"approximate,omitempty" toml:"approximate"` // gelu: the tanh form
	Beta        float64 `json:"beta,omitempty" toml:"beta"`               // softplus: the slope (0 means 1)
	Threshold   float64 `json:"threshold,omitempty" toml:"threshold"`     // softplus: beta*x above it gives x (0 means 20)
	Channels    int     `json:"channels,omitempty" toml:"channels"`       // conv2d: output channels
	Kernel      int     `json:"kernel,omitempty" toml:"kernel"`           // conv2d, maxpool2d, avgpool2d: the square window's side
	Stride      int     `json:"stride,omitempty" toml:"stride"`           // conv2d (0 means 1), pools (0 means kernel)
	Padding     int     `json:"padding,omitempty" toml:"padding"`         // conv2d: zeros on each side
	Eps         float64 `json:"eps,omitempty" toml:"eps"`                 // batchnorm (0 means 1e-5)
	Momentum    float64 `json:"momentum,omitempty" toml:"momentum"`       // batchnorm: of the running statistics (0 means 0.1)
	Shards      int     `json:"shards,omitempty" toml:"shards"`           // linear, conv2d: actors a pipeline splits the units over; Build ignores it
	Dim         int     `json:"dim,omitempty" toml:"dim"`                 // embedding: a token's width
	Heads       int     `json:"heads,omitempty" toml:"heads"`             // transformer_block: attention heads
	Hidden      int     `json:"hidden,omitempty" toml:"hidden"`           // transformer_block: the MLP's width (0 means 4·width)
	Dropout     float64 `json:"dropout,omitempty" toml:"dropout"`         // transformer_block: on both residual branches
	Tie         bool    `json:"tie,omitempty" toml:"tie"`                 // linear: the embedding's token weights, shared
	Bias        *bool   `json:"bias,omitempty" toml:"bias"`               // linear: false leaves the bias out (GPT-2's head); unset is true
	// Vocab is the embedding's number of tokens: the data's vocabulary,
	// which the trainer sets (no config key).
	Vocab int `json:"vocab,omitempty" toml:"-"`
	// Recompute is a transformer block's Recompute ("" is "none"), which
	// the trainer sets from the model-wide model.recompute (no layer key).
	Recompute string `json:"recompute,omitempty" toml:"-"`
}

// HasBias reports whether a linear layer has a bias: unless bias = false.
func (s Spec) HasBias() bool { return s.Bias == nil || *s.Bias }

// layerType is one row of the table of layer types: the keys the type takes
// besides "type", whether a pipeline may shard it, the check of its keys
// (with the defaults that depend on other keys), its output sample shape
// for an input one, and its constructor.
type layerType struct {
	name   string
	keys   []string
	shards bool // takes "shards" too: the layer is a Sharder
	// perMicroBatch: its results depend on how a mini-batch is split into
	// micro-batches (batch norm's statistics)
	perMicroBatch bool
	// width, if set, is the features the layer's output has whatever its
	// input (a linear layer's units)
	width func(s Spec) int
	// vocab: the layer takes the data's vocabulary (Spec.Vocab)
	vocab bool
	check func(c *checker)
	shape func(s Spec, in []int) ([]int, error)
	build func(s Spec, b built) (Layer, error)
	// onnx writes the layer's inference form; nil: it has none
	onnx func(s Spec, g ONNXGraph)
	// params counts the layer's parameters for input and output sample
	// shapes, without building it; nil: none
	params func(s Spec, in, out []int) int
}

// lastAxis is the features a layer of tokens or flat samples works on.
func lastAxis(in []int) int {
	if len(in) == 2 {
		return in[1]
	}
	return tensor.SizeOf(in)
}

// built is what a constructor may use: the layer's place in the model, its
// input and output sample shapes, the model's seed and the dtype.
type built struct {
	index   int
	in, out []int
	seed    uint64
	dt      tensor.DType
	blocks  int    // transformer blocks in the model
	specs   []Spec // the whole model's
	tiedTo  int    // the embedding a tied head shares
}

// rng is layer i's random stream: its weights do not depend on the layers
// before it.
func (b built) rng() *rand.Rand { return rand.New(rand.NewPCG(b.seed, uint64(b.index))) }

// any keeps the sample's shape: element-wise layers take any.
func anyShape(_ Spec, in []int) ([]int, error) { return in, nil }

// flatOnly keeps a flat sample's shape and refuses an image: the layer works
// on features, and an image must be flattened first.
func flatOnly(_ Spec, in []int) ([]int, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("needs flat samples [F], got %v: add a flatten layer before it", in)
	}
	return in, nil
}

// tokensOrFlat keeps a flat sample's or a sequence's shape and refuses an
// image: the layer works on the last axis of features.
func tokensOrFlat(_ Spec, in []int) ([]int, error) {
	if len(in) > 2 {
		return nil, fmt.Errorf("needs flat samples [F] or tokens [T, D], got %v: add a flatten layer before it", in)
	}
	return in, nil
}

// image wraps a layer of [N C H W] tensors for the flat rows layers pass.
func image(l Layer, b built) Layer {
	return &imageLayer{Layer: l, in: b.in, out: b.out, inSize: tensor.SizeOf(b.in), outSize: tensor.SizeOf(b.out)}
}

// shaper is a layer that knows its output sample shape.
type shaper interface {
	Layer
	OutShape(in []int) ([]int, error)
}

// poolType is the row of a pooling layer type made by newPool(kernel, stride).
func poolType(name, op string, newPool func(kernel, stride int) (shaper, error)) layerType {
	return layerType{name: name, keys: []string{"kernel", "stride"},
		check: func(c *checker) {
			c.required("kernel", c.s.Kernel)
			c.atLeast("kernel", c.s.Kernel, 1)
			c.defaultInt("stride", &c.s.Stride, c.s.Kernel)
			c.atLeast("stride", c.s.Stride, 1)
		},
		shape: func(s Spec, in []int) ([]int, error) {
			l, err := newPool(s.Kernel, s.Stride)
			if err != nil {
				return nil, err
			}
			return l.OutShape(in)
		},
		onnx: onnxPool(op),
		build: func(s Spec, b built) (Layer, error) {
			l, err := newPool(s.Kernel, s.Stride)
			if err != nil {
				return nil, err
			}
			return image(l, b), nil
		}}
}

// layerTypes is the one table of layer types, in the order messages list
// them: adding a type is adding a row.
var layerTypes = []layerType{
	// A linear layer takes the flattened sample, so that an MLP reads
	// images as it always has; flatten says so explicitly.
	// On samples of tokens [T, D] it applies to every token, as PyTorch's
	// Linear does to the last axis.
	{name: "linear", keys: []string{"units", "init", "tie", "bias"}, shards: true, width: func(s Spec) int { return s.Units },
		params: func(s Spec, in, _ []int) int {
			if s.HasBias() {
				return s.Units*lastAxis(in) + s.Units
			}
			return s.Units * lastAxis(in)
		},
		check: func(c *checker) {
			c.required("units", c.s.Units)
			c.atLeast("units", c.s.Units, 1)
			c.init()
		},
		shape: func(s Spec, in []int) ([]int, error) {
			if len(in) == 2 {
				return []int{in[0], s.Units}, nil
			}
			return []int{s.Units}, nil
		},
		build: func(s Spec, b built) (Layer, error) {
			if len(b.in) == 2 {
				l, err := newLinear(b.dt, b.in[1], s.Units, s.Init, b.rng(), s.HasBias())
				if err != nil {
					return nil, err
				}
				if s.Tie { // the embedding's weights, as they start
					w, err := tiedWeight(b.specs, b.tiedTo, b.in[0], b)
					if err != nil {
						return nil, err
					}
					l.W.CopyFrom(w)
				}
				return perToken(l, b.in[0], b.in[1], s.Units), nil
			}
			return newLinear(b.dt, tensor.SizeOf(b.in), s.Units, s.Init, b.rng(), s.HasBias())
		},
		onnx: func(s Spec, g ONNXGraph) {
			g.Flatten()
			in := []string{g.Param("weight")}
			if s.HasBias() {
				in = append(in, g.Param("bias"))
			}
			onnxApply(g, "Gemm", in, AttrInt("transB", 1))
		}},
	{name: "relu", shape: anyShape, build: func(Spec, built) (Layer, error) { return NewReLU(), nil }, onnx: onnxOp("Relu")},
	{name: "leaky_relu", keys: []string{"alpha"}, shape: anyShape,
		check: func(c *checker) {
			c.float("alpha", c.s.Alpha, func(a float64) bool { return a >= 0 }, "must be >= 0")
		},
		build: func(s Spec, _ built) (Layer, error) { return NewLeakyReLU(s.Alpha), nil },
		onnx:  func(s Spec, g ONNXGraph) { onnxApply(g, "LeakyRelu", nil, AttrFloat("alpha", s.Alpha)) }},
	{name: "prelu", shape: anyShape, params: func(Spec, []int, []int) int { return 1 }, build: func(_ Spec, b built) (Layer, error) { return NewPReLU(b.dt), nil }, onnx: onnxOp("PRelu", "alpha")},
	{name: "softplus", keys: []string{"beta", "threshold"}, shape: anyShape,
		check: func(c *checker) {
			c.float("beta", c.s.Beta, func(b float64) bool { return b >= 0 }, "must be >= 0 (0 means 1)")
			c.float("threshold", c.s.Threshold, func(t float64) bool { return t >= 0 }, "must be >= 0 (0 means 20)")
		},
		build: func(s Spec, _ built) (Layer, error) { return NewSoftplus(softplusKeys(s)), nil },
		onnx: func(s Spec, g ONNXGraph) { // ONNX's Softplus has no beta: Softplus(beta·x)/beta
			if beta, _ := softplusKeys(s); beta != 1 {
				g.SetX(g.Node("Div", []string{g.Node("Softplus", []string{g.Node("Mul", []string{g.X(), g.Const(beta)})}), g.Const(beta)}))
				return
			}
			onnxApply(g, "Softplus", nil)
		}},
	{name: "sigmoid", shape: anyShape, build: func(Spec, built) (Layer, error) { return NewSigmoid(), nil }, onnx: onnxOp("Sigmoid")},
	{name: "tanh", shape: anyShape, build: func(Spec, built) (Layer, error) { return NewTanh(), nil }, onnx: onnxOp("Tanh")},
	{name: "gelu", keys: []string{"approximate"}, shape: anyShape,
		build: func(s Spec, _ built) (Layer, error) { return NewGELU(s.Approximate), nil }, onnx: onnxGELU},
	{name: "softmax", shape: flatOnly, build: func(Spec, built) (Layer, error) { return NewSoftmax(), nil },
		onnx: func(_ Spec, g ONNXGraph) { onnxApply(g, "Softmax", nil, AttrInt("axis", 1)) }},
	{name: "dropout", keys: []string{"p"}, shape: anyShape,
		check: func(c *checker) {
			c.float("p", c.s.P, func(p float64) bool { return p >= 0 && p < 1 }, "must be in [0, 1)")
		},
		build: func(s Spec, b built) (Layer, error) { return NewDropout(s.P, b.seed, b.index) },
		onnx:  func(Spec, ONNXGraph) {}}, // the identity in inference
	// Over the last axis: a flat sample's features, or each token's.
	{name: "layernorm", shape: tokensOrFlat, params: func(_ Spec, in, _ []int) int { return 2 * lastAxis(in) },
		build: func(_ Spec, b built) (Layer, error) {
			if len(b.in) == 2 {
				return perToken(NewLayerNorm(b.dt, b.in[1]), b.in[0], b.in[1], b.in[1]), nil
			}
			return NewLayerNorm(b.dt, b.in[0]), nil
		},
		onnx: onnxLayerNorm(layerNormEps)},
	{name: "conv2d", keys: []string{"channels", "kernel", "stride", "padding", "init"}, shards: true,
		params: func(s Spec, in, _ []int) int { return in[0]*s.Kernel*s.Kernel*s.Channels + s.Channels },
		check: func(c *checker) {
			c.required("channels", c.s.Channels)
			c.atLeast("channels", c.s.Channels, 1)
			c.required("kernel", c.s.Kernel)
			c.atLeast("kernel", c.s.Kernel, 1)
			c.defaultInt("stride", &c.s.Stride, 1)
			c.atLeast("stride", c.s.Stride, 1)
			c.atLeast("padding", c.s.Padding, 0)
			c.init()
		},
		shape: func(s Spec, in []int) ([]int, error) {
			if s.Channels < 1 || s.Kernel < 1 || s.Stride < 0 || s.Padding < 0 {
				return nil, fmt.Errorf("channels %d and kernel %d must be at least 1, stride %d and padding %d not negative", s.Channels, s.Kernel, s.Stride, s.Padding)
			}
			c := &Conv2d{F: s.Channels, KH: s.Kernel, KW: s.Kernel, Stride: max(1, s.Stride), Padding: s.Padding}
			if len(in) == 3 {
				c.C = in[0]
			}
			out, why := c.geometry(in)
			if why != "" {
				return nil, fmt.Errorf("samples %v: %s", in, why)
			}
			return out, nil
		},
		build: func(s Spec, b built) (Layer, error) {
			l, err := NewConv2d(b.dt, b.in[0], s.Channels, s.Kernel, s.Kernel, max(1, s.Stride), s.Padding, s.Init, b.rng())
			if err != nil {
				return nil, err
			}
			return image(l, b), nil
		},
		onnx: func(s Spec, g ONNXGraph) {
			k, p := int64(s.Kernel), int64(s.Padding)
			st := int64(max(1, s.Stride))
			onnxApply(g, "Conv", []string{g.Param("weight"), g.Param("bias")}, AttrInts("kernel_shape", k, k),
				AttrInts("strides", st, st), AttrInts("pads", p, p, p, p))
		}},
	poolType("maxpool2d", "MaxPool", func(k, s int) (shaper, error) { return NewMaxPool2d(k, s) }),
	poolType("avgpool2d", "AveragePool", func(k, s int) (shaper, error) { return NewAvgPool2d(k, s) }),
	// Over the channels of [C, H, W] samples, or the features of flat ones.
	{name: "batchnorm", keys: []string{"eps", "momentum"}, shape: anyShape, perMicroBatch: true,
		params: func(_ Spec, in, _ []int) int { return 2 * in[0] }, // over channels, or a flat sample's features
		check: func(c *checker) {
			c.float("eps", c.s.Eps, func(e float64) bool { return e > 0 }, "must be > 0")
			c.float("momentum", c.s.Momentum, func(m float64) bool { return m > 0 && m <= 1 }, "must be in (0, 1]") // 0 means the default in a Spec
		},
		build: func(s Spec, b built) (Layer, error) {
			l, err := NewBatchNorm(b.dt, b.in[0])
			if err != nil {
				return nil, err
			}
			if s.Eps != 0 {
				l.Eps = s.Eps
			}
			if s.Momentum != 0 {
				l.Momentum = s.Momentum
			}
			if len(b.in) > 1 {
				return image(l, b), nil
			}
			return l, nil
		},
		// in inference, with the running statistics; the momentum plays no part
		onnx: func(s Spec, g ONNXGraph) {
			eps := s.Eps
			if eps == 0 {
				eps = 1e-5
			}
			onnxApply(g, "BatchNormalization", []string{g.Param("weight"), g.Param("bias"), g.Param("running_mean"), g.Param("running_var")},
				AttrFloat("epsilon", eps))
		}},
	// Samples of T token ids [T] become their vectors [T, dim]: the
	// vocabulary comes from the data.
	{name: "embedding", keys: []string{"dim", "init"}, vocab: true,
		params: func(s Spec, in, _ []int) int { return (s.Vocab + in[0]) * s.Dim }, // tokens and positions
		check: func(c *checker) {
			c.required("dim", c.s.Dim)
			c.atLeast("dim", c.s.Dim, 1)
			c.init()
		},
		shape: func(s Spec, in []int) ([]int, error) {
			if len(in) != 1 {
				return nil, fmt.Errorf("needs samples of token ids [T], got %v: an embedding comes first", in)
			}
			if s.Vocab < 1 || s.Dim < 1 {
				return nil, fmt.Errorf("vocabulary %d and dim %d must be at least 1", s.Vocab, s.Dim)
			}
			return []int{in[0], s.Dim}, nil
		},
		build: func(s Spec, b built) (Layer, error) {
			return NewEmbedding(b.dt, s.Vocab, b.in[0], s.Dim, s.Init, b.rng())
		}},
	{name: "transformer_block", keys: []string{"heads", "hidden", "dropout", "init"},
		params: func(s Spec, in, _ []int) int {
			d := in[1]
			h := cmp.Or(s.Hidden, 4*d)
			return 2*2*d + 3*d*d + 3*d + d*d + d + d*h + h + h*d + d // ln_1, ln_2, c_attn, c_proj, c_fc, c_proj
		},
		check: func(c *checker) {
			c.required("heads", c.s.Heads)
			c.atLeast("heads", c.s.Heads, 1)
			c.atLeast("hidden", c.s.Hidden, 0)
			c.float("dropout", c.s.Dropout, func(p float64) bool { return p >= 0 && p < 1 }, "must be in [0, 1)")
			c.init()
		},
		shape: func(s Spec, in []int) ([]int, error) {
			if len(in) != 2 {
				return nil, fmt.Errorf("needs samples of tokens [T, D], got %v: put an embedding before it", in)
			}
			if s.Heads < 1 || in[1]%s.Heads != 0 {
				return nil, fmt.Errorf("heads = %d must divide the width %d", s.Heads, in[1])
			}
			return in, nil
		},
		build: func(s Spec, b built) (Layer, error) {
			r, err := ParseRecompute(s.Recompute)
			if err != nil {
				return nil, err
			}
			return newTransformerBlock(b.dt, blockConfig{tokens: b.in[0], dim: b.in[1], heads: s.Heads,
				hidden: cmp.Or(s.Hidden, 4*b.in[1]), dropout: s.Dropout, init: s.Init, seed: b.seed, index: b.index, blocks: b.blocks,
				recompute: r}, b.rng())
		}},
	// The rows layers pass are flat already, so flatten changes the sample
	// shape the next layers see, not the data.
	{name: "flatten", shape: func(_ Spec, in []int) ([]int, error) { return []int{tensor.SizeOf(in)}, nil },
		build: func(Spec, built) (Layer, error) { return NewFlatten(), nil },
		onnx:  func(_ Spec, g ONNXGraph) { g.Flatten() }},
}

// Width returns the features of the layer's output that the spec sets
// whatever its input (a linear layer's units), and false for a layer whose
// output width follows its input.
func (s Spec) Width() (int, bool) {
	t, ok := lookup(s.Type)
	if !ok || t.width == nil {
		return 0, false
	}
	return t.width(s), true
}

// TakesVocab reports whether the layer's Vocab is the data's vocabulary,
// which the trainer sets.
func (s Spec) TakesVocab() bool {
	t, _ := lookup(s.Type)
	return t.vocab
}

// PerMicroBatch reports whether the layer's results depend on how a
// mini-batch is split into micro-batches (batch norm's statistics).
func (s Spec) PerMicroBatch() bool {
	t, _ := lookup(s.Type)
	return t.perMicroBatch
}

// Tokens returns how many tokens a sample of the model has: the first axis
// of its layers' [T, D] samples for a sequence model, else 1.
func Tokens(specs []Spec, sample []int) int {
	shapes, err := OutShapes(specs, sample)
	if err != nil {
		return 1
	}
	for _, s := range shapes {
		if len(s) == 2 {
			return s[0]
		}
	}
	return 1
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

// LayerKeys returns the keys a layer type takes besides "type", "shards"
// last for a type a pipeline may shard, and whether the type exists.
func LayerKeys(typ string) ([]string, bool) {
	t, ok := lookup(typ)
	keys := slices.Clone(t.keys)
	if t.shards {
		keys = append(keys, "shards")
	}
	return keys, ok
}

// Build makes layers [lo, hi) of the model specs for flat samples of
// features values: BuildShape with the sample shape [features].
func Build(specs []Spec, features int, seed uint64, dt tensor.DType, lo, hi int) ([]Layer, error) {
	return BuildShape(specs, []int{features}, seed, dt, lo, hi)
}

// BuildShape makes layers [lo, hi) of the model specs for samples of the
// given shape ([C, H, W] for images, [F] for features): the same layers,
// weights included, whatever range is built, so a stage can build only its
// own. Layer i draws its random numbers from the streams of (seed, i).
// Layers pass flat rows [N, size of the sample] whatever the sample's shape;
// an image layer sees them as [N, C, H, W]. An error names the layer.
func BuildShape(specs []Spec, sample []int, seed uint64, dt tensor.DType, lo, hi int) ([]Layer, error) {
	if lo < 0 || hi > len(specs) || lo > hi {
		return nil, fmt.Errorf("nn: layers [%d, %d) of a model of %d", lo, hi, len(specs))
	}
	shapes, err := OutShapes(specs[:hi], sample)
	if err != nil {
		return nil, err
	}
	blocks := 0
	for _, s := range specs {
		if s.Type == "transformer_block" {
			blocks++
		}
	}
	var out []Layer
	for i := lo; i < hi; i++ {
		s := specs[i]
		t, _ := lookup(s.Type) // OutShapes checked the types
		in := sample
		if i > 0 {
			in = shapes[i-1]
		}
		b := built{index: i, in: in, out: shapes[i], seed: seed, dt: dt, blocks: blocks, specs: specs}
		for _, tie := range Ties(specs) {
			if tie.Head == i {
				b.tiedTo = tie.Embedding
			}
		}
		l, err := t.build(s, b)
		if err != nil {
			return nil, fmt.Errorf("nn: layer %d (%s): %w", i, s.Type, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// ParamCount returns how many parameters the model specs has for samples
// of the given shape, without building it: a tied head's weight, the
// embedding's, counted once.
func ParamCount(specs []Spec, sample []int) (int, error) {
	shapes, err := OutShapes(specs, sample)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, s := range specs {
		t, _ := lookup(s.Type)
		in := sample
		if i > 0 {
			in = shapes[i-1]
		}
		if t.params != nil {
			n += t.params(s, in, shapes[i])
		}
		if s.Tie {
			n -= s.Units * lastAxis(in)
		}
	}
	return n, nil
}

// OutShapes returns the sample shape each layer of specs gives, for input
// samples of the given shape, or an error naming the first layer whose
// type is unknown or whose input does not fit it.
func OutShapes(specs []Spec, sample []int) ([][]int, error) {
	out := make([][]int, len(specs))
	in := sample
	for i, s := range specs {
		t, ok := lookup(s.Type)
		if !ok {
			return nil, fmt.Errorf("nn: layer %d: unknown type %q (want one of %v)", i, s.Type, LayerTypes())
		}
		o, err := t.shape(s, in)
		if err != nil {
			return nil, fmt.Errorf("nn: layer %d (%s): %w", i, s.Type, err)
		}
		out[i], in = slices.Clone(o), o
	}
	if err := checkTies(specs, sample, out); err != nil {
		return nil, err
	}
	return out, nil
}

// imageLayer runs a layer of [N, C, H, W] tensors on the flat rows layers
// pass, [N, C·H·W] in and out, seen through views: no copy, and headers
// lent by the pass's Arena, so no allocation either.
type imageLayer struct {
	Layer
	in, out         []int // sample shapes
	inSize, outSize int
}

func (l *imageLayer) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	y := l.Layer.Forward(p, asSamples(p.Arena, x, l.in, l.inSize))
	return asSamples(p.Arena, y, nil, l.outSize)
}

func (l *imageLayer) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	dx := l.Layer.Backward(p, asSamples(p.Arena, dy, l.out, l.outSize), needDX)
	if dx == nil {
		return nil
	}
	return asSamples(p.Arena, dx, nil, l.inSize)
}

// asSamples returns x, N samples of size elements, seen as [N, sample...],
// or as flat rows [N, size] when sample is nil.
func asSamples(a *Arena, x *tensor.Tensor, sample []int, size int) *tensor.Tensor {
	n := 0
	if x.Dims() > 0 {
		n = x.Dim(0)
	}
	if x.Dims() == 0 || x.Size() != n*size {
		want := sample
		if want == nil {
			want = []int{size}
		}
		panic(fmt.Errorf("nn: %v %v is not rows of samples %v", x.DType(), x.Shape(), want))
	}
	var buf [8]int
	s := append(buf[:0], n)
	if sample == nil {
		s = append(s, size)
	} else {
		s = append(s, sample...)
	}
	return a.view(x, 0, s...)
}

// Buffers returns the image layer's buffers (batch norm's running statistics).
func (l *imageLayer) Buffers() []Buffer { return BuffersOf(l.Layer) }

// softplusKeys returns a softplus layer's beta and threshold, 0 meaning
// PyTorch's defaults, 1 and 20.
func softplusKeys(s Spec) (beta, threshold float64) {
	return cmp.Or(s.Beta, 1), cmp.Or(s.Threshold, 20)
}
