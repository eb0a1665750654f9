package nn

import (
	"fmt"
	"github.com/pipetrain/pipetrain/internal/vec"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Activation is a parameter-free element-wise layer built from an ops forward
// and backward. Some backwards take the forward's output, some its input.
type Activation struct {
	kind     string
	forward  func(x *tensor.Tensor) *tensor.Tensor
	backward func(dy, saved *tensor.Tensor) *tensor.Tensor
	useOut   bool // backward needs the output rather than the input
	saved    cache[*tensor.Tensor]

	// destination-first forms, when the kernel has them: outputs then come
	// from the pass's Arena
	forwardInto  func(dst, x *tensor.Tensor, threads int) *tensor.Tensor
	backwardInto func(dst, dy, saved *tensor.Tensor, threads int) *tensor.Tensor

	// An activation whose neighbour does its work (Fuse): the linear layer
	// before a ReLU gives it its output already (passIn), the one before a
	// GELU makes the GELU's output beside its own (pending, taken by the
	// next Forward), the one after either gives its input gradient already
	// through the activation's backward (passGrad).
	passIn, passGrad bool
	pending          *tensor.Tensor
}

func newActivation(kind string, useOut bool, f func(*tensor.Tensor) *tensor.Tensor, b func(dy, saved *tensor.Tensor) *tensor.Tensor) *Activation {
	return &Activation{kind: kind, forward: f, backward: b, useOut: useOut, saved: cache[*tensor.Tensor]{}}
}

// NewReLU returns max(x, 0).
func NewReLU() *Activation {
	a := newActivation("relu", false, ops.ReLU, ops.ReLUBackward)
	a.forwardInto, a.backwardInto = ops.ReLUInto, ops.ReLUBackwardInto
	return a
}

// NewLeakyReLU returns x for x > 0 and alpha*x otherwise.
func NewLeakyReLU(alpha float64) *Activation {
	return newActivation("leaky_relu", false,
		func(x *tensor.Tensor) *tensor.Tensor { return ops.LeakyReLU(x, alpha) },
		func(dy, x *tensor.Tensor) *tensor.Tensor { return ops.LeakyReLUBackward(dy, x, alpha) })
}

// NewSoftplus returns log(1 + e^(beta*x))/beta, x where beta*x > threshold.
func NewSoftplus(beta, threshold float64) *Activation {
	return newActivation("softplus", false,
		func(x *tensor.Tensor) *tensor.Tensor { return ops.Softplus(x, beta, threshold) },
		func(dy, x *tensor.Tensor) *tensor.Tensor { return ops.SoftplusBackward(dy, x, beta, threshold) })
}

// NewSigmoid returns 1/(1+e^-x).
func NewSigmoid() *Activation {
	return newActivation("sigmoid", true, ops.Sigmoid, ops.SigmoidBackward)
}

// NewTanh returns tanh(x).
func NewTanh() *Activation { return newActivation("tanh", true, ops.Tanh, ops.TanhBackward) }

// NewGELU returns x*Φ(x), exact or with the tanh approximation.
func NewGELU(approximate bool) *Activation {
	a := newActivation("gelu", false,
		func(x *tensor.Tensor) *tensor.Tensor { return ops.GELU(x, approximate) },
		func(dy, x *tensor.Tensor) *tensor.Tensor { return ops.GELUBackward(dy, x, approximate) })
	if !approximate {
		a.forwardInto, a.backwardInto = ops.GELUInto, ops.GELUBackwardInto
	}
	return a
}

// NewSoftmax returns the softmax over the last axis.
func NewSoftmax() *Activation {
	return newActivation("softmax", true,
		func(x *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) },
		func(dy, out *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxBackward(dy, out, -1) })
}

func (a *Activation) Kind() string    { return a.kind }
func (a *Activation) Params() []Param { return nil }
func (a *Activation) ZeroGrad()       {}
func (a *Activation) InFlight() int   { return len(a.saved) }

func (a *Activation) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	var y *tensor.Tensor
	if a.pending != nil {
		y, a.pending = a.pending, nil
	} else if a.passIn {
		y = x
	} else if a.forwardInto != nil && p.Arena != nil {
		y = a.forwardInto(p.Arena.Like(x), x, p.Threads)
	} else {
		y = a.forward(x)
	}
	switch {
	case !p.Train:
	case a.useOut:
		a.saved.put(p, y) // outputs are read-only once returned: no copy needed
	default:
		a.saved.put(p, x)
	}
	return y
}

