package ops_test

// CausalSelfAttention and its backward: finite differences, a naive float64
// reference in both dtypes, the mask and the rows of probs, bits that depend
// neither on the thread budget nor on the batch, the Into forms, errors and
// allocations.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// attnShape is a CausalSelfAttention case: qkv is [b, t, 3d].
type attnShape struct{ b, t, d, heads int }

func (s attnShape) String() string {
	return fmt.Sprintf("B%d T%d D%d heads%d", s.b, s.t, s.d, s.heads)
}

// attnShapes cross the kernel's blocks of 32 positions (t = 33, 70) and
// include one head, one position and an empty batch.
var attnShapes = []attnShape{
	{2, 5, 6, 2}, {2, 5, 6, 1}, {1, 1, 3, 1}, {3, 33, 12, 3}, {2, 70, 8, 2}, {1, 64, 16, 4}, {0, 4, 6, 2}, {2, 0, 6, 2},
}

// naiveAttention is causal self-attention by its definition, in float64.
func naiveAttention(qkv []float64, s attnShape) (out, probs []float64) {
	hd, ld := s.d/s.heads, 3*s.d
	scale := 1 / math.Sqrt(float64(hd))
	out = make([]float64, s.b*s.t*s.d)
	probs = make([]float64, s.b*s.heads*s.t*s.t)
	for b := range s.b {
		for h := range s.heads {
			q := func(t, j int) float64 { return qkv[(b*s.t+t)*ld+h*hd+j] }
			k := func(t, j int) float64 { return qkv[(b*s.t+t)*ld+s.d+h*hd+j] }
			v := func(t, j int) float64 { return qkv[(b*s.t+t)*ld+2*s.d+h*hd+j] }
			p := probs[(b*s.heads+h)*s.t*s.t:]
			for t := range s.t {
				row := p[t*s.t : (t+1)*s.t]
				m := math.Inf(-1)
				for u := 0; u <= t; u++ {
					var dot float64
					for j := range hd {
						dot += q(t, j) * k(u, j)
					}
					row[u] = dot * scale
					m = max(m, row[u])
				}
				var sum float64
				for u := 0; u <= t; u++ {
					row[u] = math.Exp(row[u] - m)
					sum += row[u]
				}
				for u := 0; u <= t; u++ {
					row[u] /= sum
				}
				for j := range hd {
					var o float64
					for u := 0; u <= t; u++ {
						o += row[u] * v(u, j)
					}
					out[(b*s.t+t)*s.d+h*hd+j] = o
				}
			}
		}
	}
	return out, probs
}

// naiveStats is each row's maximum scaled score and the inverse of its
// sum of exponentials, by their definition in float64.
func naiveStats(qkv []float64, s attnShape) []float64 {
	hd, ld := s.d/s.heads, 3*s.d
	scale := 1 / math.Sqrt(float64(hd))
	st := make([]float64, 0, 2*s.b*s.heads*s.t)
	for b := range s.b {
		for h := range s.heads {
			for t := range s.t {
				sc := make([]float64, t+1)
				m := math.Inf(-1)
				for u := range sc {
					for j := range hd {
						sc[u] += qkv[(b*s.t+t)*ld+h*hd+j] * qkv[(b*s.t+u)*ld+s.d+h*hd+j]
					}
					sc[u] *= scale
					m = max(m, sc[u])
				}
				var sum float64
				for _, v := range sc {
					sum += math.Exp(v - m)
				}
				st = append(st, m, 1/sum)
			}
		}
	}
	return st
}

// naiveAttentionBackward is the backward by its definition, in float64.
func naiveAttentionBackward(grad, qkv, probs []float64, s attnShape) []float64 {
	hd, ld := s.d/s.heads, 3*s.d
	scale := 1 / math.Sqrt(float64(hd))
	g := make([]float64, len(qkv))
	for b := range s.b {
		for h := range s.heads {
			at := func(t, part, j int) int { return (b*s.t+t)*ld + part*s.d + h*hd + j }
			dO := func(t, j int) float64 { return grad[(b*s.t+t)*s.d+h*hd+j] }
			p := func(t, u int) float64 { return probs[((b*s.heads+h)*s.t+t)*s.t+u] }
			for t := range s.t {
				dp := make([]float64, t+1)
				var rowDot float64
				for u := 0; u <= t; u++ {
					for j := range hd {
						dp[u] += dO(t, j) * qkv[at(u, 2, j)]
						g[at(u, 2, j)] += p(t, u) * dO(t, j) // dV
					}
					rowDot += dp[u] * p(t, u)
				}
				for u := 0; u <= t; u++ {
					ds := p(t, u) * (dp[u] - rowDot) * scale
					for j := range hd {
						g[at(t, 0, j)] += ds * qkv[at(u, 1, j)] // dQ
						g[at(u, 1, j)] += ds * qkv[at(t, 0, j)] // dK
					}
				}
			}
		}
	}
	return g
}

