package nn

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// TransformerBlock is GPT-2's pre-LN block on samples of Tokens tokens of
// Dim features, [N, Tokens·Dim]:
//
//	x = x + drop(proj(attention(c_attn(ln_1(x)))))
//	x = x + drop(mlp.c_proj(gelu(mlp.c_fc(ln_2(x)))))
//
// with causal multi-head self-attention of Heads heads and an MLP of Hidden
// units, as nanoGPT's Block. Dropout, when P > 0, applies to the two
// residual branches (nanoGPT's resid_dropout); the attention weights are
// not dropped.
//
// Recompute trades memory for compute (RecomputeAttention, RecomputeBlocks):
// the activations it names are rebuilt in the backward, by the forward's
// own code, so the results are the same bits as RecomputeNone's.
type TransformerBlock struct {
	Tokens, Dim, Heads, Hidden int
	Recompute                  Recompute // set before the first pass

	ln1, ln2     *LayerNorm
	attn, proj   *Linear // attn.c_attn, attn.c_proj
	fc, out      *Linear // mlp.c_fc, mlp.c_proj
	gelu         *Activation
	drop1, drop2 *Dropout // nil without dropout
	saved        cache[blockSaved]
	inputs       cache[*tensor.Tensor] // RecomputeBlocks: the inputs of the micro-batches in flight
	own          Arena                 // the scratch when a pass brings none (Pass.Scratch)
	work         ops.AttentionWork
	params       []Param
	// apart runs the sub-layers without the fused residual adds and
	// GELU: the reference the tests hold the fused block to
	apart bool
}

// blockSaved is what the backward needs beyond the sub-layers' own caches.
type blockSaved struct {
	qkv   *tensor.Tensor
	probs *tensor.Tensor // the attention's probabilities, at short contexts (keepsProbs)
	stats *tensor.Tensor // else its row statistics; both nil: recomputed from qkv
}

// keepsProbs reports whether the block keeps the attention probabilities
// [N, heads, T, T] for the backward rather than each row's maximum and
// inverse sum [N, heads, T, 2], from which the backward rebuilds them. At
// short contexts rebuilding costs more than keeping (the recipe's T = 64:
// the attention's forward and backward 30% slower, the step 4%); at long
// ones the quadratic memory and its traffic cost more (T = 1024: 14-18%
// faster rebuilt, and the memory linear in T). Either gives the same bits.
func (b *TransformerBlock) keepsProbs() bool { return b.Tokens <= probsTokens }

// probsTokens is the longest context whose probabilities a block keeps.
const probsTokens = 256

// blockConfig is how to build a block: its place in the model (for dropout's
// streams) and the number of blocks (for GPT's init).
type blockConfig struct {
	tokens, dim, heads, hidden int
	dropout                    float64
	init                       Init
	seed                       uint64
	index, blocks              int
	recompute                  Recompute
}

// newTransformerBlock draws the block's weights from rng in the order
// c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj (weight, then bias for
// TorchDefault, as each Linear draws them).
func newTransformerBlock(dt tensor.DType, c blockConfig, rng *rand.Rand) (*TransformerBlock, error) {
	d, h := c.dim, c.hidden
	if c.tokens <= 0 || d <= 0 || h <= 0 || c.heads <= 0 || d%c.heads != 0 {
		return nil, fmt.Errorf("nn: transformer block of %d tokens of width %d needs heads dividing the width, got %d heads and %d hidden", c.tokens, d, c.heads, h)
	}
	b := &TransformerBlock{Tokens: c.tokens, Dim: d, Heads: c.heads, Hidden: h, Recompute: cmp.Or(c.recompute, RecomputeNone),
		ln1: NewLayerNorm(dt, d), ln2: NewLayerNorm(dt, d), gelu: NewGELU(false), saved: cache[blockSaved]{}, inputs: cache[*tensor.Tensor]{}}
	linear := func(in, out int, residual bool) (*Linear, error) {
		if c.init != GPT {
			return NewLinear(dt, in, out, c.init, rng)
		}
		l, err := NewLinear(dt, in, out, c.init, rng)
		if err == nil && residual {
			// GPT-2's smaller init of the projections into the residual
			// stream: N(0, 0.02) scaled to N(0, 0.02/√(2·blocks))
			scale(l.W, 1/math.Sqrt(2*float64(max(1, c.blocks))))
		}
		return l, err
	}
	var err error
	if b.attn, err = linear(d, 3*d, false); err != nil {
		return nil, err
	}
	if b.proj, err = linear(d, d, true); err != nil {
		return nil, err
	}
	if b.fc, err = linear(d, h, false); err != nil {
		return nil, err
	}
	if b.out, err = linear(h, d, true); err != nil {
		return nil, err
	}
	if c.dropout > 0 {
		// streams apart from any dropout layer's: layer indices stay small
		if b.drop1, err = NewDropout(c.dropout, c.seed, c.index<<20|1); err != nil {
			return nil, err
		}
		b.drop2, _ = NewDropout(c.dropout, c.seed, c.index<<20|2)
	}
	// the MLP's GELU runs on c_fc's tiles, its backward on c_proj's
	Fuse([]Layer{b.fc, b.gelu, b.out})
	return b, nil
}

