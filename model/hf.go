package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// gpt2 is where a description's layers sit in GPT-2's layout: an
// embedding (wte, wpe), blocks (transformer.h.N), a layer norm (ln_f) and
// a linear head (lm_head), in that order and nothing else.
type gpt2 struct {
	embedding, lnf, head int
	blocks               []int
	vocab, positions     int // wte's rows, wpe's rows (the block size)
	width, heads, hidden int
	dropout              float64 // the blocks' residual dropout
	tied                 bool
	headBias             bool // the head has a bias, which GPT-2's has not
}

// gpt2Layout finds d's layers in GPT-2's layout, or says why d is not
// such a model.
func gpt2Layout(d Description) (gpt2, error) {
	ls := d.Layers
	shapes, err := nn.OutShapes(ls, d.Sample)
	if err != nil {
		return gpt2{}, fmt.Errorf("model: %w", err)
	}
	want := "an embedding, transformer_blocks, a layernorm and a linear head"
	n := len(ls)
	if n < 4 {
		return gpt2{}, fmt.Errorf("model: not a GPT-2: %d layers, want %s", n, want)
	}
	for i, l := range ls {
		var ok bool
		switch {
		case i == 0:
			ok = l.Type == "embedding"
		case i == n-2:
			ok = l.Type == "layernorm"
		case i == n-1:
			ok = l.Type == "linear"
		default:
			ok = l.Type == "transformer_block"
		}
		if !ok {
			return gpt2{}, fmt.Errorf("model: not a GPT-2: layer %d is %s, want %s", i, l.Type, want)
		}
	}
	e := ls[0]
	g := gpt2{embedding: 0, lnf: n - 2, head: n - 1, vocab: e.Vocab, positions: shapes[0][0], width: e.Dim,
		heads: ls[1].Heads, hidden: ls[1].Hidden, dropout: ls[1].Dropout, tied: ls[n-1].Tie, headBias: ls[n-1].HasBias()}
	if g.hidden == 0 {
		g.hidden = 4 * g.width
	}
	for i := 1; i < n-2; i++ {
		b := ls[i]
		h := b.Hidden
		if h == 0 {
			h = 4 * g.width
		}
		if b.Heads != g.heads || h != g.hidden || b.Dropout != g.dropout {
			return gpt2{}, fmt.Errorf("model: not a GPT-2: block %d (layer %d) has heads %d, hidden %d, dropout %v, block 0 heads %d, hidden %d, dropout %v: GPT-2's blocks are alike",
				i-1, i, b.Heads, h, b.Dropout, g.heads, g.hidden, g.dropout)
		}
		g.blocks = append(g.blocks, i)
	}
	if u := ls[n-1].Units; u != g.vocab {
		return gpt2{}, fmt.Errorf("model: not a GPT-2: the head (layer %d) has %d units, the vocabulary %d tokens", n-1, u, g.vocab)
	}
	return g, nil
}

// hfTensor is one tensor of GPT-2's file and where it goes in the model.
type hfTensor struct {
	hf, ours  string // transformer.h.0.attn.c_attn.weight, 1.attn.c_attn.weight
	shape     []int  // the model's shape (PyTorch's Linear: [out, in])
	transpose bool   // a Conv1D weight: [in, out] in the file
}

// fileShape is the tensor's shape in Hugging Face's file.
func (t hfTensor) fileShape() []int {
	if t.transpose {
		return []int{t.shape[1], t.shape[0]}
	}
	return t.shape
}

// tensors lists the file's tensors with the transformer. prefix, the head's
// last, as GPT2LMHeadModel names them; the head's bias, which GPT-2 has not,
// is not among them.
func (g gpt2) tensors() []hfTensor {
	d, h := g.width, g.hidden
	out := []hfTensor{
		{"transformer.wte.weight", nn.ParamName(g.embedding, "weight"), []int{g.vocab, d}, false},
		{"transformer.wpe.weight", nn.ParamName(g.embedding, "position_weight"), []int{g.positions, d}, false},
	}
	for j, b := range g.blocks {
		for _, p := range []struct {
			name  string
			shape []int
			conv  bool
		}{
			{"ln_1.weight", []int{d}, false}, {"ln_1.bias", []int{d}, false},
			{"attn.c_attn.weight", []int{3 * d, d}, true}, {"attn.c_attn.bias", []int{3 * d}, false},
			{"attn.c_proj.weight", []int{d, d}, true}, {"attn.c_proj.bias", []int{d}, false},
			{"ln_2.weight", []int{d}, false}, {"ln_2.bias", []int{d}, false},
			{"mlp.c_fc.weight", []int{h, d}, true}, {"mlp.c_fc.bias", []int{h}, false},
			{"mlp.c_proj.weight", []int{d, h}, true}, {"mlp.c_proj.bias", []int{d}, false},
		} {
			out = append(out, hfTensor{"transformer.h." + strconv.Itoa(j) + "." + p.name, nn.ParamName(b, p.name), p.shape, p.conv})
		}
	}
	return append(out,
		hfTensor{"transformer.ln_f.weight", nn.ParamName(g.lnf, "weight"), []int{d}, false},
		hfTensor{"transformer.ln_f.bias", nn.ParamName(g.lnf, "bias"), []int{d}, false},
		hfTensor{"lm_head.weight", nn.ParamName(g.head, "weight"), []int{g.vocab, d}, false})
}

