package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Embedding turns samples of Tokens token ids, [N, Tokens] (the ids as
// values), into their vectors [N, Tokens·Dim]: the token's row of W plus the
// position's row of P, as GPT-2's wte and wpe.
type Embedding struct {
	Vocab, Tokens, Dim int
	W, P               *tensor.Tensor // [Vocab, Dim], [Tokens, Dim]
	GW, GP             *tensor.Tensor
	ids                cache[[]int]
	free               [][]int // id buffers of finished micro-batches, reused
}

// NewEmbedding returns an embedding with both tables drawn by init from rng,
// the tokens' first.
func NewEmbedding(dt tensor.DType, vocab, tokens, dim int, init Init, rng *rand.Rand) (*Embedding, error) {
	if vocab <= 0 || tokens <= 0 || dim <= 0 {
		return nil, fmt.Errorf("nn: embedding needs positive sizes, got vocab=%d tokens=%d dim=%d", vocab, tokens, dim)
	}
	e := &Embedding{Vocab: vocab, Tokens: tokens, Dim: dim,
		W: tensor.Zeros(dt, vocab, dim), P: tensor.Zeros(dt, tokens, dim),
		GW: tensor.Zeros(dt, vocab, dim), GP: tensor.Zeros(dt, tokens, dim), ids: cache[[]int]{}}
	for _, w := range []*tensor.Tensor{e.W, e.P} {
		var err error
		if init == TorchDefault {
			w.FillNormal(rng, 0, 1) // torch.nn.Embedding's N(0, 1)
		} else {
			err = init.Fill(w, rng)
		}
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Embedding) Kind() string { return "embedding" }

func (e *Embedding) Params() []Param {
	return []Param{{Name: "weight", Value: e.W, Grad: e.GW}, {Name: "position_weight", Value: e.P, Grad: e.GP}}
}

func (e *Embedding) ZeroGrad()     { zeroGrads(e.Params()) }
func (e *Embedding) InFlight() int { return len(e.ids) }
func (e *Embedding) Reset()        { clear(e.ids) }

// tokenIDs reads the ids of x [N, Tokens], checking each is a whole number
// in [0, Vocab).
func (e *Embedding) tokenIDs(x *tensor.Tensor) []int {
	if x.Dims() != 2 || x.Dim(1) != e.Tokens {
		panic(fmt.Errorf("nn.Embedding: input %v is not samples of %d token ids", x.Shape(), e.Tokens))
	}
	var ids []int
	if n := len(e.free); n > 0 {
		ids, e.free = e.free[n-1][:0], e.free[:n-1]
	}
	at := func(i int, v float64) {
		id := int(v)
		if float64(id) != v || id < 0 || id >= e.Vocab {
			panic(fmt.Errorf("nn.Embedding: input %d is %v, not a token id in [0, %d)", i, v, e.Vocab))
		}
		ids = append(ids, id)
	}
	if x.DType() == tensor.Float32 {
		for i, v := range x.Data32() {
			at(i, float64(v))
		}
	} else {
		for i, v := range x.Data64() {
			at(i, v)
		}
	}
	return ids
}

func (e *Embedding) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	ids := e.tokenIDs(x)
	n := x.Dim(0)
	y := p.Arena.Tensor(e.W.DType(), n, e.Tokens*e.Dim)
	ops.EmbeddingInto(toTokens(p.Arena, y, e.Tokens, e.Dim), e.W, ids)
	// the position's vector, added to every sample's tokens
	if y.DType() == tensor.Float32 {
		ys, ps := y.Data32(), e.P.Data32()
		for r := range n {
			vec.Add(ys[r*len(ps):(r+1)*len(ps)], ps)
		}
	} else {
		ys, ps := y.Data64(), e.P.Data64()
		for r := range n {
			row := ys[r*len(ps) : (r+1)*len(ps)]
			for i, v := range ps {
				row[i] += v
			}
		}
	}
	if p.Train {
		e.ids.put(p, ids)
	} else {
		e.free = append(e.free, ids)
	}
	return y
}

// Backward adds dy's rows into the rows of W their ids name and into P,
// sample after sample in order, so that the sums do not depend on how a
// mini-batch is cut. The ids have no gradient: dx, when asked for, is zero.
func (e *Embedding) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	ids := e.ids.take("Embedding", p)
	n := len(ids) / e.Tokens
	if dy.Dims() != 2 || dy.Dim(0) != n || dy.Dim(1) != e.Tokens*e.Dim || dy.DType() != e.W.DType() {
		panic(fmt.Errorf("nn.Embedding: dy %v %v does not fit output [%d %d]", dy.DType(), dy.Shape(), n, e.Tokens*e.Dim))
	}
	ops.EmbeddingBackwardInto(e.GW, toTokens(p.Arena, dy, e.Tokens, e.Dim), ids)
	if dy.DType() == tensor.Float32 {
		g, d := e.GP.Data32(), dy.Data32()
		for r := range n {
			vec.Add(g, d[r*len(g):(r+1)*len(g)])
		}
	} else {
		g, d := e.GP.Data64(), dy.Data64()
		for r := range n {
			for i, v := range d[r*len(g) : (r+1)*len(g)] {
				g[i] += v
			}
		}
	}
	e.free = append(e.free, ids)
	if !needDX {
		return nil
	}
	dx := p.Arena.Tensor(dy.DType(), n, e.Tokens)
	dx.Zero()
	return dx
}