func (b *TransformerBlock) Kind() string { return "transformer_block" }

// Params returns the parameters named as nanoGPT's Block names them.
func (b *TransformerBlock) Params() []Param {
	if b.params != nil {
		return b.params
	}
	for _, part := range []struct {
		name string
		l    Layer
	}{{"ln_1", b.ln1}, {"attn.c_attn", b.attn}, {"attn.c_proj", b.proj}, {"ln_2", b.ln2}, {"mlp.c_fc", b.fc}, {"mlp.c_proj", b.out}} {
		for _, p := range part.l.Params() {
			p.Name = part.name + "." + p.Name
			b.params = append(b.params, p)
		}
	}
	return b.params
}

func (b *TransformerBlock) ZeroGrad() { zeroGrads(b.Params()) }

func (b *TransformerBlock) InFlight() int { return len(b.saved) + len(b.inputs) }

func (b *TransformerBlock) Reset() {
	clear(b.saved)
	clear(b.inputs)
	for _, l := range b.layers() {
		l.Reset()
	}
}

func (b *TransformerBlock) layers() []Layer {
	ls := []Layer{b.ln1, b.attn, b.proj, b.ln2, b.fc, b.gelu, b.out}
	if b.drop1 != nil {
		ls = append(ls, b.drop1, b.drop2)
	}
	return ls
}

func (b *TransformerBlock) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	if x.Dims() != 2 || x.Dim(1) != b.Tokens*b.Dim {
		panic(fmt.Errorf("nn.TransformerBlock: input %v is not samples of %d tokens of width %d", x.Shape(), b.Tokens, b.Dim))
	}
	if p.Train && b.Recompute == RecomputeBlocks {
		// everything but the output lives in the scratch, dropped once
		// the output is made: the backward builds it again from x. The
		// attention's statistics too, so that both passes ask the scratch
		// for the same tensors, which it then keeps, not replaces.
		sp := b.scratch(p)
		y := b.forward(sp, p.Arena, sp.Arena, x, true, true)
		for _, l := range b.layers() {
			l.(forgetter).forget(p.Micro)
		}
		delete(b.saved, p.Micro)
		b.inputs.put(p, x)
		return y
	}
	if p.Train && b.Recompute == RecomputeAttention {
		// the attention's output, c_proj's input, lives in the scratch
		// and its statistics are not kept: the backward recomputes both
		y := b.forward(p, p.Arena, b.scratch(p).Arena, x, false, true)
		b.proj.forget(p.Micro)
		return y
	}
	if !p.Train && p.Scratch != nil {
		// an evaluation keeps only the output: the rest lives in the
		// scratch, which the next block reuses
		sp := b.scratch(p)
		return b.forward(sp, p.Arena, sp.Arena, x, false, true)
	}
	return b.forward(p, p.Arena, p.Arena, x, p.Train, true)
}

// attention returns the attention kernels' working memory for pass p:
// the pass's, shared with the other blocks, or the block's own.
func (b *TransformerBlock) attention(p Pass) *ops.AttentionWork {
	w := p.Attention
	if w == nil {
		w = &b.work
	}
	w.Threads, w.BF16, w.Arithmetic = p.Threads, p.Precision.IsBF16(), p.Precision.Arithmetic()
	return w
}