// hfBuffer reports whether a file's key is one of GPT-2's attention buffers
// (the causal mask "attn.bias", "attn.masked_bias"), which older
// transformers saved with the weights and which hold no weights.
func hfBuffer(key string) bool {
	return strings.HasSuffix(key, ".attn.bias") || strings.HasSuffix(key, ".attn.masked_bias")
}

// FromHF returns the weights of d's model, named as in a checkpoint, from
// the tensors of a GPT-2 file in Hugging Face's layout: keys with or
// without the "transformer." prefix, Conv1D weights [in, out] transposed
// into Linear's [out, in], the attention buffers ignored. d must be a GPT
// (an embedding, transformer blocks, a layer norm and a linear head). A
// file without lm_head.weight has its head tied to wte, as GPT-2's: the
// head starts as a copy of wte. A head with a bias, which GPT-2's has not,
// starts it at zero (bias = false: GPT-2's head, none). The file's wpe may
// have more rows than d's block size: the first rows are kept, as nanoGPT's
// crop_block_size keeps them. Errors name the tensor and both shapes. The
// weights may share the file's tensors.
func FromHF(d Description, file map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	g, err := gpt2Layout(d)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]string, len(file)) // the prefixed key -> the file's
	for _, k := range slices.Sorted(maps.Keys(file)) {
		if hfBuffer(k) {
			continue
		}
		full := k
		if k != "lm_head.weight" && !strings.HasPrefix(k, "transformer.") {
			full = "transformer." + k
		}
		if prev, ok := byKey[full]; ok {
			return nil, fmt.Errorf("model: the file holds both %s and %s", prev, k)
		}
		byKey[full] = k
	}
	weights := make(map[string]*tensor.Tensor)
	for _, t := range g.tensors() {
		key, ok := byKey[t.hf]
		delete(byKey, t.hf)
		if !ok {
			if t.hf == "lm_head.weight" { // tied in the file, as GPT-2's
				weights[t.ours] = weights[nn.ParamName(g.embedding, "weight")].Clone()
				continue
			}
			return nil, fmt.Errorf("model: the file has no tensor %s (the model's is %v)", t.hf, t.fileShape())
		}
		w := file[key]
		if w.DType() != tensor.Float32 {
			return nil, fmt.Errorf("model: tensor %s is %v: want F32, F16 or BF16", key, w.DType())
		}
		want, have := t.fileShape(), w.Shape()
		if t.hf == "transformer.wpe.weight" && len(have) == 2 && have[0] > want[0] && have[1] == want[1] {
			w = nn.SliceRows(w, 0, want[0]) // positions past the block size are never used
			have = w.Shape()
		}
		if !slices.Equal(have, want) {
			return nil, fmt.Errorf("model: tensor %s: the file's shape %v, the model's %v", key, have, want)
		}
		if t.transpose {
			w = ops.Transpose(w)
		}
		weights[t.ours] = w // the file's own, unless transposed: GPT-2's weights are not copied twice
	}
	if len(byKey) > 0 {
		extra := slices.Sorted(maps.Keys(byKey))
		k := byKey[extra[0]]
		return nil, fmt.Errorf("model: tensor %s %v of the file has no place in the model (%d blocks, vocabulary %d, width %d)",
			k, file[k].Shape(), len(g.blocks), g.vocab, g.width)
	}
	emb, head := nn.ParamName(g.embedding, "weight"), nn.ParamName(g.head, "weight")
	if g.tied && !sameBits(weights[emb], weights[head]) {
		return nil, fmt.Errorf("model: the file's lm_head.weight differs from its wte.weight, but the model ties its head to the embedding (tie = true): set tie = false to keep both")
	}
	if g.headBias {
		weights[nn.ParamName(g.head, "bias")] = tensor.Zeros(tensor.Float32, g.vocab)
	}
	return weights, nil
}

// ErrHeadBias is ToHF's error for a head whose bias is not zero, which
// HFOptions.DropHeadBias lets it drop.
var ErrHeadBias = errors.New("GPT-2's lm_head has none")

// HFOptions are choices ToHF makes about what GPT-2's layout cannot hold.
type HFOptions struct {
	// DropHeadBias writes a model whose head has a non-zero bias without
	// it: GPT-2's lm_head has none, so the written model's logits differ
	// from this one's by the bias. Without it such a model is an error.
	DropHeadBias bool
}

