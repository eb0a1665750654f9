package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/tensor"
)

// Tie is a head that shares the embedding's token weights (a linear layer
// with tie = true): layer Head's "weight" is a copy of layer Embedding's.
// Each copy gathers its own gradient; SumTied gives both their sum, so that
// an optimizer updates each copy the same way and they stay equal, bit for
// bit, wherever the two layers run.
type Tie struct{ Embedding, Head int }

// Names returns the two copies' parameter names, the embedding's first.
func (t Tie) Names() (string, string) {
	return ParamName(t.Embedding, "weight"), ParamName(t.Head, "weight")
}

// Ties returns the model's tied heads: each linear layer with tie = true
// and the last embedding before it.
func Ties(specs []Spec) []Tie {
	var out []Tie
	emb := -1
	for i, s := range specs {
		switch {
		case s.TakesVocab():
			emb = i
		case s.Tie:
			out = append(out, Tie{Embedding: emb, Head: i})
		}
	}
	return out
}

// checkTies checks each tied head against its embedding: there is one
// before it, the head's units are its vocabulary and its input is tokens
// of the embedding's width.
func checkTies(specs []Spec, sample []int, shapes [][]int) error {
	for _, t := range Ties(specs) {
		h := specs[t.Head]
		in := sample
		if t.Head > 0 {
			in = shapes[t.Head-1]
		}
		if t.Embedding < 0 {
			return fmt.Errorf("nn: layer %d (%s): tie = true needs an embedding before it to share", t.Head, h.Type)
		}
		e := specs[t.Embedding]
		switch {
		case h.Units != e.Vocab:
			return fmt.Errorf("nn: layer %d (%s): tie = true: units = %d differ from the vocabulary %d of the embedding it shares (layer %d)", t.Head, h.Type, h.Units, e.Vocab, t.Embedding)
		case len(in) != 2 || in[1] != e.Dim:
			return fmt.Errorf("nn: layer %d (%s): tie = true: its input %v is not tokens of the embedding's width %d (layer %d)", t.Head, h.Type, in, e.Dim, t.Embedding)
		case h.Shards > 1:
			return fmt.Errorf("nn: layer %d (%s): tie = true: a tied head cannot be sharded (shards = %d)", t.Head, h.Type, h.Shards)
		}
	}
	return nil
}

// tiedWeight returns the embedding's first token weights, as layer e builds
// them from its own stream, for the head that shares them.
func tiedWeight(specs []Spec, e int, tokens int, b built) (*tensor.Tensor, error) {
	s := specs[e]
	emb, err := NewEmbedding(b.dt, s.Vocab, tokens, s.Dim, s.Init, built{index: e, seed: b.seed}.rng())
	if err != nil {
		return nil, err
	}
	return emb.W, nil
}

// SumTied gives both copies of each tied weight among ps the sum of their
// gradients, the embedding's plus the head's. ps are named as
// Sequential.Params names them; ties whose copies are not both in ps are
// left alone.
func SumTied(ps []Param, ties []Tie) {
	at := map[string]int{}
	for i, p := range ps {
		at[p.Name] = i
	}
	for _, t := range ties {
		a, b := t.Names()
		i, ok1 := at[a]
		j, ok2 := at[b]
		if !ok1 || !ok2 {
			continue
		}
		gi, gj := ps[i].Grad, ps[j].Grad
		if gi.DType() == tensor.Float32 {
			x, y := gi.Data32(), gj.Data32()
			for k := range x {
				x[k] += y[k]
				y[k] = x[k]
			}
			continue
		}
		x, y := gi.Data64(), gj.Data64()
		for k := range x {
			x[k] += y[k]
			y[k] = x[k]
		}
	}
}

// Untied returns ps without the heads' copies of tied weights: what a
// gradient norm counts, each weight once.
func Untied(ps []Param, ties []Tie) []Param {
	heads := map[string]bool{}
	for _, t := range ties {
		_, h := t.Names()
		heads[h] = true
	}
	var out []Param
	for _, p := range ps {
		if !heads[p.Name] {
			out = append(out, p)
		}
	}
	return out
}
