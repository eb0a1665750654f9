package nn

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// layerNormEps is torch.nn.LayerNorm's eps, which no key sets.
const layerNormEps = 1e-5

// LayerNorm normalises each row of x [N, F] to zero mean and unit variance
// (biased variance, eps 1e-5, as torch.nn.LayerNorm) and applies a learnable
// gain (init 1) and bias (init 0). Statistics are computed in float64.
type LayerNorm struct {
	F          int
	Eps        float64
	Gain, Bias *tensor.Tensor
	GGain      *tensor.Tensor
	GBias      *tensor.Tensor
	saved      cache[lnSaved]
}

type lnSaved struct {
	xhat []float64 // normalised input
	rstd []float64 // 1/sqrt(var+eps) per row
}

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
	s := x.Shape()
	if len(s) != 2 || s[1] != l.F || x.DType() != l.Gain.DType() {
		panic(fmt.Errorf("nn.LayerNorm: input %v %v does not fit %d features of %v", x.DType(), s, l.F, l.Gain.DType()))
	}
	return s[0]
}

func (l *LayerNorm) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	n, f := l.rows(x), l.F
	xs := x.Float64s()
	g, b := l.Gain.Float64s(), l.Bias.Float64s()
	sv := lnSaved{xhat: make([]float64, len(xs)), rstd: make([]float64, n)}
	y := make([]float64, len(xs))
	for i := range n {
		row := xs[i*f : (i+1)*f]
		mean := 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(f)
		vr := 0.0
		for _, v := range row {
			vr += (v - mean) * (v - mean)
		}
		vr /= float64(f)
		rstd := 1 / math.Sqrt(vr+l.Eps)
		sv.rstd[i] = rstd
		for j, v := range row {
			h := (v - mean) * rstd
			sv.xhat[i*f+j] = h
			y[i*f+j] = h*g[j] + b[j]
		}
	}
	l.saved.put(p, sv)
	return tensor.FromFloat64s(x.DType(), y, n, f)
}

func (l *LayerNorm) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	sv := l.saved.take("LayerNorm", p)
	n, f := l.rows(dy), l.F
	if n != len(sv.rstd) {
		panic(fmt.Errorf("nn.LayerNorm: dy shape %v does not fit the forward's %d rows", dy.Shape(), len(sv.rstd)))
	}
	d := dy.Float64s()
	g := l.Gain.Float64s()
	gg, gb := make([]float64, f), make([]float64, f)
	dx := make([]float64, len(d))
	// The gain and bias gradients are summed over each chunk of ChunkRows rows
	// and added into their Grad chunk after chunk, so that they do not depend
	// on how the mini-batch was cut into micro-batches (cut at chunk bounds).
	for i := range n {
		sumD, sumDX := 0.0, 0.0
		for j := range f {
			k := i*f + j
			gg[j] += d[k] * sv.xhat[k]
			gb[j] += d[k]
			dh := d[k] * g[j]
			sumD += dh
			sumDX += dh * sv.xhat[k]
		}
		for j := range f {
			k := i*f + j
			dh := d[k] * g[j]
			dx[k] = sv.rstd[i] / float64(f) * (float64(f)*dh - sumD - sv.xhat[k]*sumDX)
		}
		if i%ChunkRows == ChunkRows-1 || i == n-1 {
			addFloat64s(l.GGain, gg)
			addFloat64s(l.GBias, gb)
			clear(gg)
			clear(gb)
		}
	}
	if !needDX {
		return nil
	}
	return tensor.FromFloat64s(dy.DType(), dx, n, f)
}

func (l *LayerNorm) Reset() { clear(l.saved) }