func TestGradCausalSelfAttention(t *testing.T) {
	rng := newRNG(71)
	for _, s := range []attnShape{{2, 5, 6, 2}, {2, 5, 6, 1}, {1, 35, 3, 1}, {1, 3, 12, 4}} {
		qkv := randN(rng, 1, s.b, s.t, 3*s.d)
		opstest.CheckGrad(t, gradName("CausalSelfAttention", s), in(qkv),
			func(x []*tt) *tt { out, _ := ops.CausalSelfAttention(x[0], s.heads); return out },
			func(g *tt, x []*tt, _ *tt) []*tt {
				_, probs := ops.CausalSelfAttention(x[0], s.heads)
				return in(ops.CausalSelfAttentionBackward(g, x[0], probs, s.heads))
			}, gradTol)
	}
}

// attnStats runs CausalSelfAttentionStatsInto on a new out and stats.
func attnStats(qkv *tt, heads int, work *ops.AttentionWork) (out, stats *tt) {
	b, t, d := qkv.Dim(0), qkv.Dim(1), qkv.Dim(2)/3
	out, stats = tensor.Full(qkv.DType(), math.NaN(), b, t, d), tensor.Full(tensor.Float64, math.NaN(), b, heads, t, 2)
	ops.CausalSelfAttentionStatsInto(out, stats, qkv, heads, work)
	return out, stats
}

// TestGradCausalSelfAttentionStats: the backward from the row statistics,
// which recomputes the probabilities a panel of 32 rows at a time and adds
// each panel's share into dK and dV, against finite differences of the
// forward, across panels (T = 33, 70) and with one position.
func TestGradCausalSelfAttentionStats(t *testing.T) {
	rng := newRNG(78)
	for _, s := range []attnShape{{2, 5, 6, 2}, {1, 1, 4, 2}, {2, 33, 6, 3}, {1, 70, 4, 1}, {1, 3, 12, 4}} {
		qkv := randN(rng, 1, s.b, s.t, 3*s.d)
		opstest.CheckGrad(t, gradName("CausalSelfAttentionStats", s), in(qkv),
			func(x []*tt) *tt { out, _ := attnStats(x[0], s.heads, nil); return out },
			func(g *tt, x []*tt, _ *tt) []*tt {
				_, stats := attnStats(x[0], s.heads, nil)
				gqkv := garbage(x[0])
				ops.CausalSelfAttentionBackwardStatsInto(gqkv, g, x[0], stats, s.heads, nil)
				return in(gqkv)
			}, gradTol)
	}
}

// attnClose reports the first element of got further than tol·max(1, |want|)
// from want.
func attnClose(t *testing.T, desc string, got *tt, want []float64, tol float64) {
	t.Helper()
	g := got.Float64s()
	if len(g) != len(want) {
		t.Errorf("%s: %d elements, want %d", desc, len(g), len(want))
		return
	}
	for i := range g {
		if !(math.Abs(g[i]-want[i]) <= tol*max(1, math.Abs(want[i]))) {
			t.Errorf("%s: element %d is %v, want %v (tolerance %g)", desc, i, g[i], want[i], tol)
			return
		}
	}
}

func TestCausalSelfAttentionMatchesNaive(t *testing.T) {
	rng := newRNG(72)
	for _, s := range attnShapes {
		qkv := randN(rng, 1, s.b, s.t, 3*s.d)
		grad := randN(rng, 1, s.b, s.t, s.d)
		wantOut, wantProbs := naiveAttention(qkv.Data64(), s)
		wantG := naiveAttentionBackward(grad.Data64(), qkv.Data64(), wantProbs, s)
		for _, c := range []struct {
			dt  tensor.DType
			tol float64
		}{{tensor.Float64, 1e-12}, {tensor.Float32, 4e-6}} {
			desc := func(what string) string { return fmt.Sprintf("%s %v %v", what, s, c.dt) }
			out, probs := ops.CausalSelfAttention(qkv.As(c.dt), s.heads)
			attnClose(t, desc("out"), out, wantOut, c.tol)
			attnClose(t, desc("probs"), probs, wantProbs, c.tol)
			_, stats := attnStats(qkv.As(c.dt), s.heads, nil)
			attnClose(t, desc("stats"), stats, naiveStats(qkv.Data64(), s), c.tol)
			// The backward from the reference's probs, so that only its own
			// rounding counts.
			g := ops.CausalSelfAttentionBackward(grad.As(c.dt), qkv.As(c.dt), tensor.FromFloat64s(c.dt, wantProbs, probs.Shape()...), s.heads)
			attnClose(t, desc("gqkv"), g, wantG, c.tol)
		}
	}
}

