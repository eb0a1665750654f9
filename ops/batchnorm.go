package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// channels checks that x is [N C ...] and that every per-channel tensor is
// [C], and returns N, C and the number of elements per sample and channel.
func channels(op string, x *tensor.Tensor, perChannel ...*tensor.Tensor) (n, c, inner int) {
	all := append([]*tensor.Tensor{x}, perChannel...)
	dtypeOf(op, all...)
	s := x.Shape()
	if len(s) < 2 {
		fail(op, "input shape %v is not [N C ...] (shapes %s)", s, shapesOf(all...))
	}
	n, c, inner = s[0], s[1], 1
	for _, d := range s[2:] {
		inner *= d
	}
	for _, t := range perChannel {
		if !t.HasShape(c) {
			fail(op, "per-channel shapes do not match the %d channels of input shape %v (shapes %s)", c, s, shapesOf(all...))
		}
	}
	return n, c, inner
}

// BatchNorm normalises x, [N C] or [N C H W] (any [N C ...]), in training
// mode: per channel, over every other axis, mean and biased variance;
// invstd = 1/sqrt(var+eps); out = (x−mean)·invstd·gamma + beta. gamma and beta
// are [C]; mean and invstd are returned as [C] for BatchNormBackward.
//
// The statistics are accumulated in float64 in a fixed order and rounded to
// x's dtype, and out is computed from the rounded values, so that forward and
// backward see the same x̂. As in PyTorch, invstd is 0 when var and eps are
// both 0, and a channel of no elements (N·H·W = 0) has NaN statistics and an
// empty output.
func BatchNorm(x, gamma, beta *tensor.Tensor, eps float64) (out, mean, invstd *tensor.Tensor) {
	n, c, inner := channels("BatchNorm", x, gamma, beta)
	dt := x.DType()
	xs, gs, bs := values(x), values(gamma), values(beta)
	m := float64(n * inner)
	mu, inv := make([]float64, c), make([]float64, c)
	for ch := range c {
		var s float64
		for i := range n {
			for _, v := range xs[(i*c+ch)*inner : (i*c+ch+1)*inner] {
				s += v
			}
		}
		mean := s / m
		var ss float64
		for i := range n {
			for _, v := range xs[(i*c+ch)*inner : (i*c+ch+1)*inner] {
				ss += (v - mean) * (v - mean)
			}
		}
		v := ss / m
		is := 0.0
		if v != 0 || eps != 0 {
			is = 1 / math.Sqrt(v+eps)
		}
		mu[ch], inv[ch] = roundTo(dt, mean), roundTo(dt, is)
	}
	o := make([]float64, len(xs))
	for i := range n {
		for ch := range c {
			base := (i*c + ch) * inner
			for j, v := range xs[base : base+inner] {
				o[base+j] = (v-mu[ch])*inv[ch]*gs[ch] + bs[ch]
			}
		}
	}
	return fromValues(dt, o, x.Shape()...), fromValues(dt, mu, c), fromValues(dt, inv, c)
}

// roundTo rounds v to the precision of dt.
func roundTo(dt tensor.DType, v float64) float64 {
	if dt == tensor.Float32 {
		return float64(float32(v))
	}
	return v
}

// BatchNormBackward returns the gradients of BatchNorm in training mode with
// respect to x, gamma and beta, given the mean and invstd it returned; with
// x̂ = (x−mean)·invstd and M elements per channel:
// gbeta = Σ grad, ggamma = Σ grad·x̂, gx = gamma·invstd/M·(M·grad − gbeta − x̂·ggamma).
func BatchNormBackward(grad, x, gamma, mean, invstd *tensor.Tensor) (gx, ggamma, gbeta *tensor.Tensor) {
	const op = "BatchNormBackward"
	dtypeOf(op, grad, x, gamma, mean, invstd)
	if !grad.SameShape(x) {
		fail(op, "grad shape %v does not match input shape %v (gamma, mean, invstd %s)", grad.Shape(), x.Shape(), shapesOf(gamma, mean, invstd))
	}
	n, c, inner := channels(op, x, gamma, mean, invstd)
	dt := x.DType()
	g, xs, gs, mu, inv := values(grad), values(x), values(gamma), values(mean), values(invstd)
	m := float64(n * inner)
	sg, sgx := make([]float64, c), make([]float64, c)
	for ch := range c {
		for i := range n {
			base := (i*c + ch) * inner
			for j, v := range xs[base : base+inner] {
				sg[ch] += g[base+j]
				sgx[ch] += g[base+j] * (v - mu[ch]) * inv[ch]
			}
		}
	}
	out := make([]float64, len(xs))
	for i := range n {
		for ch := range c {
			base := (i*c + ch) * inner
			k := gs[ch] * inv[ch] / m
			for j, v := range xs[base : base+inner] {
				xh := (v - mu[ch]) * inv[ch]
				out[base+j] = k * (m*g[base+j] - sg[ch] - xh*sgx[ch])
			}
		}
	}
	return fromValues(dt, out, x.Shape()...), fromValues(dt, sgx, c), fromValues(dt, sg, c)
}
