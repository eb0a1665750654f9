package ops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestBF16Work: ConvWork.BF16 and AttentionWork.BF16 change every float32
// result of the forward and backward (each comes from a product) by about
// bf16's rounding, and leave float64 results alone.
func TestBF16Work(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		fp32, bf16 := convResults(dt, false), convResults(dt, true)
		fp32 = append(fp32, attnResults(dt, false)...)
		bf16 = append(bf16, attnResults(dt, true)...)
		names := []string{"conv y", "conv gx", "conv gw", "attention out", "attention gqkv"}
		for i, name := range names {
			d := relDiff(fp32[i], bf16[i])
			if dt == tensor.Float64 && d != 0 || dt == tensor.Float32 && (d == 0 || d > 3e-2) {
				t.Errorf("%v %s: bf16 against fp32, relative difference %.3g", dt, name, d)
			}
		}
	}
}

// relDiff is the largest difference of a and b relative to b's largest value.
func relDiff(a, b *tensor.Tensor) float64 {
	x, y := a.Float64s(), b.Float64s()
	d, m := 0.0, 0.0
	for i := range x {
		d, m = max(d, math.Abs(x[i]-y[i])), max(m, math.Abs(y[i]))
	}
	return d / m
}

func convResults(dt tensor.DType, bf16 bool) []*tensor.Tensor {
	rng := rand.New(rand.NewPCG(7, 8))
	x, w := tensor.RandNormal(rng, dt, 0, 1, 2, 3, 6, 6), tensor.RandNormal(rng, dt, 0, 1, 4, 3, 3, 3)
	work := &ops.ConvWork{BF16: bf16}
	y := ops.Conv2dInto(tensor.Zeros(dt, 2, 4, 6, 6), x, w, nil, 1, 1, work)
	dy := tensor.RandNormal(rng, dt, 0, 1, 2, 4, 6, 6)
	gx, gw, gb := tensor.Zeros(dt, 2, 3, 6, 6), tensor.Zeros(dt, 4, 3, 3, 3), tensor.Zeros(dt, 4)
	ops.Conv2dBackwardInto(gx, gw, gb, dy, x, w, 1, 1, work)
	return []*tensor.Tensor{y, gx, gw}
}

func attnResults(dt tensor.DType, bf16 bool) []*tensor.Tensor {
	rng := rand.New(rand.NewPCG(9, 10))
	qkv := tensor.RandNormal(rng, dt, 0, 1, 2, 8, 3*8)
	work := &ops.AttentionWork{BF16: bf16}
	out, probs := tensor.Zeros(dt, 2, 8, 8), tensor.Zeros(dt, 2, 2, 8, 8)
	ops.CausalSelfAttentionInto(out, probs, qkv, 2, work)
	gqkv := tensor.Zeros(dt, 2, 8, 3*8)
	ops.CausalSelfAttentionBackwardInto(gqkv, tensor.RandNormal(rng, dt, 0, 1, 2, 8, 8), qkv, probs, 2, work)
	return []*tensor.Tensor{out, gqkv}
}