// TestCausalSelfAttentionProbs: masked entries are +0 exactly and every row
// sums to 1, even with scores far apart.
func TestCausalSelfAttentionProbs(t *testing.T) {
	rng := newRNG(73)
	s := attnShape{3, 45, 12, 3}
	for _, std := range []float64{1, 30} {
		qkv := randN(rng, std, s.b, s.t, 3*s.d)
		for _, c := range []struct {
			dt  tensor.DType
			tol float64
		}{{tensor.Float64, 1e-14}, {tensor.Float32, 1e-6}} {
			_, probs := ops.CausalSelfAttention(qkv.As(c.dt), s.heads)
			p := probs.Float64s()
			for r := range s.b * s.heads * s.t {
				i := r % s.t
				row := p[r*s.t : (r+1)*s.t]
				var sum float64
				for u, v := range row {
					if u > i && math.Float64bits(v) != 0 {
						t.Fatalf("std %v %v: row %d, position %d > %d is %v, want +0", std, c.dt, r, u, i, v)
					}
					if !(v >= 0 && v <= 1) {
						t.Fatalf("std %v %v: row %d, position %d is %v, want a probability", std, c.dt, r, u, v)
					}
					sum += v
				}
				if math.Abs(sum-1) > c.tol {
					t.Fatalf("std %v %v: row %d sums to %v, want 1", std, c.dt, r, sum)
				}
			}
		}
	}
}

// attnRun is one forward and backward through the Into forms over garbage
// destinations, with the thread budget threads.
func attnRun(qkv, grad *tt, heads, threads int) (out, probs, gqkv *tt) {
	b, t, d := qkv.Dim(0), qkv.Dim(1), qkv.Dim(2)/3
	dt := qkv.DType()
	out, probs = tensor.Full(dt, math.NaN(), b, t, d), tensor.Full(dt, math.NaN(), b, heads, t, t)
	gqkv = garbage(qkv)
	work := &ops.AttentionWork{Threads: threads}
	ops.CausalSelfAttentionInto(out, probs, qkv, heads, work)
	ops.CausalSelfAttentionBackwardInto(gqkv, grad, qkv, probs, heads, work)
	return out, probs, gqkv
}

// batchPart returns rows [lo, hi) of x along its first axis, a copy.
func batchPart(x *tt, lo, hi int) *tt {
	shape := x.Shape()
	inner := x.Size() / max(1, shape[0])
	shape[0] = hi - lo
	v := x.Float64s()[lo*inner : hi*inner]
	return tensor.FromFloat64s(x.DType(), v, shape...)
}

// TestCausalSelfAttentionBits: the Into forms give the allocating forms'
// bits whatever the thread budget, and a batch cut in two halves gives the
// bits of the whole.
func TestCausalSelfAttentionBits(t *testing.T) {
	rng := newRNG(74)
	for _, s := range []attnShape{{4, 45, 24, 3}, {5, 64, 16, 2}, {2, 130, 8, 1}} {
		qkv64, grad64 := randN(rng, 1, s.b, s.t, 3*s.d), randN(rng, 1, s.b, s.t, s.d)
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			qkv, grad := qkv64.As(dt), grad64.As(dt)
			desc := func(what string) string { return fmt.Sprintf("%s %v %v", what, s, dt) }
			out, probs := ops.CausalSelfAttention(qkv, s.heads)
			gqkv := ops.CausalSelfAttentionBackward(grad, qkv, probs, s.heads)
			for _, threads := range []int{1, 2, 3, 0, 64} {
				o, p, g := attnRun(qkv, grad, s.heads, threads)
				wantBits(t, desc(fmt.Sprint("out, threads ", threads)), o, out)
				wantBits(t, desc(fmt.Sprint("probs, threads ", threads)), p, probs)
				wantBits(t, desc(fmt.Sprint("gqkv, threads ", threads)), g, gqkv)
			}
			half := s.b / 2
			for _, r := range [][2]int{{0, half}, {half, s.b}} {
				o, p, g := attnRun(batchPart(qkv, r[0], r[1]), batchPart(grad, r[0], r[1]), s.heads, 0)
				wantBits(t, desc(fmt.Sprint("out of rows ", r)), o, batchPart(out, r[0], r[1]))
				wantBits(t, desc(fmt.Sprint("probs of rows ", r)), p, batchPart(probs, r[0], r[1]))
				wantBits(t, desc(fmt.Sprint("gqkv of rows ", r)), g, batchPart(gqkv, r[0], r[1]))
			}
		}
	}
}

