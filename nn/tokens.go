package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/tensor"
)

// tokenLayer runs a layer of rows — one row a token, [N·T, F] — on the
// rows layers pass for samples of T tokens, [N, T·F], through views: a
// linear or layer-norm layer applies to every token of a sequence, as
// PyTorch's do to the last axis.
type tokenLayer struct {
	Layer
	tokens  int
	in, out int // features of a token
}

// perToken wraps l for samples [tokens, in] giving [tokens, out].
func perToken(l Layer, tokens, in, out int) Layer {
	return &tokenLayer{Layer: l, tokens: tokens, in: in, out: out}
}

func (l *tokenLayer) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	y := l.Layer.Forward(p, toTokens(p.Arena, x, l.tokens, l.in))
	return toSamples(p.Arena, y, l.tokens, l.out)
}

func (l *tokenLayer) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	dx := l.Layer.Backward(p, toTokens(p.Arena, dy, l.tokens, l.out), needDX)
	if dx == nil {
		return nil
	}
	return toSamples(p.Arena, dx, l.tokens, l.in)
}

// Buffers returns the wrapped layer's buffers.
func (l *tokenLayer) Buffers() []Buffer { return BuffersOf(l.Layer) }

// toTokens views samples x [N, tokens·f] as the rows of their tokens
// [N·tokens, f].
func toTokens(a *Arena, x *tensor.Tensor, tokens, f int) *tensor.Tensor {
	if x.Dims() != 2 || x.Dim(1) != tokens*f {
		panic(fmt.Errorf("nn: %v %v is not rows of %d tokens of %d features", x.DType(), x.Shape(), tokens, f))
	}
	return a.view(x, 0, x.Dim(0)*tokens, f)
}

// toSamples views the rows of tokens y [N·tokens, f] as samples
// [N, tokens·f].
func toSamples(a *Arena, y *tensor.Tensor, tokens, f int) *tensor.Tensor {
	if y.Dims() != 2 || y.Dim(1) != f || y.Dim(0)%tokens != 0 {
		panic(fmt.Errorf("nn: %v %v is not the rows of samples of %d tokens of %d features", y.DType(), y.Shape(), tokens, f))
	}
	return a.view(y, 0, y.Dim(0)/tokens, tokens*f)
}