// scratch returns p lending from the scratch arena (the pass's, or the
// block's own), reset: what it lent before is no longer read.
func (b *TransformerBlock) scratch(p Pass) Pass {
	a := p.Scratch
	if a == nil {
		a = &b.own
	}
	a.Reset()
	p.Arena = a
	return p
}

// forward runs the block on x, its tensors lent by p's arena but the
// output, lent by out, and the attention's output, lent by attIn; keep
// keeps what the attention's backward reads, the probabilities or their
// rows' statistics (keepsProbs), which it otherwise recomputes from qkv.
// Without output it stops at what the backward reads (RecomputeBlocks'
// second forward) and returns nil.
func (b *TransformerBlock) forward(p Pass, out, attIn *Arena, x *tensor.Tensor, keep, output bool) *tensor.Tensor {
	n := x.Dim(0)
	xt := toTokens(p.Arena, x, b.Tokens, b.Dim)
	qkv := b.attn.Forward(p, b.ln1.Forward(p, xt))
	att := attIn.Tensor(x.DType(), n, b.Tokens, b.Dim)
	qkvt := p.Arena.view(qkv, 0, n, b.Tokens, 3*b.Dim)
	var probs, stats *tensor.Tensor
	switch {
	case keep && b.keepsProbs():
		probs = p.Arena.Tensor(x.DType(), n, b.Heads, b.Tokens, b.Tokens)
		ops.CausalSelfAttentionInto(att, probs, qkvt, b.Heads, b.attention(p))
	case keep:
		stats = p.Arena.Tensor(tensor.Float64, n, b.Heads, b.Tokens, 2)
		ops.CausalSelfAttentionStatsInto(att, stats, qkvt, b.Heads, b.attention(p))
	default:
		ops.CausalSelfAttentionInto(att, nil, qkvt, b.Heads, b.attention(p))
	}
	var x2 *tensor.Tensor
	if b.drop1 == nil && !b.apart {
		// the residual added on c_proj's tiles: one pass over x2, not three
		x2 = p.Arena.Like(xt)
		b.proj.forwardTo(p, x2, attIn.view(att, 0, n*b.Tokens, b.Dim), xt)
	} else {
		y := b.proj.Forward(p, attIn.view(att, 0, n*b.Tokens, b.Dim))
		x2 = residual(p, xt, dropped(p, b.drop1, y, n))
	}
	h := b.gelu.Forward(p, b.fc.Forward(p, b.ln2.Forward(p, x2)))
	if !output && b.drop2 == nil {
		// a recomputation for the backward, which reads c_proj's input
		// but not its output: a third of the forward's products spared
		b.out.x.put(p, h)
		b.saved.put(p, blockSaved{qkv: qkv, probs: probs, stats: stats})
		return nil
	}
	var o *tensor.Tensor
	if b.drop2 == nil && !b.apart {
		o = out.Like(x2)
		b.out.forwardTo(p, o, h, x2)
	} else {
		z := b.out.Forward(p, h)
		po := p
		po.Arena = out
		o = residual(po, x2, dropped(p, b.drop2, z, n))
	}
	b.saved.put(p, blockSaved{qkv: qkv, probs: probs, stats: stats})
	return toSamples(out, o, b.Tokens, b.Dim)
}