// attnPrecisions are the dtypes and products the attention runs in.
var attnPrecisions = []struct {
	dt   tensor.DType
	bf16 bool
	ar   ops.Arithmetic
}{{tensor.Float32, false, ops.AMX}, {tensor.Float64, false, ops.AMX}, {tensor.Float32, true, ops.AMX}, {tensor.Float32, true, ops.Pairs}}

// TestCausalSelfAttentionRecomputed: with probs nil, the forward's out and
// the backward's gqkv, which recomputes the probabilities from qkv, have
// the bits of the calls given kept probs, and so have
// CausalSelfAttentionRecomputeInto's out and gqkv, in both dtypes and in bf16
// products, whatever the thread budgets of the forward and the backward.
func TestCausalSelfAttentionRecomputed(t *testing.T) {
	rng := newRNG(77)
	for _, s := range []attnShape{{3, 33, 12, 3}, {2, 70, 8, 2}, {2, 1, 6, 2}, {0, 4, 6, 2}} {
		qkv64, grad64 := randN(rng, 1, s.b, s.t, 3*s.d), randN(rng, 1, s.b, s.t, s.d)
		for _, c := range attnPrecisions {
			qkv, grad := qkv64.As(c.dt), grad64.As(c.dt)
			kept := &ops.AttentionWork{BF16: c.bf16, Arithmetic: c.ar}
			out, probs := tensor.Zeros(c.dt, s.b, s.t, s.d), tensor.Zeros(c.dt, s.b, s.heads, s.t, s.t)
			ops.CausalSelfAttentionInto(out, probs, qkv, s.heads, kept)
			gqkv := garbage(qkv)
			ops.CausalSelfAttentionBackwardInto(gqkv, grad, qkv, probs, s.heads, kept)
			for _, threads := range [][2]int{{1, 1}, {2, 3}, {3, 1}, {0, 64}} {
				desc := fmt.Sprintf("%v %v bf16 %v %v, threads %v", s, c.dt, c.bf16, c.ar, threads)
				work := &ops.AttentionWork{Threads: threads[0], BF16: c.bf16, Arithmetic: c.ar}
				o := tensor.Full(c.dt, math.NaN(), s.b, s.t, s.d)
				ops.CausalSelfAttentionInto(o, nil, qkv, s.heads, work)
				wantBits(t, desc+": out", o, out)
				work.Threads = threads[1]
				g := garbage(qkv)
				ops.CausalSelfAttentionBackwardInto(g, grad, qkv, nil, s.heads, work)
				wantBits(t, desc+": gqkv", g, gqkv)
				o, g = tensor.Full(c.dt, math.NaN(), s.b, s.t, s.d), garbage(qkv)
				ops.CausalSelfAttentionRecomputeInto(o, g, grad, qkv, s.heads, work)
				wantBits(t, desc+": CausalSelfAttentionRecomputeInto's out", o, out)
				wantBits(t, desc+": CausalSelfAttentionRecomputeInto's gqkv", g, gqkv)
			}
			if g := ops.CausalSelfAttentionBackward(grad, qkv, nil, s.heads); !c.bf16 {
				wantBits(t, fmt.Sprintf("%v %v: CausalSelfAttentionBackward without probs", s, c.dt), g, gqkv)
			}
		}
	}
}

