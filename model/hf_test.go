package model_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/internal/checkpoint"
	"github.com/pipetrain/pipetrain/model"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// tinyGPT is the description of the model testdata/hf/make_gpt2_tiny.py
// makes: 2 blocks of 2 heads, width 32, 16 tokens, 256 byte tokens, a tied
// head.
func tinyGPT(tie bool) model.Description {
	tokens := make([]string, 256)
	for i := range tokens {
		tokens[i] = string([]byte{byte(i)})
	}
	return model.Description{
		Format: model.Format, Sample: []int{16}, Loss: nn.CrossEntropy, Seed: 1,
		Classes: tokens, Vocab: "bytes", Input: model.Input{Data: "text", Divide: 1},
		Layers: []nn.Spec{
			{Type: "embedding", Dim: 32, Vocab: 256, Init: nn.GPT},
			{Type: "transformer_block", Heads: 2, Init: nn.GPT},
			{Type: "transformer_block", Heads: 2, Init: nn.GPT},
			{Type: "layernorm"},
			{Type: "linear", Units: 256, Init: nn.GPT, Tie: tie},
		},
	}
}

func readSafetensors(t *testing.T, path string) map[string]*tensor.Tensor {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, _, err := checkpoint.DecodeWide(f)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestFromHFMatchesPyTorch imports the tiny GPT-2 file and compares the
// model's logits with those nanoGPT's GPT computed in float64 on the same
// weights (make_gpt2_tiny.py).
func TestFromHFMatchesPyTorch(t *testing.T) {
	d := tinyGPT(true)
	weights, err := model.FromHF(d, readSafetensors(t, "testdata/hf/gpt2_tiny.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(d, weights)
	if err != nil {
		t.Fatal(err)
	}
	ref := readSafetensors(t, "testdata/hf/gpt2_tiny_logits.safetensors")
	tokens, want := ref["tokens"], ref["logits"] // [2, 16] ids, [2, 16, 256] float64
	got, err := m.Outputs(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if got.Size() != want.Size() {
		t.Fatalf("logits %v, want %v", got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	diff, scale := 0.0, 0.0
	for i := range w {
		diff, scale = max(diff, math.Abs(g[i]-w[i])), max(scale, math.Abs(w[i]))
	}
	t.Logf("max |go - torch| = %.3g, max |torch| = %.3g, relative %.3g", diff, scale, diff/scale)
	if scale == 0 || diff/scale > 1e-4 {
		t.Errorf("max |logits - PyTorch's| / max |PyTorch's| = %g / %g = %g, want <= 1e-4", diff, scale, diff/scale)
	}
}

// hfFile returns the tiny file's tensors, each key with the transformer.
// prefix, as map of the caller's to change.
func hfFile(t *testing.T) map[string]*tensor.Tensor {
	ts := readSafetensors(t, "testdata/hf/gpt2_tiny.safetensors")
	out := map[string]*tensor.Tensor{}
	for k, v := range ts {
		out["transformer."+k] = v
	}
	return out
}

func TestFromHFErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		desc func(d *model.Description)
		file func(f map[string]*tensor.Tensor)
		want string
	}{
		{"shape", nil, func(f map[string]*tensor.Tensor) {
			f["transformer.h.1.mlp.c_fc.weight"] = tensor.Zeros(tensor.Float32, 32, 64)
		},
			"tensor transformer.h.1.mlp.c_fc.weight: the file's shape [32 64], the model's [32 128]"},
		{"transposed", nil, func(f map[string]*tensor.Tensor) {
			f["transformer.h.0.mlp.c_fc.weight"] = tensor.Zeros(tensor.Float32, 128, 32)
		},
			"tensor transformer.h.0.mlp.c_fc.weight: the file's shape [128 32], the model's [32 128]"},
		{"missing", nil, func(f map[string]*tensor.Tensor) { delete(f, "transformer.h.1.ln_2.bias") },
			"the file has no tensor transformer.h.1.ln_2.bias (the model's is [32])"},
		{"extra block", nil, func(f map[string]*tensor.Tensor) { f["transformer.h.2.ln_1.weight"] = tensor.Zeros(tensor.Float32, 32) },
			"tensor transformer.h.2.ln_1.weight [32] of the file has no place in the model (2 blocks"},
		{"fewer blocks in the model", func(d *model.Description) { d.Layers = slices.Delete(d.Layers, 2, 3) }, nil,
			"tensor transformer.h.1.attn.c_attn.bias [96] of the file has no place in the model (1 blocks"},
		{"both prefixes", nil, func(f map[string]*tensor.Tensor) { f["wte.weight"] = f["transformer.wte.weight"] },
			"the file holds both transformer.wte.weight and wte.weight"},
		{"short wpe", func(d *model.Description) { d.Sample = []int{32} }, nil,
			"tensor transformer.wpe.weight: the file's shape [16 32], the model's [32 32]"},
		{"vocabulary", func(d *model.Description) { d.Layers[0].Vocab, d.Layers[4].Units = 128, 128 }, nil,
			"tensor transformer.wte.weight: the file's shape [256 32], the model's [128 32]"},
		{"untied head in a tied model", nil, func(f map[string]*tensor.Tensor) { f["lm_head.weight"] = tensor.Zeros(tensor.Float32, 256, 32) },
			"lm_head.weight differs from its wte.weight"},
		{"float64", nil, func(f map[string]*tensor.Tensor) { f["transformer.ln_f.bias"] = tensor.Zeros(tensor.Float64, 32) },
			"tensor transformer.ln_f.bias is float64: want F32, F16 or BF16"},
		{"not a GPT", func(d *model.Description) { d.Layers[3] = nn.Spec{Type: "gelu"} }, nil,
			"not a GPT-2: layer 3 is gelu"},
		{"unlike blocks", func(d *model.Description) { d.Layers[2].Heads = 4 }, nil,
			"block 1 (layer 2) has heads 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, f := tinyGPT(true), hfFile(t)
			if c.desc != nil {
				c.desc(&d)
			}
			if c.file != nil {
				c.file(f)
			}
			_, err := model.FromHF(d, f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("FromHF: error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestFromHFKeys checks the forms of file FromHF reads alike: keys with or
// without the prefix, with an lm_head.weight equal to wte's or none, a wpe
// longer than the block size (cropped).
func TestFromHFKeys(t *testing.T) {
	d := tinyGPT(true)
	base, err := model.FromHF(d, hfFile(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		file func(f map[string]*tensor.Tensor)
	}{
		{"no prefix", func(f map[string]*tensor.Tensor) {
			for k, v := range f {
				delete(f, k)
				f[strings.TrimPrefix(k, "transformer.")] = v
			}
		}},
		{"lm_head", func(f map[string]*tensor.Tensor) { f["lm_head.weight"] = f["transformer.wte.weight"].Clone() }},
		{"long wpe", func(f map[string]*tensor.Tensor) {
			w := f["transformer.wpe.weight"].Data32()
			f["transformer.wpe.weight"] = tensor.FromFloat32s(append(slices.Clone(w), make([]float32, 32*8)...), 24, 32)
		}},
	} {
		f := hfFile(t)
		c.file(f)
		got, err := model.FromHF(d, f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if err := sameWeights(got, base); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if b := base["4.bias"]; b == nil || b.Size() != 256 || maxAbs(b) != 0 {
		t.Errorf("the head's bias is %v, want 256 zeros", b)
	}
	if err := sameWeights(map[string]*tensor.Tensor{"w": base["4.weight"]}, map[string]*tensor.Tensor{"w": base["0.weight"]}); err != nil {
		t.Errorf("the tied head's weight is not wte's: %v", err)
	}
}

func maxAbs(t *tensor.Tensor) float64 {
	m := 0.0
	for _, v := range t.Float64s() {
		m = max(m, math.Abs(v))
	}
	return m
}

func sameWeights(got, want map[string]*tensor.Tensor) error {
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		return fmt.Errorf("tensors %v, want %v", g, w)
	}
	for k, w := range want {
		g := got[k]
		if !slices.Equal(g.Shape(), w.Shape()) {
			return fmt.Errorf("%s: shape %v, want %v", k, g.Shape(), w.Shape())
		}
		gv, wv := g.Float64s(), w.Float64s()
		for i := range wv {
			if math.Float64bits(gv[i]) != math.Float64bits(wv[i]) {
				return fmt.Errorf("%s[%d] = %v, want %v", k, i, gv[i], wv[i])
			}
		}
	}
	return nil
}

// TestHFRoundTrip writes the imported model in Hugging Face's layout and
// reads it back: the same tensors, bit for bit, tied and not, with a head
// bias and without (bias = false, GPT-2's head).
func TestHFRoundTrip(t *testing.T) {
	for _, c := range []struct{ tie, bias bool }{{true, true}, {false, true}, {true, false}, {false, false}} {
		tie := c.tie
		d := tinyGPT(tie)
		head := nn.ParamName(len(d.Layers)-1, "bias")
		if !c.bias {
			d.Layers[len(d.Layers)-1].Bias = new(false)
		}
		f := hfFile(t)
		if !tie { // a head of its own
			w := f["transformer.wte.weight"].Clone()
			for i, v := range w.Data32() {
				w.Data32()[i] = -v
			}
			f["lm_head.weight"] = w
		}
		weights, err := model.FromHF(d, f)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := weights[head]; ok != c.bias {
			t.Errorf("tie = %v, bias = %v: the imported weights hold %s: %v", tie, c.bias, head, ok)
		}
		m, err := model.New(d, weights)
		if err != nil {
			t.Fatal(err)
		}
		hf, err := m.HF(model.HFOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := hf.Tensors["lm_head.weight"]; ok == tie {
			t.Errorf("tie = %v: lm_head.weight written: %v, want %v (save_pretrained drops a tied head)", tie, ok, !tie)
		}
		var buf bytes.Buffer
		if err := checkpoint.Encode(&buf, hf.Tensors, nil); err != nil {
			t.Fatal(err)
		}
		back, _, err := checkpoint.DecodeWide(&buf)
		if err != nil {
			t.Fatal(err)
		}
		again, err := model.FromHF(d, back)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameWeights(again, weights); err != nil {
			t.Errorf("tie = %v: export then import: %v", tie, err)
		}
		hc := hf.Config
		if hc.ModelType != "gpt2" || hc.NLayer != 2 || hc.NHead != 2 || hc.NEmbd != 32 || hc.NPositions != 16 || hc.VocabSize != 256 ||
			hc.NInner != 128 || hc.TieWordEmbeddings != tie || hc.ActivationFunction != "gelu" || hc.LayerNormEpsilon != 1e-5 {
			js, _ := json.Marshal(hc)
			t.Errorf("tie = %v: config %s", tie, js)
		}
	}
}

func TestToHFErrors(t *testing.T) {
	d := tinyGPT(true)
	weights, err := model.FromHF(d, hfFile(t))
	if err != nil {
		t.Fatal(err)
	}
	biased := maps.Clone(weights)
	biased["4.bias"] = tensor.Full(tensor.Float32, 0.5, 256)
	untied := maps.Clone(weights)
	untied["4.weight"] = tensor.Zeros(tensor.Float32, 256, 32)
	mlp := model.Description{Format: model.Format, Sample: []int{4}, Loss: nn.CrossEntropy, Classes: []string{"a", "b"},
		Input: model.Input{Data: "csv", Divide: 1}, Layers: []nn.Spec{{Type: "linear", Units: 8}, {Type: "relu"}, {Type: "linear", Units: 2}}}
	for _, c := range []struct {
		name    string
		d       model.Description
		weights map[string]*tensor.Tensor
		opts    model.HFOptions
		want    string
	}{
		{"head bias", d, biased, model.HFOptions{}, "the head (layer 4) has a bias (largest |b| = 0.5) and GPT-2's lm_head has none"},
		{"tied head differs", d, untied, model.HFOptions{}, "the tied head's weight 4.weight differs from the embedding's"},
		{"missing", d, map[string]*tensor.Tensor{}, model.HFOptions{}, "the weights have no float32 0.weight [256 32] for transformer.wte.weight"},
		{"not a GPT", mlp, nil, model.HFOptions{}, "not a GPT-2: 3 layers"},
	} {
		if _, err := model.ToHF(c.d, c.weights, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ToHF: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := model.ToHF(d, biased, model.HFOptions{}); !errors.Is(err, model.ErrHeadBias) {
		t.Errorf("head bias: ToHF: error %v, want ErrHeadBias", err)
	}
	hf, err := model.ToHF(d, biased, model.HFOptions{DropHeadBias: true})
	if err != nil {
		t.Fatalf("DropHeadBias: %v", err)
	}
	if _, ok := hf.Tensors["lm_head.bias"]; ok {
		t.Errorf("DropHeadBias wrote lm_head.bias")
	}
}

// halfTensor is a tensor of 16-bit floats for mixedFile.
type halfTensor struct {
	dtype string // F16 or BF16
	shape []int
	bits  []uint16
}

// mixedFile writes a safetensors file of F32 tensors and halves, by hand:
// Encode writes no halves.
func mixedFile(f32 map[string]*tensor.Tensor, halves map[string]halfTensor) []byte {
	header := map[string]any{}
	var data []byte
	for _, k := range slices.Sorted(maps.Keys(f32)) {
		begin := len(data)
		for _, v := range f32[k].Data32() {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		header[k] = map[string]any{"dtype": "F32", "shape": f32[k].Shape(), "data_offsets": []int{begin, len(data)}}
	}
	for _, k := range slices.Sorted(maps.Keys(halves)) {
		begin := len(data)
		for _, b := range halves[k].bits {
			data = binary.LittleEndian.AppendUint16(data, b)
		}
		header[k] = map[string]any{"dtype": halves[k].dtype, "shape": halves[k].shape, "data_offsets": []int{begin, len(data)}}
	}
	h, _ := json.Marshal(header)
	return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data...)
}

// TestFromHFHalves reads a GPT-2 file with BF16 and F16 tensors: each half
// is widened exactly, and a Conv1D weight transposed after.
func TestFromHFHalves(t *testing.T) {
	d := tinyGPT(true)
	f := hfFile(t)
	wte := f["transformer.wte.weight"].Data32()
	bf := halfTensor{"BF16", []int{256, 32}, make([]uint16, len(wte))}
	for i, v := range wte {
		bf.bits[i] = uint16(math.Float32bits(v) >> 16)
	}
	// F16 values by their bits: normal numbers of every sign, exponent and fraction
	f16 := halfTensor{"F16", []int{32, 96}, make([]uint16, 32*96)}
	for i := range f16.bits {
		f16.bits[i] = uint16(i%2)<<15 | uint16(1+i%30)<<10 | uint16(i*37%1024)
	}
	delete(f, "transformer.wte.weight")
	delete(f, "transformer.h.0.attn.c_attn.weight")
	file := mixedFile(f, map[string]halfTensor{"transformer.wte.weight": bf, "transformer.h.0.attn.c_attn.weight": f16})
	hf, _, err := checkpoint.DecodeWide(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	got, err := model.FromHF(d, hf)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got["0.weight"].Data32() {
		if want := math.Float32frombits(uint32(bf.bits[i]) << 16); v != want {
			t.Fatalf("0.weight[%d] = %v, want the BF16 %#04x = %v", i, v, bf.bits[i], want)
		}
	}
	w := got["1.attn.c_attn.weight"] // [96, 32]: the file's [32, 96] transposed
	for o := range 96 {
		for in := range 32 {
			b := f16.bits[in*96+o]
			sign := 1 - 2*float64(b>>15)
			want := sign * math.Ldexp(1+float64(b&0x3ff)/1024, int(b>>10&0x1f)-15)
			if v := w.Data32()[o*32+in]; float64(v) != want {
				t.Fatalf("1.attn.c_attn.weight[%d, %d] = %v, want the F16 %#04x = %v", o, in, v, b, want)
			}
		}
	}
	if _, err := model.New(d, got); err != nil {
		t.Fatal(err)
	}
}

// TestLoadByteTokens: a "bytes" model's tokens from 0x80 up, which JSON
// cannot hold, come back from a checkpoint as their bytes.
func TestLoadByteTokens(t *testing.T) {
	d := tinyGPT(true)
	weights, err := model.FromHF(d, hfFile(t))
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := checkpoint.Save(t.TempDir(), checkpoint.Meta{Version: 1, Model: js}, weights, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Classes, d.Classes) {
		t.Errorf("loaded tokens 0x80.. %q, want %q", m.Classes[128:132], d.Classes[128:132])
	}
}
