package nn_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// gptSpecs is a tiny GPT: an embedding, blocks transformer blocks, a final
// layer norm and a head over a vocabulary of vocab tokens.
func gptSpecs(vocab, dim, heads, blocks int, dropout float64) []nn.Spec {
	specs := []nn.Spec{{Type: "embedding", Dim: dim, Vocab: vocab, Init: nn.GPT}}
	for range blocks {
		specs = append(specs, nn.Spec{Type: "transformer_block", Heads: heads, Dropout: dropout, Init: nn.GPT})
	}
	return append(specs, nn.Spec{Type: "layernorm"}, nn.Spec{Type: "linear", Units: vocab, Init: nn.GPT})
}

// tokenBatch returns n samples of t token ids below vocab and their next
// tokens, drawn from seed.
func tokenBatch(seed uint64, dt tensor.DType, n, t, vocab int) (*tt, nn.Target) {
	rng := newRNG(seed)
	x := tensor.Zeros(dt, n, t)
	labels := make([]int, n*t)
	for i := range n * t {
		x.Set(float64(rng.IntN(vocab)), i/t, i%t)
		labels[i] = rng.IntN(vocab)
	}
	return x, nn.Target{Labels: labels, PerRow: t}
}

// TestTransformerGrad checks a transformer block's input and parameter
// gradients, and a per-token linear and layer norm's, by central differences
// in float64.
func TestTransformerGrad(t *testing.T) {
	for _, c := range []struct{ tokens, dim, heads, hidden, rows int }{
		{3, 4, 1, 8, 2}, {5, 6, 2, 12, 2}, {4, 8, 4, 5, 1},
	} {
		name := fmt.Sprintf("TransformerBlock(T=%d,D=%d,heads=%d,hidden=%d,rows=%d)", c.tokens, c.dim, c.heads, c.hidden, c.rows)
		t.Run(name, func(t *testing.T) {
			specs := []nn.Spec{{Type: "transformer_block", Heads: c.heads, Hidden: c.hidden, Init: nn.TorchDefault}}
			layers, err := nn.BuildShape(specs, []int{c.tokens, c.dim}, 5, tensor.Float64, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			// layer norms away from their defaults, so their gradients show
			for _, p := range layers[0].Params() {
				if p.Value.Dims() == 1 {
					p.Value.CopyFrom(randN(newRNG(uint64(p.Value.Size())), tensor.Float64, 0.5, p.Value.Size()))
				}
			}
			checkLayer(t, name, layers[0], randN(newRNG(9), tensor.Float64, 1, c.rows, c.tokens*c.dim))
		})
	}
	for _, typ := range []string{"linear", "layernorm"} {
		name := "per-token " + typ
		t.Run(name, func(t *testing.T) {
			layers, err := nn.BuildShape([]nn.Spec{{Type: typ, Units: 3, Init: nn.TorchDefault}}, []int{4, 5}, 5, tensor.Float64, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			checkLayer(t, name, layers[0], randN(newRNG(10), tensor.Float64, 1, 2, 20))
		})
	}
}

// TestEmbeddingGrad checks the embedding's parameter gradients by central
// differences: its inputs are ids, so only the tables vary.
func TestEmbeddingGrad(t *testing.T) {
	layers, err := nn.BuildShape([]nn.Spec{{Type: "embedding", Dim: 3, Vocab: 5, Init: nn.GPT}}, []int{4}, 2, tensor.Float64, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := layers[0]
	x, _ := tokenBatch(3, tensor.Float64, 3, 4, 5)
	x.Set(2, 0, 1)
	x.Set(2, 1, 1) // a repeated id: its rows' gradients add up
	ps := e.Params()
	var inputs []*tt
	for _, p := range ps {
		inputs = append(inputs, p.Value.Clone())
	}
	load := func(in []*tt) {
		for i, p := range ps {
			p.Value.CopyFrom(in[i])
		}
	}
	f := func(in []*tt) *tt {
		load(in)
		return e.Forward(fdPass, x)
	}
	backward := func(g *tt, in []*tt, _ *tt) []*tt {
		e.ZeroGrad()
		load(in)
		e.Forward(fdPass, x)
		if dx := e.Backward(fdPass, g, false); dx != nil {
			t.Errorf("embedding: dx %v without needDX", dx)
		}
		return []*tt{ps[0].Grad.Clone(), ps[1].Grad.Clone()}
	}
	opstest.CheckGrad(t, "Embedding", inputs, f, backward, gradTol)
}

// TestGPTMicroBatches: a tiny GPT trained by nn.Sequential gives the same
// loss and gradients, bit for bit, whatever the number of micro-batches,
// with tokens per sample that do and do not fill 32-row chunks.
func TestGPTMicroBatches(t *testing.T) {
	for _, tokens := range []int{32, 8, 5} {
		t.Run(fmt.Sprintf("T=%d", tokens), func(t *testing.T) {
			specs := gptSpecs(11, 8, 2, 2, 0.1)
			granule := nn.Granule(nn.Tokens(specs, []int{tokens}))
			x, tg := tokenBatch(4, tensor.Float32, 4*granule, tokens, 11)
			var want []*tt
			var wantLoss float64
			for _, micro := range []int{1, 2, 4} {
				layers, err := nn.BuildShape(specs, []int{tokens}, 7, tensor.Float32, 0, len(specs))
				if err != nil {
					t.Fatal(err)
				}
				seq := &nn.Sequential{Layers: layers, Loss: nn.CrossEntropy, Granule: granule}
				loss, err := seq.TrainStep(1, x, tg, micro)
				if err != nil {
					t.Fatal(err)
				}
				got := cloneGrads(seq.Params())
				if micro == 1 {
					want, wantLoss = got, loss
					if math.Abs(loss-math.Log(11)) > 0.5 {
						t.Errorf("first loss %v, want near ln 11 = %v at GPT's init", loss, math.Log(11))
					}
					continue
				}
				if math.Float64bits(loss) != math.Float64bits(wantLoss) {
					t.Errorf("%d micro-batches: loss %v, one gives %v", micro, loss, wantLoss)
				}
				for i, g := range got {
					if !sameBits(g, want[i]) {
						t.Errorf("%d micro-batches: gradient of %s differs by %g", micro, seq.Params()[i].Name, maxDiff(g, want[i]))
					}
				}
			}
		})
	}
}

// TestGPTSpecs: the table's checks of the new layer types and their shapes.
func TestGPTSpecs(t *testing.T) {
	shapes, err := nn.OutShapes(gptSpecs(65, 16, 4, 2, 0), []int{8})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(shapes); got != "[[8 16] [8 16] [8 16] [8 16] [8 65]]" {
		t.Errorf("shapes %s", got)
	}
	if n := nn.Tokens(gptSpecs(65, 16, 4, 2, 0), []int{8}); n != 8 {
		t.Errorf("Tokens = %d, want 8", n)
	}
	for _, c := range []struct {
		specs  []nn.Spec
		sample []int
		want   string
	}{
		{[]nn.Spec{{Type: "transformer_block", Heads: 3}}, []int{4, 8}, "heads = 3 must divide the width 8"},
		{[]nn.Spec{{Type: "transformer_block", Heads: 2}}, []int{8}, "put an embedding before it"},
		{[]nn.Spec{{Type: "embedding", Dim: 4, Vocab: 5}, {Type: "embedding", Dim: 4, Vocab: 5}}, []int{8}, "an embedding comes first"},
		{[]nn.Spec{{Type: "embedding", Dim: 4}}, []int{8}, "vocabulary 0"},
		{[]nn.Spec{{Type: "layernorm"}}, []int{1, 4, 4}, "add a flatten layer"},
	} {
		if _, err := nn.OutShapes(c.specs, c.sample); err == nil || !contains(err.Error(), c.want) {
			t.Errorf("OutShapes(%v, %v): %v, want an error saying %q", c.specs, c.sample, err, c.want)
		}
	}
	for _, c := range []struct {
		spec nn.Spec
		want string
	}{
		{nn.Spec{Type: "embedding", Init: nn.GPT}, "dim: required"},
		{nn.Spec{Type: "transformer_block", Init: nn.GPT}, "heads: required"},
		{nn.Spec{Type: "transformer_block", Heads: 2, Dropout: 1, Init: nn.GPT}, "dropout = 1: must be in [0, 1)"},
		{nn.Spec{Type: "transformer_block", Heads: 2, Hidden: -1, Init: nn.GPT}, "hidden = -1: must be at least 0"},
	} {
		s := c.spec
		if err := nn.CheckSpec(&s, func(string) bool { return false }); err == nil || !contains(err.Error(), c.want) {
			t.Errorf("CheckSpec(%+v): %v, want %q", c.spec, err, c.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestDecoder: a GPT run one token at a time with its keys and values kept
// gives the outputs of the whole sequence's forward at every position.
func TestDecoder(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		specs := gptSpecs(13, 8, 2, 2, 0.2) // dropout: off in generation
		layers, err := nn.BuildShape(specs, []int{6}, 3, dt, 0, len(specs))
		if err != nil {
			t.Fatal(err)
		}
		x, _ := tokenBatch(5, dt, 2, 6, 13)
		want := (&nn.Sequential{Layers: layers}).Forward(nn.Pass{}, x) // [2, 6·13]
		d, err := nn.NewDecoder(layers, 2)
		if err != nil {
			t.Fatal(err)
		}
		tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 2e-5}[dt]
		for pos := range 6 {
			out, err := d.Next([]int{int(x.At(0, pos)), int(x.At(1, pos))})
			if err != nil {
				t.Fatal(err)
			}
			for r := range 2 {
				for j := range 13 {
					if g, w := out.At(r, j), want.At(r, pos*13+j); math.Abs(g-w) > tol*max(1, math.Abs(w)) {
						t.Fatalf("%v: position %d, row %d, output %d: decoder %v, forward %v", dt, pos, r, j, g, w)
					}
				}
			}
		}
		if _, err := d.Next([]int{1, 2}); err == nil || !strings.Contains(err.Error(), "full") {
			t.Errorf("a 7th token in a context of 6: %v, want an error saying it is full", err)
		}
		d.Reset()
		if _, err := d.Next([]int{1, 13}); err == nil || !strings.Contains(err.Error(), "vocabulary") {
			t.Errorf("token 13 of 13: %v, want an error naming the vocabulary", err)
		}
	}
	if _, err := nn.NewDecoder([]nn.Layer{nn.NewReLU()}, 1); err == nil {
		t.Error("a decoder without an embedding: no error")
	}
}

// TestTie: a tied head starts with the embedding's token weights, wherever
// it is built; SumTied gives both copies the sum of their gradients and
// Untied counts each weight once; a tie that does not fit is refused.
func TestTie(t *testing.T) {
	specs := gptSpecs(11, 8, 2, 1, 0)
	specs[len(specs)-1].Tie = true
	ties := nn.Ties(specs)
	if len(ties) != 1 || ties[0] != (nn.Tie{Embedding: 0, Head: 3}) {
		t.Fatalf("Ties = %v, want [{0 3}]", ties)
	}
	all, err := nn.BuildShape(specs, []int{5}, 9, tensor.Float32, 0, len(specs))
	if err != nil {
		t.Fatal(err)
	}
	head, err := nn.BuildShape(specs, []int{5}, 9, tensor.Float32, 3, 4) // alone, as a stage builds it
	if err != nil {
		t.Fatal(err)
	}
	w := all[0].Params()[0].Value
	for _, l := range []nn.Layer{all[3], head[0]} {
		if !sameBits(l.Params()[0].Value, w) {
			t.Errorf("the tied head's weight is not the embedding's")
		}
	}
	seq := &nn.Sequential{Layers: all, Loss: nn.CrossEntropy}
	x, tg := tokenBatch(2, tensor.Float32, 2, 5, 11)
	if _, err := seq.TrainStep(1, x, tg, 1); err != nil {
		t.Fatal(err)
	}
	ps := seq.Params()
	e, h := ps[0].Grad.Clone(), ps[len(ps)-2].Grad.Clone()
	nn.SumTied(ps, ties)
	sum := e.Clone()
	for i := range sum.Data32() {
		sum.Data32()[i] += h.Data32()[i]
	}
	if !sameBits(ps[0].Grad, sum) || !sameBits(ps[len(ps)-2].Grad, sum) {
		t.Error("SumTied did not give both copies the sum of their gradients")
	}
	if n := len(nn.Untied(ps, ties)); n != len(ps)-1 {
		t.Errorf("Untied kept %d of %d parameters, want all but the head's copy", n, len(ps))
	}
	for _, c := range []struct {
		edit func([]nn.Spec) []nn.Spec
		want string
	}{
		{func(s []nn.Spec) []nn.Spec { s[len(s)-1].Units = 10; return s }, "units = 10 differ from the vocabulary 11"},
		{func(s []nn.Spec) []nn.Spec { return s[1:] }, "needs an embedding before it"},
		{func(s []nn.Spec) []nn.Spec { s[len(s)-1].Shards = 2; return s }, "cannot be sharded"},
	} {
		bad := c.edit(slices.Clone(specs))
		sample := []int{5}
		if bad[0].Type != "embedding" {
			sample = []int{5, 8}
		}
		if _, err := nn.OutShapes(bad, sample); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OutShapes: %v, want an error saying %q", err, c.want)
		}
	}
}
