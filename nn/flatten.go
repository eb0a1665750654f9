package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/tensor"
)

// Flatten is torch.nn.Flatten(): x [N, d1, d2, ...] becomes [N, d1·d2·...],
// the order of the elements unchanged, so that a Linear layer can follow
// image layers. The backward gives dy the input's shape back.
type Flatten struct {
	shape cache[[]int] // the input's
}

// NewFlatten returns a Flatten layer.
func NewFlatten() *Flatten { return &Flatten{shape: cache[[]int]{}} }

func (l *Flatten) Kind() string    { return "flatten" }
func (l *Flatten) Params() []Param { return nil }
func (l *Flatten) ZeroGrad()       {}
func (l *Flatten) InFlight() int   { return len(l.shape) }
func (l *Flatten) Reset()          { clear(l.shape) }

// OutShape returns the [d1·d2·...] output of a [d1, d2, ...] sample.
func (l *Flatten) OutShape(in []int) ([]int, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("nn.Flatten: sample shape %v has no axes to flatten", in)
	}
	return []int{tensor.SizeOf(in)}, nil
}

func (l *Flatten) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	s := x.Shape()
	if len(s) < 2 {
		panic(fmt.Errorf("nn.Flatten: input %v is not [N d1 ...]", s))
	}
	l.shape.put(p, s)
	// A copy, not a view of x: the output must stay valid as long as the
	// pass's Arena says, whoever owns x and whenever they reuse it.
	return flat(p.Arena, x, s[0], tensor.SizeOf(s[1:]))
}

func (l *Flatten) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	in := l.shape.take("Flatten", p)
	if n := in[0]; !dy.HasShape(n, tensor.SizeOf(in[1:])) {
		panic(fmt.Errorf("nn.Flatten: dy %v does not fit output [%d %d] of input %v", dy.Shape(), n, tensor.SizeOf(in[1:]), in))
	}
	if !needDX {
		return nil
	}
	return flat(p.Arena, dy, in...)
}

// flat returns a copy of x, lent by a, of the given shape and x's size.
func flat(a *Arena, x *tensor.Tensor, shape ...int) *tensor.Tensor {
	y := a.Tensor(x.DType(), shape...)
	y.CopyFrom(x)
	return y
}