// TestCausalSelfAttentionStatsBits: the statistics forms, as a layer runs
// them, give out with the bits of CausalSelfAttention and gqkv with the
// bits of the backward given kept probs or none, and of
// CausalSelfAttentionRecomputeInto, whatever the thread budgets, at odd
// lengths across the panels of 32 rows, 1 to 4 heads, in both dtypes and
// in bf16 products; a batch cut in two halves gives the bits of the whole.
func TestCausalSelfAttentionStatsBits(t *testing.T) {
	rng := newRNG(79)
	for _, s := range []attnShape{{3, 1, 6, 2}, {2, 31, 12, 4}, {3, 33, 12, 3}, {2, 100, 8, 1}, {4, 45, 24, 3}} {
		qkv64, grad64 := randN(rng, 1, s.b, s.t, 3*s.d), randN(rng, 1, s.b, s.t, s.d)
		for _, c := range attnPrecisions {
			qkv, grad := qkv64.As(c.dt), grad64.As(c.dt)
			one := &ops.AttentionWork{Threads: 1, BF16: c.bf16, Arithmetic: c.ar}
			out, probs := tensor.Zeros(c.dt, s.b, s.t, s.d), tensor.Zeros(c.dt, s.b, s.heads, s.t, s.t)
			ops.CausalSelfAttentionInto(out, probs, qkv, s.heads, one)
			gqkv := garbage(qkv)
			ops.CausalSelfAttentionBackwardInto(gqkv, grad, qkv, probs, s.heads, one)
			var stats *tt
			for _, threads := range []int{1, 2, 3, 8} {
				desc := func(what string) string {
					return fmt.Sprintf("%s %v %v bf16 %v %v, threads %d", what, s, c.dt, c.bf16, c.ar, threads)
				}
				work := &ops.AttentionWork{Threads: threads, BF16: c.bf16, Arithmetic: c.ar}
				var o *tt
				o, st := attnStats(qkv, s.heads, work)
				wantBits(t, desc("out"), o, out)
				if stats == nil {
					stats = st
				}
				wantBits(t, desc("stats"), st, stats)
				g := garbage(qkv)
				ops.CausalSelfAttentionBackwardStatsInto(g, grad, qkv, st, s.heads, work)
				wantBits(t, desc("gqkv from stats"), g, gqkv)
				g = garbage(qkv)
				ops.CausalSelfAttentionBackwardInto(g, grad, qkv, nil, s.heads, work)
				wantBits(t, desc("gqkv without probs"), g, gqkv)
				o, g = garbage(out), garbage(qkv)
				ops.CausalSelfAttentionRecomputeInto(o, g, grad, qkv, s.heads, work)
				wantBits(t, desc("CausalSelfAttentionRecomputeInto's out"), o, out)
				wantBits(t, desc("CausalSelfAttentionRecomputeInto's gqkv"), g, gqkv)
			}
			half := s.b / 2
			for _, r := range [][2]int{{0, half}, {half, s.b}} {
				work := &ops.AttentionWork{BF16: c.bf16, Arithmetic: c.ar}
				q, gr := batchPart(qkv, r[0], r[1]), batchPart(grad, r[0], r[1])
				o, st := attnStats(q, s.heads, work)
				g := garbage(q)
				ops.CausalSelfAttentionBackwardStatsInto(g, gr, q, st, s.heads, work)
				desc := fmt.Sprintf("%v %v bf16 %v %v, rows %v", s, c.dt, c.bf16, c.ar, r)
				wantBits(t, desc+": out", o, batchPart(out, r[0], r[1]))
				wantBits(t, desc+": stats", st, batchPart(stats, r[0], r[1]))
				wantBits(t, desc+": gqkv", g, batchPart(gqkv, r[0], r[1]))
			}
		}
	}
}

// TestCausalSelfAttentionNaN: a NaN in a key spoils the rows that see it,
// and only those.
func TestCausalSelfAttentionNaN(t *testing.T) {
	s := attnShape{1, 6, 3, 1}
	qkv := randN(newRNG(75), 1, s.b, s.t, 3*s.d)
	qkv.Set(math.NaN(), 0, 3, 4) // key of position 3
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		out, probs := ops.CausalSelfAttention(qkv.As(dt), s.heads)
		for i := range s.t {
			if nan := math.IsNaN(out.At(0, i, 0)); nan != (i >= 3) {
				t.Errorf("%v: out at position %d is %v", dt, i, out.At(0, i, 0))
			}
			if nan := math.IsNaN(probs.At(0, 0, i, 0)); nan != (i >= 3) {
				t.Errorf("%v: probs at row %d is %v", dt, i, probs.At(0, 0, i, 0))
			}
		}
	}
}

