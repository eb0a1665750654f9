package ops_test

// Batch norm in training mode: finite-difference checks in float64, values
// against naive loops and by hand, a constant channel, empty channels.

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// checkBatchNormGrad checks the gradients of x, gamma and beta, the backward
// taking the statistics the forward returns.
func checkBatchNormGrad(t *testing.T, name string, x, gamma, beta *tt, eps float64) {
	t.Helper()
	opstest.CheckGrad(t, name, in(x, gamma, beta),
		func(p []*tt) *tt { out, _, _ := ops.BatchNorm(p[0], p[1], p[2], eps); return out },
		func(g *tt, p []*tt, _ *tt) []*tt {
			_, mean, invstd := ops.BatchNorm(p[0], p[1], p[2], eps)
			gx, gg, gb := ops.BatchNormBackward(g, p[0], p[1], mean, invstd)
			return in(gx, gg, gb)
		}, gradTol)
}

func TestGradBatchNorm(t *testing.T) {
	rng := newRNG(62)
	for _, s := range [][]int{{4, 3}, {2, 1}, {5, 1}, {1, 2, 3, 5}, {2, 3, 3, 4}, {3, 2, 1, 1}, {2, 2, 5}} {
		for _, eps := range []float64{1e-5, 0.1} {
			c := s[1]
			checkBatchNormGrad(t, gradName("BatchNorm", s, "eps", eps),
				randN(rng, 2, s...), randSignedU(rng, 0.5, 2, c), randN(rng, 1, c), eps)
		}
	}
	// A constant channel: variance 0, so out is beta and x̂ is 0, but the
	// gradient of x is gamma·invstd·(grad − mean grad), finite because eps > 0.
	for _, s := range [][]int{{4, 2}, {3, 2, 2, 2}} {
		for _, eps := range []float64{1e-5, 1e-3} {
			x := randN(rng, 1, s...)
			inner := x.Size() / (s[0] * s[1])
			for i := range s[0] {
				for j := range inner {
					x.Data64()[(i*s[1]+1)*inner+j] = 0.7
				}
			}
			checkBatchNormGrad(t, gradName("BatchNorm constant channel", s, "eps", eps),
				x, randSignedU(rng, 0.5, 2, s[1]), randN(rng, 1, s[1]), eps)
		}
	}
}

// refBatchNorm normalises x, [N C inner], with naive loops in float64.
func refBatchNorm(x, gamma, beta []float64, n, c, inner int, eps float64) (out, mean, invstd []float64) {
	out, mean, invstd = make([]float64, len(x)), make([]float64, c), make([]float64, c)
	m := float64(n * inner)
	for ch := range c {
		var s, ss float64
		for i := range n {
			for j := range inner {
				s += x[(i*c+ch)*inner+j]
			}
		}
		mean[ch] = s / m
		for i := range n {
			for j := range inner {
				d := x[(i*c+ch)*inner+j] - mean[ch]
				ss += d * d
			}
		}
		invstd[ch] = 1 / math.Sqrt(ss/m+eps)
		for i := range n {
			for j := range inner {
				k := (i*c+ch)*inner + j
				out[k] = (x[k]-mean[ch])*invstd[ch]*gamma[ch] + beta[ch]
			}
		}
	}
	return out, mean, invstd
}

func TestEdgeBatchNormValues(t *testing.T) {
	// By hand: channel 0 is {1, 3} (mean 2, var 1), channel 1 is {2, 6} (mean 4, var 4).
	out, mean, invstd := ops.BatchNorm(mk(sh(2, 2), 1, 2, 3, 6), vec(2, 3), vec(0.5, -1), 0)
	checkT(t, "BatchNorm [2 2] out", out, sh(2, 2), []float64{-1.5, -4, 2.5, 2}, 0)
	checkT(t, "BatchNorm [2 2] mean", mean, sh(2), []float64{2, 4}, 0)
	checkT(t, "BatchNorm [2 2] invstd", invstd, sh(2), []float64{1, 0.5}, 0)
	// By hand, backward: x̂ = (-1, 0, 1), grad (1, 0, 2): gbeta 3, ggamma 1,
	// gx = 2·1/3·(3·grad − 3 − x̂) = (2/3)(1, -3, 2).
	x := mk(sh(3, 1), 1, 2, 3)
	_, mean, invstd = ops.BatchNorm(x, vec(2), vec(0), 1-2.0/3)
	gx, gg, gb := ops.BatchNormBackward(mk(sh(3, 1), 1, 0, 2), x, vec(2), mean, invstd)
	checkT(t, "BatchNormBackward by hand gx", gx, sh(3, 1), []float64{2.0 / 3, -2, 4.0 / 3}, 1e-15)
	checkT(t, "BatchNormBackward by hand ggamma", gg, sh(1), []float64{1}, 1e-15)
	checkT(t, "BatchNormBackward by hand gbeta", gb, sh(1), []float64{3}, 0)

	rng := newRNG(64)
	for _, s := range [][]int{{6, 4}, {2, 3, 4, 5}, {1, 2, 3, 3}, {3, 2, 7}} {
		x, gamma, beta := randN(rng, 3, s...), randN(rng, 1, s[1]), randN(rng, 1, s[1])
		inner := x.Size() / (s[0] * s[1])
		wantOut, wantMean, wantInv := refBatchNorm(x.Float64s(), gamma.Float64s(), beta.Float64s(), s[0], s[1], inner, 1e-5)
		out, mean, invstd := ops.BatchNorm(x, gamma, beta, 1e-5)
		desc := fmt.Sprintf("BatchNorm %v", s)
		checkT(t, desc+" out", out, s, wantOut, 1e-13)
		checkT(t, desc+" mean", mean, sh(s[1]), wantMean, 1e-14)
		checkT(t, desc+" invstd", invstd, sh(s[1]), wantInv, 1e-14)
	}
}