// HFGPT2 is a GPT in Hugging Face's GPT-2 layout: the tensors of
// model.safetensors and the fields of config.json.
type HFGPT2 struct {
	Tensors map[string]*tensor.Tensor
	Config  HFConfig
}

// HFConfig is the config.json of transformers' GPT2LMHeadModel.
type HFConfig struct {
	ModelType          string   `json:"model_type"`
	Architectures      []string `json:"architectures"`
	VocabSize          int      `json:"vocab_size"`
	NPositions         int      `json:"n_positions"`
	NCtx               int      `json:"n_ctx"` // older transformers' name of n_positions
	NEmbd              int      `json:"n_embd"`
	NLayer             int      `json:"n_layer"`
	NHead              int      `json:"n_head"`
	NInner             int      `json:"n_inner"`
	ActivationFunction string   `json:"activation_function"`
	LayerNormEpsilon   float64  `json:"layer_norm_epsilon"`
	ResidPdrop         float64  `json:"resid_pdrop"`
	EmbdPdrop          float64  `json:"embd_pdrop"`
	AttnPdrop          float64  `json:"attn_pdrop"`
	InitializerRange   float64  `json:"initializer_range"`
	ScaleAttnWeights   bool     `json:"scale_attn_weights"`
	UseCache           bool     `json:"use_cache"`
	TieWordEmbeddings  bool     `json:"tie_word_embeddings"`
	BosTokenID         int      `json:"bos_token_id"`
	EosTokenID         int      `json:"eos_token_id"`
	TorchDtype         string   `json:"torch_dtype"`
}

// gpt2EndOfText is GPT-2's <|endoftext|>, its bos and eos token.
const gpt2EndOfText = 50256

// ToHF returns the model of d with weights (named as in a checkpoint) in
// Hugging Face's GPT-2 layout: the tensors with the transformer. prefix,
// Conv1D weights [in, out], and for a tied head no lm_head.weight, as
// save_pretrained writes a model whose head shares wte (from_pretrained
// ties it again); an untied head is written as lm_head.weight. d must be a
// GPT whose head's bias is zero (or opts.DropHeadBias). The activation is
// "gelu", the exact erf form pipetrain's blocks use (GPT-2's own is the
// tanh form, "gelu_new").
func ToHF(d Description, weights map[string]*tensor.Tensor, opts HFOptions) (*HFGPT2, error) {
	g, err := gpt2Layout(d)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*tensor.Tensor)
	for _, t := range g.tensors() {
		w, ok := weights[t.ours]
		if !ok || !slices.Equal(w.Shape(), t.shape) || w.DType() != tensor.Float32 {
			return nil, fmt.Errorf("model: the weights have no float32 %s %v for %s", t.ours, t.shape, t.hf)
		}
		if t.hf == "lm_head.weight" && g.tied {
			if !sameBits(w, weights[nn.ParamName(g.embedding, "weight")]) {
				return nil, fmt.Errorf("model: the tied head's weight %s differs from the embedding's", t.ours)
			}
			continue
		}
		if t.transpose {
			w = ops.Transpose(w)
		}
		out[t.hf] = w
	}
	bias := nn.ParamName(g.head, "bias")
	if b, ok := weights[bias]; ok && !opts.DropHeadBias {
		if m := maxAbs(b); m != 0 {
			return nil, fmt.Errorf("model: the head (layer %d) has a bias (largest |b| = %.4g) and %w: the written model's logits would differ by it", g.head, m, ErrHeadBias)
		}
	}
	c := HFConfig{
		ModelType: "gpt2", Architectures: []string{"GPT2LMHeadModel"},
		VocabSize: g.vocab, NPositions: g.positions, NCtx: g.positions, NEmbd: g.width, NLayer: len(g.blocks), NHead: g.heads, NInner: g.hidden,
		ActivationFunction: "gelu", LayerNormEpsilon: 1e-5,
		ResidPdrop: g.dropout, InitializerRange: 0.02, ScaleAttnWeights: true, UseCache: true,
		TieWordEmbeddings: g.tied, BosTokenID: gpt2EndOfText, EosTokenID: gpt2EndOfText, TorchDtype: "float32",
	}
	return &HFGPT2{Tensors: out, Config: c}, nil
}

// HF returns m in Hugging Face's GPT-2 layout, as ToHF.
func (m *Model) HF(opts HFOptions) (*HFGPT2, error) { return ToHF(m.Description, m.weights, opts) }

func sameBits(a, b *tensor.Tensor) bool {
	if a == nil || b == nil || !slices.Equal(a.Shape(), b.Shape()) {
		return false
	}
	x, y := a.Data32(), b.Data32()
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return true
}

func maxAbs(t *tensor.Tensor) float64 {
	m := 0.0
	for _, v := range t.Float64s() {
		m = max(m, math.Abs(v))
	}
	return m
}