func TestCausalSelfAttentionErrors(t *testing.T) {
	z := func(shape ...int) *tt { return tensor.Zeros(tensor.Float64, shape...) }
	f32 := func(shape ...int) *tt { return tensor.Zeros(tensor.Float32, shape...) }
	qkv, probs, grad := z(2, 5, 12), z(2, 2, 5, 5), z(2, 5, 4)
	for _, c := range []struct {
		op       string
		mentions []string
		fn       func()
	}{
		{"CausalSelfAttention", []string{"[2 5]", "3 axes"}, func() { ops.CausalSelfAttention(z(2, 5), 1) }},
		{"CausalSelfAttention", []string{"[2 5 12]", "3 heads", "9"}, func() { ops.CausalSelfAttention(qkv, 3) }},
		{"CausalSelfAttention", []string{"[2 5 14]", "2 heads", "6"}, func() { ops.CausalSelfAttention(z(2, 5, 14), 2) }},
		{"CausalSelfAttention", []string{"[2 5 0]"}, func() { ops.CausalSelfAttention(z(2, 5, 0), 1) }},
		{"CausalSelfAttention", []string{"heads 0"}, func() { ops.CausalSelfAttention(qkv, 0) }},
		{"CausalSelfAttentionInto", []string{"out", "[2 5 5]", "[2 5 4]"}, func() { ops.CausalSelfAttentionInto(z(2, 5, 5), probs, qkv, 2, nil) }},
		{"CausalSelfAttentionInto", []string{"probs", "[2 1 5 5]", "[2 2 5 5]"}, func() { ops.CausalSelfAttentionInto(grad, z(2, 1, 5, 5), qkv, 2, nil) }},
		{"CausalSelfAttentionInto", []string{"float32", "float64"}, func() { ops.CausalSelfAttentionInto(f32(2, 5, 4), probs, qkv, 2, nil) }},
		{"CausalSelfAttentionBackward", []string{"probs", "[2 2 5 4]", "[2 2 5 5]"}, func() { ops.CausalSelfAttentionBackward(grad, qkv, z(2, 2, 5, 4), 2) }},
		{"CausalSelfAttentionBackward", []string{"probs", "[2 2 5 5]", "[2 4 5 5]"}, func() { ops.CausalSelfAttentionBackward(grad, qkv, probs, 4) }},
		{"CausalSelfAttentionBackward", []string{"grad", "[2 5 12]", "[2 5 4]"}, func() { ops.CausalSelfAttentionBackward(qkv, qkv, probs, 2) }},
		{"CausalSelfAttentionBackward", []string{"float32", "float64"}, func() { ops.CausalSelfAttentionBackward(f32(2, 5, 4), qkv, probs, 2) }},
		{"CausalSelfAttentionBackward", []string{"float32", "float64"}, func() { ops.CausalSelfAttentionBackward(grad, qkv, f32(2, 2, 5, 5), 2) }},
		{"CausalSelfAttentionBackward", []string{"[5 12]", "3 axes"}, func() { ops.CausalSelfAttentionBackward(grad, z(5, 12), probs, 2) }},
		{"CausalSelfAttentionBackwardInto", []string{"gqkv", "[2 5 4]", "[2 5 12]"}, func() { ops.CausalSelfAttentionBackwardInto(grad, grad, qkv, probs, 2, nil) }},
		{"CausalSelfAttentionStatsInto", []string{"stats", "float32", "[2 2 5 2]"}, func() { ops.CausalSelfAttentionStatsInto(grad, f32(2, 2, 5, 2), qkv, 2, nil) }},
		{"CausalSelfAttentionStatsInto", []string{"stats", "[2 2 5 1]", "[2 2 5 2]", "[2 5 12]"}, func() { ops.CausalSelfAttentionStatsInto(grad, z(2, 2, 5, 1), qkv, 2, nil) }},
		{"CausalSelfAttentionStatsInto", []string{"out", "[2 5 5]", "[2 5 4]"}, func() { ops.CausalSelfAttentionStatsInto(z(2, 5, 5), z(2, 2, 5, 2), qkv, 2, nil) }},
		{"CausalSelfAttentionBackwardStatsInto", []string{"stats", "[2 4 5 2]", "[2 2 5 2]"}, func() { ops.CausalSelfAttentionBackwardStatsInto(qkv, grad, qkv, z(2, 4, 5, 2), 2, nil) }},
		{"CausalSelfAttentionBackwardStatsInto", []string{"gqkv", "[2 5 4]", "[2 5 12]"}, func() { ops.CausalSelfAttentionBackwardStatsInto(grad, grad, qkv, z(2, 2, 5, 2), 2, nil) }},
		{"CausalSelfAttentionRecomputeInto", []string{"out", "[2 5 12]", "[2 5 4]"}, func() { ops.CausalSelfAttentionRecomputeInto(qkv, z(2, 5, 12), grad, qkv, 2, nil) }},
		{"CausalSelfAttentionRecomputeInto", []string{"gqkv", "[2 5 4]", "[2 5 12]"}, func() { ops.CausalSelfAttentionRecomputeInto(grad, grad, grad, qkv, 2, nil) }},
	} {
		expectError(t, c.op, "ops."+c.op+": ", c.mentions, c.fn)
	}
}

