package nn

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// BatchNorm is torch.nn.BatchNorm2d, and BatchNorm1d, over the channel axis 1
// of x [N, C] or [N, C, H, W] (any [N, C, ...]): each channel is normalised
// over every other axis and scaled by Gamma (init 1) and shifted by Beta
// (init 0), named "weight" and "bias" as in PyTorch.
//
// A training Forward (Pass.Train) normalises with the statistics of its own
// micro-batch (mean and biased variance, through ops.BatchNorm) and moves the
// running statistics towards them as PyTorch does:
//
//	running_mean = (1−Momentum)·running_mean + Momentum·mean
//	running_var  = (1−Momentum)·running_var  + Momentum·var·M/(M−1)
//
// with M the values per channel, the unbiased variance. So every training
// Forward updates them once: a driver runs each micro-batch's training
// forward once, in micro-batch order, and Reset does not undo them. An
// evaluation Forward normalises with the running statistics and changes
// nothing.
//
// Unlike every other layer's, BatchNorm's results depend on how a mini-batch
// is cut into micro-batches, since each micro-batch is normalised by its own
// statistics, as in PyTorch with gradient accumulation.
type BatchNorm struct {
	C             int
	Eps, Momentum float64 // 1e-5 and 0.1, PyTorch's defaults
	Gamma, Beta   *tensor.Tensor
	GGamma, GBeta *tensor.Tensor
	// RunningMean (init 0) and RunningVar (init 1) are what evaluation
	// normalises with; Buffers lists them, for checkpoints to save.
	RunningMean, RunningVar *tensor.Tensor
	saved                   cache[bnSaved]
}

// bnSaved is a training forward's input and the statistics it normalised with.
type bnSaved struct{ x, mean, invstd *tensor.Tensor }

// Buffer is a layer's state that is not trained, a PyTorch buffer: saved with
// the parameters, but without a gradient.
type Buffer struct {
	Name  string
	Value *tensor.Tensor
}

// BuffersOf returns a layer's buffers, if it has any.
func BuffersOf(l Layer) []Buffer {
	if b, ok := l.(interface{ Buffers() []Buffer }); ok {
		return b.Buffers()
	}
	return nil
}

// NewBatchNorm returns a BatchNorm over c channels.
func NewBatchNorm(dt tensor.DType, c int) (*BatchNorm, error) {
	if c <= 0 {
		return nil, fmt.Errorf("nn.NewBatchNorm: needs a positive channel count, got %d", c)
	}
	return &BatchNorm{
		C: c, Eps: 1e-5, Momentum: 0.1,
		Gamma: tensor.Full(dt, 1, c), Beta: tensor.Zeros(dt, c),
		GGamma: tensor.Zeros(dt, c), GBeta: tensor.Zeros(dt, c),
		RunningMean: tensor.Zeros(dt, c), RunningVar: tensor.Full(dt, 1, c),
		saved: cache[bnSaved]{},
	}, nil
}

func (l *BatchNorm) Kind() string { return "batchnorm" }

// Params returns gamma and beta; the running statistics are Buffers.
func (l *BatchNorm) Params() []Param {
	return []Param{{Name: "weight", Value: l.Gamma, Grad: l.GGamma}, {Name: "bias", Value: l.Beta, Grad: l.GBeta}}
}

// Buffers returns the running statistics, under PyTorch's names; the same
// tensors for the layer's life.
func (l *BatchNorm) Buffers() []Buffer {
	return []Buffer{{"running_mean", l.RunningMean}, {"running_var", l.RunningVar}}
}

func (l *BatchNorm) ZeroGrad()     { zeroGrads(l.Params()) }
func (l *BatchNorm) InFlight() int { return len(l.saved) }
func (l *BatchNorm) Reset()        { clear(l.saved) }

// check panics unless x is [N, C, ...] of the layer's dtype, and returns N and
// the number of values per sample and channel.
func (l *BatchNorm) check(x *tensor.Tensor) (n, inner int) {
	if x.Dims() < 2 || x.Dim(1) != l.C || x.DType() != l.Gamma.DType() {
		panic(fmt.Errorf("nn.BatchNorm: input %v %v does not fit %d channels of %v: want [N %d] or [N %d H W]",
			x.DType(), x.Shape(), l.C, l.Gamma.DType(), l.C, l.C))
	}
	inner = 1
	for i := 2; i < x.Dims(); i++ {
		inner *= x.Dim(i)
	}
	return x.Dim(0), inner
}

