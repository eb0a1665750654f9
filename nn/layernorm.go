package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// layerNormEps is torch.nn.LayerNorm's eps, which no key sets.
const layerNormEps = 1e-5

// The kernel's gradient chunks must be the micro-batches' (a compile error
// otherwise), so that the gain and bias gradients do not depend on the cut.
const _, _ uint = ChunkRows - ops.LayerNormChunkRows, ops.LayerNormChunkRows - ChunkRows

// LayerNorm normalises each row of x [N, F] to zero mean and unit variance
// (biased variance, eps 1e-5, as torch.nn.LayerNorm) and applies a learnable
// gain (init 1) and bias (init 0), through ops.LayerNorm: statistics in
// float64. The gain and bias gradients are summed over each chunk of
// ChunkRows rows and added chunk after chunk, so that they do not depend on
// how the mini-batch was cut into micro-batches (cut at chunk bounds).
type LayerNorm struct {
	F          int
	Eps        float64
	Gain, Bias *tensor.Tensor
	GGain      *tensor.Tensor
	GBias      *tensor.Tensor
	saved      cache[lnSaved]
	work       ops.LayerNormWork // the kernels' scratch, kept from step to step
}

// lnSaved is a training forward's input and its rows' statistics.
type lnSaved struct{ x, mean, rstd *tensor.Tensor }

// NewLayerNorm returns a LayerNorm over f features.
func NewLayerNorm(dt tensor.DType, f int) *LayerNorm {
	return &LayerNorm{
		F: f, Eps: layerNormEps,
		Gain: tensor.Full(dt, 1, f), Bias: tensor.Zeros(dt, f),
		GGain: tensor.Zeros(dt, f), GBias: tensor.Zeros(dt, f),
		saved: cache[lnSaved]{},
	}
}

func (l *LayerNorm) Kind() string { return "layernorm" }
func (l *LayerNorm) Params() []Param {
	return []Param{{Name: "weight", Value: l.Gain, Grad: l.GGain}, {Name: "bias", Value: l.Bias, Grad: l.GBias}}
}
func (l *LayerNorm) ZeroGrad()     { zeroGrads(l.Params()) }
func (l *LayerNorm) InFlight() int { return len(l.saved) }

func (l *LayerNorm) rows(x *tensor.Tensor) int {
	if x.Dims() != 2 || x.Dim(1) != l.F || x.DType() != l.Gain.DType() {
		panic(fmt.Errorf("nn.LayerNorm: input %v %v does not fit %d features of %v", x.DType(), x.Shape(), l.F, l.Gain.DType()))
	}
	return x.Dim(0)
}

func (l *LayerNorm) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	n := l.rows(x)
	// Every element of y, mean and rstd is written by the kernel.
	y, mean, rstd := p.Arena.Like(x), p.Arena.Tensor(x.DType(), n), p.Arena.Tensor(x.DType(), n)
	l.work.Threads = p.Threads
	ops.LayerNormInto(y, mean, rstd, x, l.Gain, l.Bias, l.Eps, &l.work)
	l.saved.put(p, lnSaved{x, mean, rstd})
	return y
}

func (l *LayerNorm) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	sv := l.saved.take("LayerNorm", p)
	if n := l.rows(dy); n != sv.x.Dim(0) {
		panic(fmt.Errorf("nn.LayerNorm: dy shape %v does not fit the forward's %d rows", dy.Shape(), sv.x.Dim(0)))
	}
	var dx *tensor.Tensor
	if needDX {
		dx = p.Arena.Like(sv.x) // written whole
	}
	l.work.Threads = p.Threads
	ops.LayerNormBackwardInto(dx, l.GGain, l.GBias, dy, sv.x, l.Gain, sv.mean, sv.rstd, &l.work)
	return dx
}

func (l *LayerNorm) Reset() { clear(l.saved) }
