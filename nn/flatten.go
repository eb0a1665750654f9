package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/tensor"
)

// Flatten is torch.nn.Flatten(): x [N, d1, d2, ...] becomes [N, d1·d2·...],
// the order of the elements unchanged, so that a Linear layer can follow
// image layers. The backward gives dy the input's shape back.
type Flatten struct {
	x cache[*tensor.Tensor] // for its shape
}

// NewFlatten returns a Flatten layer.
func NewFlatten() *Flatten { return &Flatten{x: cache[*tensor.Tensor]{}} }

func (l *Flatten) Kind() string    { return "flatten" }
func (l *Flatten) Params() []Param { return nil }
func (l *Flatten) ZeroGrad()       {}
func (l *Flatten) InFlight() int   { return len(l.x) }
func (l *Flatten) Reset()          { clear(l.x) }

// OutShape returns the [d1·d2·...] output of a [d1, d2, ...] sample.
func (l *Flatten) OutShape(in []int) ([]int, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("nn.Flatten: sample shape %v has no axes to flatten", in)
	}
	return []int{tensor.SizeOf(in)}, nil
}

func (l *Flatten) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	if x.Dims() < 2 {
		panic(fmt.Errorf("nn.Flatten: input %v is not [N d1 ...]", x.Shape()))
	}
	l.x.put(p, x)
	// A copy, not a view of x: the output must stay valid as long as the
	// pass's Arena says, whoever owns x and whenever they reuse it.
	y := p.Arena.Tensor(x.DType(), x.Dim(0), rowSize(x))
	y.CopyFrom(x)
	return y
}

func (l *Flatten) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	x := l.x.take("Flatten", p)
	if n := x.Dim(0); !dy.HasShape(n, rowSize(x)) {
		panic(fmt.Errorf("nn.Flatten: dy %v does not fit output [%d %d] of input %v", dy.Shape(), n, rowSize(x), x.Shape()))
	}
	if !needDX {
		return nil
	}
	dx := p.Arena.Like(x)
	dx.CopyFrom(dy)
	return dx
}

// rowSize returns the number of elements of one row of x, [N d1 ...].
func rowSize(x *tensor.Tensor) int {
	n := 1
	for i := 1; i < x.Dims(); i++ {
		n *= x.Dim(i)
	}
	return n
}