// Backward runs the sub-layers' backwards in reverse, adding the residual
// stream's gradient to each branch's. Under RecomputeBlocks it first runs
// the forward again from the kept input, into the scratch, with the same
// Pass, so dropout draws the same masks and every kernel gives the same
// bits. The attention's backward recomputes the probabilities from the kept
// qkv and statistics; under RecomputeAttention from qkv alone, with the
// attention's output, c_proj's input, before c_proj's weight gradient.
func (b *TransformerBlock) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	if b.Recompute == RecomputeBlocks {
		x := b.inputs.take("TransformerBlock", p)
		sp := b.scratch(p)
		b.forward(sp, sp.Arena, sp.Arena, x, true, false)
	}
	s := b.saved.take("TransformerBlock", p)
	n := s.qkv.Dim(0) / b.Tokens
	if dy.Dims() != 2 || dy.Dim(0) != n || dy.Dim(1) != b.Tokens*b.Dim || dy.DType() != s.qkv.DType() {
		panic(fmt.Errorf("nn.TransformerBlock: dy %v %v does not fit output [%d %d]", dy.DType(), dy.Shape(), n, b.Tokens*b.Dim))
	}
	dyt := toTokens(p.Arena, dy, b.Tokens, b.Dim)
	dz := droppedBackward(p, b.drop2, dyt, n, b.Tokens, b.Dim)
	dh2 := b.fc.Backward(p, b.gelu.Backward(p, b.out.Backward(p, dz, true), true), true)
	dx2 := residual(p, dyt, b.ln2.Backward(p, dh2, true))
	dyp := droppedBackward(p, b.drop1, dx2, n, b.Tokens, b.Dim)
	work := b.attention(p)
	qkv := p.Arena.view(s.qkv, 0, n, b.Tokens, 3*b.Dim)
	var dqkv *tensor.Tensor
	if b.Recompute == RecomputeAttention {
		// c_proj's input gradient first, then the attention's backward,
		// rebuilding c_proj's input on the way, then c_proj's weight
		// gradient from it: one attention forward more than none
		sa := b.scratch(p).Arena
		att := sa.Tensor(dy.DType(), n, b.Tokens, b.Dim)
		b.proj.x.put(p, sa.view(att, 0, n*b.Tokens, b.Dim)) // read by BackwardParams, once written
		datt := b.proj.BackwardInput(p, dyp)
		dqkv = p.Arena.Tensor(dy.DType(), n, b.Tokens, 3*b.Dim)
		ops.CausalSelfAttentionRecomputeInto(att, dqkv, p.Arena.view(datt, 0, n, b.Tokens, b.Dim), qkv, b.Heads, work)
		b.proj.BackwardParams(p)
	} else {
		datt := b.proj.Backward(p, dyp, true)
		dqkv = p.Arena.Tensor(dy.DType(), n, b.Tokens, 3*b.Dim)
		dat := p.Arena.view(datt, 0, n, b.Tokens, b.Dim)
		if s.probs != nil {
			ops.CausalSelfAttentionBackwardInto(dqkv, dat, qkv, s.probs, b.Heads, work)
		} else {
			ops.CausalSelfAttentionBackwardStatsInto(dqkv, dat, qkv, s.stats, b.Heads, work)
		}
	}
	dh1 := b.attn.Backward(p, p.Arena.view(dqkv, 0, n*b.Tokens, 3*b.Dim), true)
	dx1 := b.ln1.Backward(p, dh1, needDX)
	if !needDX {
		return nil
	}
	return toSamples(p.Arena, residual(p, dx2, dx1), b.Tokens, b.Dim)
}

// scale multiplies t by c in place.
func scale(t *tensor.Tensor, c float64) {
	if t.DType() == tensor.Float32 {
		for i, v := range t.Data32() {
			t.Data32()[i] = float32(float64(v) * c)
		}
		return
	}
	for i, v := range t.Data64() {
		t.Data64()[i] = v * c
	}
}

// residual returns a + b, from the pass's arena.
func residual(p Pass, a, b *tensor.Tensor) *tensor.Tensor {
	out := p.Arena.Like(a)
	if a.DType() == tensor.Float32 {
		o := out.Data32()
		copy(o, a.Data32())
		vec.Add(o, b.Data32())
		return out
	}
	o, x, y := out.Data64(), a.Data64(), b.Data64()
	for i := range o {
		o[i] = x[i] + y[i]
	}
	return out
}

// dropped applies d, if any, to the rows of tokens y as the samples
// [n, tokens·dim] they are, so that its masks follow the samples.
func dropped(p Pass, d *Dropout, y *tensor.Tensor, n int) *tensor.Tensor {
	if d == nil {
		return y
	}
	f := y.Dim(1)
	out := d.Forward(p, toSamples(p.Arena, y, y.Dim(0)/n, f))
	return toTokens(p.Arena, out, y.Dim(0)/n, f)
}

func droppedBackward(p Pass, d *Dropout, dy *tensor.Tensor, n, tokens, dim int) *tensor.Tensor {
	if d == nil {
		return dy
	}
	return toTokens(p.Arena, d.Backward(p, toSamples(p.Arena, dy, tokens, dim), true), tokens, dim)
}