// TestCausalSelfAttentionAllocations: the Into forms allocate nothing once
// their work has grown, on one thread or more.
func TestCausalSelfAttentionAllocations(t *testing.T) {
	s := attnShape{4, 40, 24, 3}
	rng := newRNG(76)
	qkv, grad := randN(rng, 1, s.b, s.t, 3*s.d).As(tensor.Float32), randN(rng, 1, s.b, s.t, s.d).As(tensor.Float32)
	out, probs, gqkv := tensor.Zeros(tensor.Float32, s.b, s.t, s.d), tensor.Zeros(tensor.Float32, s.b, s.heads, s.t, s.t), tensor.Zeros(tensor.Float32, s.b, s.t, 3*s.d)
	stats := tensor.Zeros(tensor.Float64, s.b, s.heads, s.t, 2)
	for _, threads := range []int{1, 2} {
		work := &ops.AttentionWork{Threads: threads}
		if n := testing.AllocsPerRun(20, func() { ops.CausalSelfAttentionInto(out, probs, qkv, s.heads, work) }); n != 0 {
			t.Errorf("CausalSelfAttentionInto, %d threads: %v allocations per call, want 0", threads, n)
		}
		if n := testing.AllocsPerRun(20, func() { ops.CausalSelfAttentionBackwardInto(gqkv, grad, qkv, probs, s.heads, work) }); n != 0 {
			t.Errorf("CausalSelfAttentionBackwardInto, %d threads: %v allocations per call, want 0", threads, n)
		}
		if n := testing.AllocsPerRun(20, func() { ops.CausalSelfAttentionInto(out, nil, qkv, s.heads, work) }); n != 0 {
			t.Errorf("CausalSelfAttentionInto without probs, %d threads: %v allocations per call, want 0", threads, n)
		}
		if n := testing.AllocsPerRun(20, func() { ops.CausalSelfAttentionBackwardInto(gqkv, grad, qkv, nil, s.heads, work) }); n != 0 {
			t.Errorf("CausalSelfAttentionBackwardInto without probs, %d threads: %v allocations per call, want 0", threads, n)
		}
		if n := testing.AllocsPerRun(20, func() { ops.CausalSelfAttentionStatsInto(out, stats, qkv, s.heads, work) }); n != 0 {
			t.Errorf("CausalSelfAttentionStatsInto, %d threads: %v allocations per call, want 0", threads, n)
		}
		if n := testing.AllocsPerRun(20, func() { ops.CausalSelfAttentionBackwardStatsInto(gqkv, grad, qkv, stats, s.heads, work) }); n != 0 {
			t.Errorf("CausalSelfAttentionBackwardStatsInto, %d threads: %v allocations per call, want 0", threads, n)
		}
		if n := testing.AllocsPerRun(20, func() { ops.CausalSelfAttentionRecomputeInto(out, gqkv, grad, qkv, s.heads, work) }); n != 0 {
			t.Errorf("CausalSelfAttentionRecomputeInto, %d threads: %v allocations per call, want 0", threads, n)
		}
	}
}

// TestAttentionWorkLinear: at the character recipe's width and heads and a
// context of 1024, a training forward and backward from the statistics
// leave two panels of 32 rows per part in the work (parts are at most 4
// per thread), not a [T, T] matrix per pair or per part.
func TestAttentionWorkLinear(t *testing.T) {
	s := attnLongShape
	s.b = 2
	const threads = 2
	qkv, grad := randN(newRNG(80), 1, s.b, s.t, 3*s.d).As(tensor.Float32), randN(newRNG(81), 1, s.b, s.t, s.d).As(tensor.Float32)
	work := &ops.AttentionWork{Threads: threads}
	_, stats := attnStats(qkv, s.heads, work)
	ops.CausalSelfAttentionBackwardStatsInto(garbage(qkv), grad, qkv, stats, s.heads, work)
	parts := min(s.b*s.heads, 4*threads)
	if got, want := work.Bytes(), int64(parts*2*32*s.t*4); got != want {
		t.Errorf("work holds %d bytes, want %d: two panels of 32×%d floats for each of %d parts", got, want, s.t, parts)
	}
	if got, square := work.Bytes(), int64(s.t*s.t*4); got >= square {
		t.Errorf("work holds %d bytes, as much as one [T, T] matrix of %d", got, square)
	}
}

