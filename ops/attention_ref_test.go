package ops

// The attention as it was before its backward ran in row panels: each
// pair's [T, T] probabilities whole, dK and dV summed over whole columns.
// The forward keeps its bits; the backward's dK and dV are summed in
// another order, so they agree within rounding.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// quadAttention is the forward that kept [T, T] probabilities per pair.
func quadAttention[T float](pl *attnPlan, pr products, out, probs, qkv []T) {
	ld, tt := 3*pl.d, pl.t
	for p := range pl.b * pl.heads {
		qm, km, vm := pairQKV(pl, qkv, p)
		o := out[(p/pl.heads)*tt*pl.d+(p%pl.heads)*pl.hd:]
		pm := probs[p*tt*tt : (p+1)*tt*tt]
		for i0 := 0; i0 < tt; i0 += attnBlock {
			i1 := min(tt, i0+attnBlock)
			attnGemm(1, pr, false, true, i1-i0, i1, pl.hd, pl.scale, qm[i0*ld:], ld, km, ld, 0, pm[i0*tt:], tt)
			for i := i0; i < i1; i++ {
				softmaxCausal(pm[i*tt:(i+1)*tt], i+1)
			}
			attnGemm(1, pr, false, false, i1-i0, pl.hd, i1, 1, pm[i0*tt:], tt, vm, ld, 0, o[i0*pl.d:], pl.d)
		}
	}
}

// quadAttentionBackward is the backward from those probabilities: dS
// whole per pair, dK and dV in column blocks over all the rows below.
func quadAttentionBackward[T float](pl *attnPlan, pr products, gqkv, grad, qkv, probs []T) {
	ld, tt := 3*pl.d, pl.t
	ds := make([]T, tt*tt)
	for p := range pl.b * pl.heads {
		qm, km, vm := pairQKV(pl, qkv, p)
		gq, gk, gv := pairQKV(pl, gqkv, p)
		do := grad[(p/pl.heads)*tt*pl.d+(p%pl.heads)*pl.hd:]
		pm := probs[p*tt*tt : (p+1)*tt*tt]
		for i0 := 0; i0 < tt; i0 += attnBlock {
			i1 := min(tt, i0+attnBlock)
			attnGemm(1, pr, false, true, i1-i0, i1, pl.hd, 1, do[i0*pl.d:], pl.d, vm, ld, 0, ds[i0*tt:], tt)
			for i := i0; i < i1; i++ {
				softmaxCausalBackward(ds[i*tt:i*tt+i1], pm[i*tt:], i+1, pl.scale)
			}
			attnGemm(1, pr, false, false, i1-i0, pl.hd, i1, 1, ds[i0*tt:], tt, km, ld, 0, gq[i0*ld:], ld)
		}
		for j0 := 0; j0 < tt; j0 += attnBlock {
			j1 := min(tt, j0+attnBlock)
			attnGemm(1, pr, true, false, j1-j0, pl.hd, tt-j0, 1, pm[j0*tt+j0:], tt, do[j0*pl.d:], pl.d, 0, gv[j0*ld:], ld)
			attnGemm(1, pr, true, false, j1-j0, pl.hd, tt-j0, 1, ds[j0*tt+j0:], tt, qm[j0*ld:], ld, 0, gk[j0*ld:], ld)
		}
	}
}