func TestEdgeBatchNormConstantChannel(t *testing.T) {
	// Channel 1 is constant: out is beta, gradients are finite.
	x := mk(sh(3, 2), 1, 4, 2, 4, 6, 4)
	gamma, beta, g := vec(1.5, 2), vec(0.25, -0.5), mk(sh(3, 2), 1, 1, 2, -3, 3, 5)
	for _, eps := range []float64{1e-5, 0} {
		out, mean, invstd := ops.BatchNorm(x, gamma, beta, eps)
		if o := out.Float64s(); o[1] != -0.5 || o[3] != -0.5 || o[5] != -0.5 {
			t.Errorf("BatchNorm constant channel eps %g: out %v, want -0.5 in channel 1", eps, o)
		}
		gx, gg, gb := ops.BatchNormBackward(g, x, gamma, mean, invstd)
		for _, r := range []*tt{mean, invstd, gx, gg, gb} {
			if !r.IsFinite() {
				t.Errorf("BatchNorm constant channel eps %g: non-finite result %v", eps, r.Float64s())
			}
		}
		// Channel 1: x̂ = 0, so ggamma 0, gbeta 3, gx = gamma·invstd·(grad − 1).
		inv := 1 / math.Sqrt(eps)
		if eps == 0 {
			inv = 0 // PyTorch's invstd for var = eps = 0
		}
		checkT(t, fmt.Sprintf("BatchNorm constant channel eps %g invstd", eps), invstd, sh(2), []float64{invstd.At(0), inv}, 1e-15)
		checkT(t, fmt.Sprintf("BatchNorm constant channel eps %g ggamma", eps), gg, sh(2), []float64{gg.At(0), 0}, 0)
		checkT(t, fmt.Sprintf("BatchNorm constant channel eps %g gbeta", eps), gb, sh(2), []float64{6, 3}, 0)
		checkT(t, fmt.Sprintf("BatchNorm constant channel eps %g gx", eps), gx, sh(3, 2),
			[]float64{gx.At(0, 0), 0, gx.At(1, 0), 2 * inv * -4, gx.At(2, 0), 2 * inv * 4}, 1e-12)
	}
}

func TestEdgeBatchNormEmpty(t *testing.T) {
	for _, s := range [][]int{{0, 3}, {0, 2, 4, 4}, {2, 3, 0, 4}} {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			desc := fmt.Sprintf("BatchNorm %v (%v)", s, dt)
			safely(t, desc, func() {
				c := s[1]
				x, gamma, beta := tensor.Zeros(dt, s...), tensor.Full(dt, 2, c), tensor.Full(dt, 1, c)
				out, mean, invstd := ops.BatchNorm(x, gamma, beta, 1e-5)
				checkT(t, desc+" out", out, s, nil, 0)
				checkT(t, desc+" mean", mean, sh(c), repeat(nan, c), 0)
				checkT(t, desc+" invstd", invstd, sh(c), repeat(nan, c), 0)
				gx, gg, gb := ops.BatchNormBackward(tensor.Zeros(dt, s...), x, gamma, mean, invstd)
				checkT(t, desc+" gx", gx, s, nil, 0)
				checkT(t, desc+" ggamma", gg, sh(c), repeat(0, c), 0)
				checkT(t, desc+" gbeta", gb, sh(c), repeat(0, c), 0)
			})
		}
	}
}