// kept returns what the forward of pass p kept for the backward, which
// is still to take it.
func (a *Activation) kept(p Pass) *tensor.Tensor {
	s, ok := a.saved[p.Micro]
	if !ok {
		a.saved.take(a.kind, p) // panics, naming the micro-batch
	}
	return s
}

func (a *Activation) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	saved := a.saved.take(a.kind, p)
	if !needDX {
		return nil
	}
	if a.passGrad {
		return dy
	}
	if a.backwardInto != nil && p.Arena != nil && dy.SameShape(saved) {
		return a.backwardInto(p.Arena.Like(saved), dy, saved, p.Threads)
	}
	return a.backward(dy, saved)
}

// PReLU is a leaky ReLU with a learnable slope, one shared parameter as in
// torch.nn.PReLU(num_parameters=1), initialised to 0.25.
type PReLU struct {
	Alpha, GAlpha *tensor.Tensor
	x             cache[*tensor.Tensor]
}

// NewPReLU returns a PReLU layer with alpha = 0.25.
func NewPReLU(dt tensor.DType) *PReLU {
	return &PReLU{Alpha: tensor.Full(dt, 0.25, 1), GAlpha: tensor.Zeros(dt, 1), x: cache[*tensor.Tensor]{}}
}

func (l *PReLU) Kind() string    { return "prelu" }
func (l *PReLU) Params() []Param { return []Param{{Name: "alpha", Value: l.Alpha, Grad: l.GAlpha}} }
func (l *PReLU) ZeroGrad()       { zeroGrads(l.Params()) }
func (l *PReLU) InFlight() int   { return len(l.x) }
func (l *PReLU) Reset()          { clear(l.x) }

func (l *PReLU) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	l.x.put(p, x)
	return ops.PReLU(x, l.Alpha)
}

func (l *PReLU) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	x := l.x.take("PReLU", p)
	n := 1
	if x.Dims() > 0 {
		n = x.Dim(0)
	}
	if n <= ChunkRows {
		dx, da := ops.PReLUBackward(dy, x, l.Alpha)
		addInto(l.GAlpha, da)
		return keepIf(needDX, dx)
	}
	// The slope's gradient is summed over each chunk of ChunkRows rows and
	// added into GAlpha chunk after chunk, so that it does not depend on how
	// the mini-batch was cut into micro-batches (cut at chunk bounds).
	for lo := 0; lo < n; lo += ChunkRows {
		hi := min(n, lo+ChunkRows)
		_, da := ops.PReLUBackward(Rows(dy, lo, hi), Rows(x, lo, hi), l.Alpha)
		addInto(l.GAlpha, da)
	}
	if !needDX {
		return nil
	}
	dx, _ := ops.PReLUBackward(dy, x, l.Alpha)
	return dx
}

func keepIf(keep bool, t *tensor.Tensor) *tensor.Tensor {
	if keep {
		return t
	}
	return nil
}

// addFloat64s adds src, rounded once to dst's dtype, to dst element by element.
func addFloat64s(dst *tensor.Tensor, src []float64) {
	if dst.DType() == tensor.Float32 {
		d := dst.Data32()
		for i, v := range src {
			d[i] += float32(v)
		}
		return
	}
	d := dst.Data64()
	for i, v := range src {
		d[i] += v
	}
}

// addInto adds src to dst elementwise in dst's dtype.
func addInto(dst, src *tensor.Tensor) {
	if dst.Size() != src.Size() || dst.DType() != src.DType() {
		panic(fmt.Errorf("nn: gradient %v %v does not fit parameter %v %v", src.DType(), src.Shape(), dst.DType(), dst.Shape()))
	}
	if dst.DType() == tensor.Float32 {
		vec.Add(dst.Data32(), src.Data32())
		return
	}
	d, s := dst.Data64(), src.Data64()
	for i := range d {
		d[i] += s[i]
	}
}

func (a *Activation) Reset() { clear(a.saved) }
