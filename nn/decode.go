package nn

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// Decoder runs a sequence model (an embedding first, then layers of tokens)
// one token at a time, for generation: Next takes each sequence's next
// token and gives the model's outputs for it, attending to the tokens
// before it through the keys and values each transformer block keeps, so a
// token costs one position, not the whole context. Layers are float32 or
// float64 alike; a Decoder is for one goroutine.
type Decoder struct {
	layers []Layer
	rows   int
	pos    int // the position of the next token
	tokens int // the context: positions the model has
	states []decodeState
}

// decodeState is what a layer keeps between tokens: a block's keys and
// values, [rows, tokens, dim] each.
type decodeState struct {
	k, v *tensor.Tensor
}

// tokenDecoder is a layer that can take one token of each sequence, x
// [rows, features of a token], at position pos.
type tokenDecoder interface {
	decodeToken(s *decodeState, pos int, x *tensor.Tensor) *tensor.Tensor
}

// NewDecoder returns a decoder of rows sequences over layers, which must be
// an embedding followed by layers that work token by token.
func NewDecoder(layers []Layer, rows int) (*Decoder, error) {
	if len(layers) == 0 || rows < 1 {
		return nil, fmt.Errorf("nn: a decoder needs layers and rows, got %d and %d", len(layers), rows)
	}
	e, ok := layers[0].(*Embedding)
	if !ok {
		return nil, fmt.Errorf("nn: a decoder's first layer must be an embedding, not %s", layers[0].Kind())
	}
	d := &Decoder{layers: layers, rows: rows, tokens: e.Tokens, states: make([]decodeState, len(layers))}
	for i, l := range layers {
		if _, ok := l.(tokenDecoder); !ok {
			return nil, fmt.Errorf("nn: layer %d (%s) cannot run one token at a time", i, l.Kind())
		}
	}
	return d, nil
}

// Tokens returns the context length: the positions the model has.
func (d *Decoder) Tokens() int { return d.tokens }

// Pos returns the position the next token takes.
func (d *Decoder) Pos() int { return d.pos }

// Reset forgets every token: the next one is at position 0.
func (d *Decoder) Reset() { d.pos = 0 }

// Next feeds ids, the next token of each sequence, and returns the model's
// outputs for them, [rows, outputs]. It fails when the context is full.
func (d *Decoder) Next(ids []int) (*tensor.Tensor, error) {
	if len(ids) != d.rows {
		return nil, fmt.Errorf("nn: %d ids for %d sequences", len(ids), d.rows)
	}
	if d.pos >= d.tokens {
		return nil, fmt.Errorf("nn: the context of %d tokens is full: Reset and feed the last ones again", d.tokens)
	}
	e := d.layers[0].(*Embedding)
	x := tensor.Zeros(e.W.DType(), d.rows, 1)
	for i, id := range ids {
		if id < 0 || id >= e.Vocab {
			return nil, fmt.Errorf("nn: token %d is outside the vocabulary [0, %d)", id, e.Vocab)
		}
		x.Set(float64(id), i, 0)
	}
	for i, l := range d.layers {
		x = l.(tokenDecoder).decodeToken(&d.states[i], d.pos, x)
	}
	d.pos++
	return x, nil
}

// decodeToken looks up the ids in x [rows, 1] at position pos, adding in
// the dtype as the forward does.
func (e *Embedding) decodeToken(_ *decodeState, pos int, x *tensor.Tensor) *tensor.Tensor {
	rows, dim := x.Dim(0), e.Dim
	y := tensor.Zeros(e.W.DType(), rows, dim)
	for r := range rows {
		id := int(x.At(r, 0))
		if y.DType() == tensor.Float32 {
			w, p, o := e.W.Data32()[id*dim:(id+1)*dim], e.P.Data32()[pos*dim:(pos+1)*dim], y.Data32()[r*dim:(r+1)*dim]
			for j := range o {
				o[j] = w[j] + p[j]
			}
			continue
		}
		w, p, o := e.W.Data64()[id*dim:(id+1)*dim], e.P.Data64()[pos*dim:(pos+1)*dim], y.Data64()[r*dim:(r+1)*dim]
		for j := range o {
			o[j] = w[j] + p[j]
		}
	}
	return y
}

// decodeToken runs the wrapped row layer on the one token of each row.
func (l *tokenLayer) decodeToken(_ *decodeState, _ int, x *tensor.Tensor) *tensor.Tensor {
	return l.Layer.Forward(Pass{}, x)
}

// decodeToken: element-wise layers take a token as they take a sample.
func (a *Activation) decodeToken(_ *decodeState, _ int, x *tensor.Tensor) *tensor.Tensor {
	return a.Forward(Pass{}, x)
}

func (d *Dropout) decodeToken(_ *decodeState, _ int, x *tensor.Tensor) *tensor.Tensor {
	return d.Forward(Pass{}, x)
}

// decodeToken runs the block on one token of each row, x [rows, Dim], its
// key and value added to the state at pos and its query attending to
// positions 0..pos.
func (b *TransformerBlock) decodeToken(s *decodeState, pos int, x *tensor.Tensor) *tensor.Tensor {
	rows, d := x.Dim(0), b.Dim
	if s.k == nil || s.k.Dim(0) != rows {
		s.k = tensor.Zeros(x.DType(), rows, b.Tokens, d)
		s.v = tensor.Zeros(x.DType(), rows, b.Tokens, d)
	}
	p := Pass{}
	qkv := b.attn.Forward(p, b.ln1.Forward(p, x))
	att := tensor.Zeros(x.DType(), rows, d)
	hd := d / b.Heads
	scale := 1 / math.Sqrt(float64(hd))
	w := make([]float64, pos+1)
	for r := range rows {
		for j := range d {
			s.k.Set(qkv.At(r, d+j), r, pos, j)
			s.v.Set(qkv.At(r, 2*d+j), r, pos, j)
		}
		for h := range b.Heads {
			lo := h * hd
			top := math.Inf(-1)
			for t := range pos + 1 {
				dot := 0.0
				for j := lo; j < lo+hd; j++ {
					dot += qkv.At(r, j) * s.k.At(r, t, j)
				}
				w[t] = dot * scale
				top = max(top, w[t])
			}
			sum := 0.0
			for t := range w {
				w[t] = math.Exp(w[t] - top)
				sum += w[t]
			}
			for j := lo; j < lo+hd; j++ {
				v := 0.0
				for t := range w {
					v += w[t] / sum * s.v.At(r, t, j)
				}
				att.Set(v, r, j)
			}
		}
	}
	x2 := residual(p, x, b.proj.Forward(p, att))
	return residual(p, x2, b.out.Forward(p, b.gelu.Forward(p, b.fc.Forward(p, b.ln2.Forward(p, x2)))))
}