// TestAttentionMatchesQuadratic: the panel forward, keeping probs or only
// the statistics, has the quadratic forward's bits, in both dtypes and in
// bf16 products; the backward from kept probs and from the statistics
// (which have the same bits) agrees with the quadratic backward within
// float32 rounding, relative 1e-5 of the gradient's largest element, and
// both with the float64 gradient.
func TestAttentionMatchesQuadratic(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, s := range [][4]int{{2, 1, 6, 2}, {3, 31, 12, 3}, {2, 33, 8, 4}, {2, 100, 16, 1}, {1, 600, 8, 2}, {2, 64, 128, 4}} {
		b, tt, d, heads := s[0], s[1], s[2], s[3]
		qkv64, grad64 := tensor.Zeros(tensor.Float64, b, tt, 3*d), tensor.Zeros(tensor.Float64, b, tt, d)
		for _, x := range []*tensor.Tensor{qkv64, grad64} {
			for i := range x.Data64() {
				x.Data64()[i] = rng.NormFloat64()
			}
		}
		pl := planAttention("test", qkv64, heads)
		exact := make([]float64, b*tt*3*d)
		{
			out, probs := make([]float64, b*tt*d), make([]float64, b*heads*tt*tt)
			quadAttention(&pl, products{}, out, probs, qkv64.Data64())
			quadAttentionBackward(&pl, products{}, exact, grad64.Data64(), qkv64.Data64(), probs)
		}
		for _, c := range []struct {
			dt   tensor.DType
			bf16 bool
			ar   Arithmetic
		}{{tensor.Float32, false, AMX}, {tensor.Float64, false, AMX}, {tensor.Float32, true, AMX}, {tensor.Float32, true, Pairs}} {
			desc := fmt.Sprintf("B%d T%d D%d heads%d %v bf16 %v %v", b, tt, d, heads, c.dt, c.bf16, c.ar)
			qkv, grad := qkv64.As(c.dt), grad64.As(c.dt)
			pr := products{c.bf16, c.ar}
			wantOut, wantProbs, wantG := tensor.Zeros(c.dt, b, tt, d), tensor.Zeros(c.dt, b, heads, tt, tt), tensor.Zeros(c.dt, b, tt, 3*d)
			if c.dt == tensor.Float32 {
				quadAttention(&pl, pr, wantOut.Data32(), wantProbs.Data32(), qkv.Data32())
				quadAttentionBackward(&pl, pr, wantG.Data32(), grad.Data32(), qkv.Data32(), wantProbs.Data32())
			} else {
				quadAttention(&pl, pr, wantOut.Data64(), wantProbs.Data64(), qkv.Data64())
				quadAttentionBackward(&pl, pr, wantG.Data64(), grad.Data64(), qkv.Data64(), wantProbs.Data64())
			}
			for _, threads := range []int{1, 3} {
				work := &AttentionWork{Threads: threads, BF16: c.bf16, Arithmetic: c.ar}
				out, probs := tensor.Full(c.dt, math.NaN(), b, tt, d), tensor.Full(c.dt, math.NaN(), b, heads, tt, tt)
				CausalSelfAttentionInto(out, probs, qkv, heads, work)
				sameBitsAs(t, desc+": out", out, wantOut)
				sameBitsAs(t, desc+": probs", probs, wantProbs)
				stats := tensor.Full(tensor.Float64, math.NaN(), b, heads, tt, 2)
				CausalSelfAttentionStatsInto(out, stats, qkv, heads, work)
				sameBitsAs(t, desc+": out with stats", out, wantOut)
				g := tensor.Full(c.dt, math.NaN(), b, tt, 3*d)
				CausalSelfAttentionBackwardInto(g, grad, qkv, probs, heads, work)
				g2 := tensor.Full(c.dt, math.NaN(), b, tt, 3*d)
				CausalSelfAttentionBackwardStatsInto(g2, grad, qkv, stats, heads, work)
				sameBitsAs(t, desc+": gqkv from stats", g2, g)
				if !c.bf16 {
					near(t, desc+": gqkv against the quadratic backward", g, wantG.Float64s(), 1e-5)
					near(t, desc+": gqkv against float64", g, exact, map[tensor.DType]float64{tensor.Float32: 2e-5, tensor.Float64: 1e-12}[c.dt])
				} else {
					near(t, desc+": gqkv against the quadratic backward", g, wantG.Float64s(), 2e-2)
				}
			}
		}
	}
}

func sameBitsAs(t *testing.T, desc string, got, want *tensor.Tensor) {
	t.Helper()
	g, w := got.Float64s(), want.Float64s()
	for i := range g {
		if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
			t.Errorf("%s: element %d is %v, want the bits of %v", desc, i, g[i], w[i])
			return
		}
	}
}

// near reports the first element of got further than tol times want's
// largest magnitude from want.
func near(t *testing.T, desc string, got *tensor.Tensor, want []float64, tol float64) {
	t.Helper()
	var top float64
	for _, v := range want {
		top = max(top, math.Abs(v))
	}
	for i, v := range got.Float64s() {
		if !(math.Abs(v-want[i]) <= tol*top) {
			t.Errorf("%s: element %d is %v, want %v (tolerance %g of %v)", desc, i, v, want[i], tol, top)
			return
		}
	}
}