// attnBenchShapes are a small GPT's (nanoGPT's Shakespeare character model)
// and a larger one's.
var attnBenchShapes = []attnShape{{12, 64, 128, 4}, {32, 128, 192, 6}}

// attnFlops is the forward's multiply-adds counted twice over the full
// T×T square (q·kᵀ and p·v), as for a kernel that does not skip the mask.
func attnFlops(s attnShape) float64 { return 4 * float64(s.b*s.heads*s.t*s.t*(s.d/s.heads)) }

// attnBenchInputs returns float32 qkv, grad and probs for s.
func attnBenchInputs(s attnShape) (qkv, grad, probs *tt) {
	rng := rand.New(rand.NewPCG(1, 1))
	qkv = tensor.RandNormal(rng, tensor.Float32, 0, 1, s.b, s.t, 3*s.d)
	grad = tensor.RandNormal(rng, tensor.Float32, 0, 1, s.b, s.t, s.d)
	_, probs = ops.CausalSelfAttention(qkv, s.heads)
	return qkv, grad, probs
}

// BenchmarkCausalSelfAttention reports float32 GFLOP/s of the forward Into
// form, counted by attnFlops, on GOMAXPROCS threads (-cpu sets them).
func BenchmarkCausalSelfAttention(b *testing.B) {
	for _, s := range attnBenchShapes {
		b.Run(fmt.Sprintf("B%d_T%d_D%d_H%d", s.b, s.t, s.d, s.heads), func(b *testing.B) {
			qkv, _, probs := attnBenchInputs(s)
			out := tensor.Zeros(tensor.Float32, s.b, s.t, s.d)
			var work ops.AttentionWork
			b.ReportAllocs()
			for b.Loop() {
				ops.CausalSelfAttentionInto(out, probs, qkv, s.heads, &work)
			}
			b.ReportMetric(attnFlops(s)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkCausalSelfAttentionBackward reports float32 GFLOP/s of the
// backward Into form: four products, twice the forward's flops.
func BenchmarkCausalSelfAttentionBackward(b *testing.B) {
	for _, s := range attnBenchShapes {
		b.Run(fmt.Sprintf("B%d_T%d_D%d_H%d", s.b, s.t, s.d, s.heads), func(b *testing.B) {
			qkv, grad, probs := attnBenchInputs(s)
			gqkv := tensor.Zeros(tensor.Float32, s.b, s.t, 3*s.d)
			var work ops.AttentionWork
			b.ReportAllocs()
			for b.Loop() {
				ops.CausalSelfAttentionBackwardInto(gqkv, grad, qkv, probs, s.heads, &work)
			}
			b.ReportMetric(2*attnFlops(s)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// attnLongShape is the character recipe's width and heads at GPT-2's
// context of 1024.
var attnLongShape = attnShape{1, 1024, 128, 4}

// BenchmarkCausalSelfAttentionTrain reports float32 GFLOP/s of what a
// TransformerBlock's attention runs in a training step: the forward Into
// form keeping what the backward reads, then the backward Into form from
// it (three times the forward's flops): the row statistics, not the
// probabilities.
func BenchmarkCausalSelfAttentionTrain(b *testing.B) {
	for _, s := range append(attnBenchShapes[:len(attnBenchShapes):len(attnBenchShapes)], attnLongShape) {
		b.Run(fmt.Sprintf("B%d_T%d_D%d_H%d", s.b, s.t, s.d, s.heads), func(b *testing.B) {
			qkv, grad, _ := attnBenchInputs(s)
			out, gqkv := tensor.Zeros(tensor.Float32, s.b, s.t, s.d), tensor.Zeros(tensor.Float32, s.b, s.t, 3*s.d)
			stats := tensor.Zeros(tensor.Float64, s.b, s.heads, s.t, 2)
			var work ops.AttentionWork
			b.ReportAllocs()
			for b.Loop() {
				ops.CausalSelfAttentionStatsInto(out, stats, qkv, s.heads, &work)
				ops.CausalSelfAttentionBackwardStatsInto(gqkv, grad, qkv, stats, s.heads, &work)
			}
			b.ReportMetric(3*attnFlops(s)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