func (l *BatchNorm) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	n, inner := l.check(x)
	if !p.Train {
		return l.evaluate(p, x, n, inner)
	}
	if n*inner == 1 {
		// No unbiased variance, as PyTorch refuses too.
		panic(fmt.Errorf("nn.BatchNorm: training needs more than one value per channel, got input %v", x.Shape()))
	}
	// Every element of y, mean and invstd is written below.
	y, mean, invstd := p.Arena.Like(x), p.Arena.Tensor(x.DType(), l.C), p.Arena.Tensor(x.DType(), l.C)
	ops.BatchNormInto(y, mean, invstd, x, l.Gamma, l.Beta, l.Eps)
	if n*inner > 0 { // an empty batch has no statistics to track
		if x.DType() == tensor.Float32 {
			track(l, x.Data32(), l.RunningMean.Data32(), l.RunningVar.Data32(), n, inner)
		} else {
			track(l, x.Data64(), l.RunningMean.Data64(), l.RunningVar.Data64(), n, inner)
		}
	}
	l.saved.put(p, bnSaved{x, mean, invstd})
	return y
}

// track moves the running statistics rm and rv towards those of x, in
// float64 and rounded once.
func track[T float32 | float64](l *BatchNorm, xs, rm, rv []T, n, inner int) {
	m := float64(n * inner)
	for ch := range l.C {
		var s float64
		for i := range n {
			for _, v := range xs[(i*l.C+ch)*inner : (i*l.C+ch+1)*inner] {
				s += float64(v)
			}
		}
		mean := s / m
		var ss float64
		for i := range n {
			for _, v := range xs[(i*l.C+ch)*inner : (i*l.C+ch+1)*inner] {
				ss += (float64(v) - mean) * (float64(v) - mean)
			}
		}
		rm[ch] = T((1-l.Momentum)*float64(rm[ch]) + l.Momentum*mean)
		rv[ch] = T((1-l.Momentum)*float64(rv[ch]) + l.Momentum*ss/(m-1))
	}
}

// evaluate normalises x with the running statistics.
func (l *BatchNorm) evaluate(p Pass, x *tensor.Tensor, n, inner int) *tensor.Tensor {
	y := p.Arena.Like(x) // written whole
	if x.DType() == tensor.Float32 {
		bnEval(l, y.Data32(), x.Data32(), n, inner)
	} else {
		bnEval(l, y.Data64(), x.Data64(), n, inner)
	}
	return y
}

// elem is element i of a 1-D tensor, as float64.
func elem(t *tensor.Tensor, i int) float64 {
	if t.DType() == tensor.Float32 {
		return float64(t.Data32()[i])
	}
	return t.Data64()[i]
}

// bnEval normalises with the running statistics, in float64 whatever the
// dtype, each element rounded once.
func bnEval[T float32 | float64](l *BatchNorm, y, x []T, n, inner int) {
	for ch := range l.C {
		rm, rv := elem(l.RunningMean, ch), elem(l.RunningVar, ch)
		g, b := elem(l.Gamma, ch), elem(l.Beta, ch)
		invstd := 1 / math.Sqrt(rv+l.Eps)
		for i := range n {
			base := (i*l.C + ch) * inner
			for j, v := range x[base : base+inner] {
				y[base+j] = T((float64(v)-rm)*invstd*g + b)
			}
		}
	}
}

func (l *BatchNorm) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	sv := l.saved.take("BatchNorm", p)
	if !dy.SameShape(sv.x) || dy.DType() != sv.x.DType() {
		panic(fmt.Errorf("nn.BatchNorm: dy %v %v does not fit input %v %v", dy.DType(), dy.Shape(), sv.x.DType(), sv.x.Shape()))
	}
	var dx *tensor.Tensor
	if needDX {
		dx = p.Arena.Like(sv.x) // written whole
	}
	ops.BatchNormBackwardInto(dx, l.GGamma, l.GBeta, dy, sv.x, l.Gamma, sv.mean, sv.invstd)
	return dx
}
