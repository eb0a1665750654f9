package ops_test

// Layer norm: finite-difference checks in float64, values against naive
// float64 loops (float64 tight, float32 in ulps), any rank, the 32-row chunks
// of the parameter gradients, thread counts, eps, constant rows, empty
// shapes, the Into forms and panics.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// checkLayerNormGrad checks the gradients of x, weight and bias, the
// backward taking the statistics the forward returns.
func checkLayerNormGrad(t *testing.T, name string, x, w, b *tt, eps float64) {
	t.Helper()
	opstest.CheckGrad(t, name, in(x, w, b),
		func(p []*tt) *tt { out, _, _ := ops.LayerNorm(p[0], p[1], p[2], eps); return out },
		func(g *tt, p []*tt, _ *tt) []*tt {
			_, mean, rstd := ops.LayerNorm(p[0], p[1], p[2], eps)
			gx, gw, gb := ops.LayerNormBackward(g, p[0], p[1], mean, rstd)
			return in(gx, gw, gb)
		}, gradTol)
}

func TestGradLayerNorm(t *testing.T) {
	rng := newRNG(71)
	// {70 3} has three row chunks, the last short; {5} is one row; {2 3 4} is 3-D.
	for _, s := range [][]int{{4, 3}, {1, 2}, {70, 3}, {5}, {2, 3, 4}, {3, 1, 6}} {
		for _, eps := range []float64{1e-5, 0.1} {
			f := s[len(s)-1]
			checkLayerNormGrad(t, gradName("LayerNorm", s, "eps", eps),
				randN(rng, 2, s...), randSignedU(rng, 0.5, 2, f), randN(rng, 1, f), eps)
		}
	}
	// A constant row: variance 0, so out is bias and x̂ is 0, but the gradient
	// of x is weight·rstd·(grad − mean grad), finite because eps > 0.
	for _, eps := range []float64{1e-5, 1e-3} {
		x := randN(rng, 1, 4, 3)
		for j := range 3 {
			x.Data64()[3+j] = 0.7
		}
		checkLayerNormGrad(t, gradName("LayerNorm constant row", sh(4, 3), "eps", eps),
			x, randSignedU(rng, 0.5, 2, 3), randN(rng, 1, 3), eps)
	}
}

// refLayerNorm normalises the rows of x with naive loops in float64.
func refLayerNorm(x, w, b []float64, f int, eps float64) (out, mean, rstd []float64) {
	n := len(x) / f
	out, mean, rstd = make([]float64, len(x)), make([]float64, n), make([]float64, n)
	for i := range n {
		row := x[i*f : (i+1)*f]
		var s, ss float64
		for _, v := range row {
			s += v
		}
		mean[i] = s / float64(f)
		for _, v := range row {
			ss += (v - mean[i]) * (v - mean[i])
		}
		rstd[i] = 1 / math.Sqrt(ss/float64(f)+eps)
		for j, v := range row {
			out[i*f+j] = (v-mean[i])*rstd[i]*w[j] + b[j]
		}
	}
	return out, mean, rstd
}

// refLayerNormBackward is the backward with naive loops in float64, from
// statistics recomputed in float64, the parameter gradients summed over all
// rows in order; mag holds Σ|grad·x̂| and Σ|grad| per feature, their scale.
func refLayerNormBackward(g, x, w []float64, f int, eps float64) (gx, gw, gb, magW, magB []float64) {
	n := len(x) / f
	_, mean, rstd := refLayerNorm(x, w, make([]float64, f), f, eps)
	gx, gw, gb, magW, magB = make([]float64, len(x)), make([]float64, f), make([]float64, f), make([]float64, f), make([]float64, f)
	for i := range n {
		var sd, sdx float64
		for j := range f {
			k := i*f + j
			xh := (x[k] - mean[i]) * rstd[i]
			gw[j] += g[k] * xh
			gb[j] += g[k]
			magW[j] += math.Abs(g[k] * xh)
			magB[j] += math.Abs(g[k])
			sd += g[k] * w[j]
			sdx += g[k] * w[j] * xh
		}
		for j := range f {
			k := i*f + j
			xh := (x[k] - mean[i]) * rstd[i]
			gx[k] = rstd[i] / float64(f) * (float64(f)*g[k]*w[j] - sd - xh*sdx)
		}
	}
	return gx, gw, gb, magW, magB
}

func TestLayerNormValues(t *testing.T) {
	// By hand: rows {1, 3} (mean 2, var 1) and {2, 6} (mean 4, var 4); eps 3
	// makes rstd 1/2 and 1/√7.
	x := mk(sh(2, 2), 1, 3, 2, 6)
	out, mean, rstd := ops.LayerNorm(x, vec(2, 3), vec(0.5, -1), 0)
	checkT(t, "LayerNorm [2 2] out", out, sh(2, 2), []float64{-1.5, 2, -1.5, 2}, 0)
	checkT(t, "LayerNorm [2 2] mean", mean, sh(2), []float64{2, 4}, 0)
	checkT(t, "LayerNorm [2 2] rstd", rstd, sh(2), []float64{1, 0.5}, 0)
	_, _, rstd = ops.LayerNorm(x, vec(2, 3), vec(0.5, -1), 3)
	checkT(t, "LayerNorm [2 2] eps 3 rstd", rstd, sh(2), []float64{0.5, 1 / math.Sqrt(7)}, 1e-16)
	// By hand, backward: x̂ = (-1, 1) with rstd 1, grad (1, 2), weight (2, 3):
	// ĝ = (2, 6), Σĝ = 8, Σĝx̂ = 4, gx = (1/2)(2·ĝ − 8 − 4x̂) = (0, 0).
	gx, gw, gb := ops.LayerNormBackward(mk(sh(1, 2), 1, 2), mk(sh(1, 2), 1, 3), vec(2, 3), vec(2), vec(1))
	checkT(t, "LayerNormBackward by hand gx", gx, sh(1, 2), []float64{0, 0}, 0)
	checkT(t, "LayerNormBackward by hand gweight", gw, sh(2), []float64{-1, 2}, 0)
	checkT(t, "LayerNormBackward by hand gbias", gb, sh(2), []float64{1, 2}, 0)

	// Against naive loops: float64 sums in the same order, so within a few
	// float64 roundings.
	rng := newRNG(72)
	for _, s := range [][]int{{6, 4}, {70, 9}, {3, 2, 5}, {7}, {2, 2, 2, 33}} {
		for _, eps := range []float64{1e-5, 0.5} {
			f := s[len(s)-1]
			x, w, b := randN(rng, 3, s...), randN(rng, 1, f), randN(rng, 1, f)
			addRowOffsets(rng, x, f, 4)
			g := randN(rng, 1, s...)
			wantOut, wantMean, wantRstd := refLayerNorm(x.Data64(), w.Data64(), b.Data64(), f, eps)
			wantGX, wantGW, wantGB, _, _ := refLayerNormBackward(g.Data64(), x.Data64(), w.Data64(), f, eps)
			out, mean, rstd := ops.LayerNorm(x, w, b, eps)
			gx, gw, gb := ops.LayerNormBackward(g, x, w, mean, rstd)
			desc := fmt.Sprintf("LayerNorm %v eps %g", s, eps)
			rows := s[:len(s)-1]
			checkT(t, desc+" out", out, s, wantOut, 1e-15)
			checkT(t, desc+" mean", mean, rows, wantMean, 1e-15)
			checkT(t, desc+" rstd", rstd, rows, wantRstd, 1e-15)
			checkT(t, desc+" gx", gx, s, wantGX, 1e-14)
			checkT(t, desc+" gweight", gw, sh(f), wantGW, 1e-14)
			checkT(t, desc+" gbias", gb, sh(f), wantGB, 1e-14)
		}
	}
}

// addRowOffsets shifts each row of x by its own N(0, std²) offset, so that
// the means differ from 0 and from each other.
func addRowOffsets(rng *rand.Rand, x *tt, f int, std float64) {
	d := x.Data64()
	for i := 0; i < len(d); i += f {
		off := std * rng.NormFloat64()
		for j := range f {
			d[i+j] += off
		}
	}
}

// ulp32 is the spacing of float32 numbers at |v|.
func ulp32(v float64) float64 {
	a := float32(math.Abs(v))
	if math.IsInf(float64(a), 0) {
		return math.Inf(1)
	}
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// TestLayerNormFloat32 measures float32 results against the float64
// reference of the same (float32) inputs: out, mean and rstd are that
// reference rounded once (within half an ulp). The backward takes the
// rounded statistics, as PyTorch's does, and gx cancels within a row, so
// its error is measured in ulps of the row's largest |gx|; the parameter
// gradients add the chunks' rounded sums in float32, so theirs is measured
// in ulps of Σ|term|.
func TestLayerNormFloat32(t *testing.T) {
	rng := newRNG(73)
	for _, c := range []struct {
		s                []int
		offset           float64 // std of the rows' means; the rows' own std is 2
		gxBound, gwBound float64
	}{
		{[]int{768, 128}, 3, 4, 2}, {[]int{300, 192}, 3, 4, 2}, {[]int{2, 40, 7}, 3, 4, 2},
		// The float32 mean's rounding shifts x̂ by up to ulp(mean)/2·rstd:
		// the backward's errors grow with |mean|/std (here about 100).
		{[]int{256, 64}, 200, 40, 16},
	} {
		s, f := c.s, c.s[len(c.s)-1]
		x64, w64, b64 := randN(rng, 2, s...), randU(rng, 0.5, 1.5, f), randN(rng, 0.5, f)
		addRowOffsets(rng, x64, f, c.offset)
		g64 := randN(rng, 1, s...)
		x, w, b, g := x64.As(tensor.Float32), w64.As(tensor.Float32), b64.As(tensor.Float32), g64.As(tensor.Float32)
		// The reference sees exactly the float32 inputs.
		xs, ws, bs, gs := x.Float64s(), w.Float64s(), b.Float64s(), g.Float64s()
		wantOut, wantMean, wantRstd := refLayerNorm(xs, ws, bs, f, 1e-5)
		wantGX, wantGW, wantGB, magW, magB := refLayerNormBackward(gs, xs, ws, f, 1e-5)

		out, mean, rstd := ops.LayerNorm(x, w, b, 1e-5)
		gx, gw, gb := ops.LayerNormBackward(g, x, w, mean, rstd)
		worst := func(got []float64, want []float64, scale func(i int) float64) float64 {
			m := 0.0
			for i := range got {
				m = math.Max(m, math.Abs(got[i]-want[i])/ulp32(scale(i)))
			}
			return m
		}
		self := func(want []float64) func(int) float64 { return func(i int) float64 { return want[i] } }
		rowMax := make([]float64, len(wantGX)/f)
		for i, v := range wantGX {
			rowMax[i/f] = math.Max(rowMax[i/f], math.Abs(v))
		}
		for _, r := range []struct {
			name  string
			ulps  float64
			bound float64
		}{
			{"out", worst(out.Float64s(), wantOut, self(wantOut)), 0.5},
			{"mean", worst(mean.Float64s(), wantMean, self(wantMean)), 0.5},
			{"rstd", worst(rstd.Float64s(), wantRstd, self(wantRstd)), 0.5},
			{"gx (ulps of the row's largest)", worst(gx.Float64s(), wantGX, func(i int) float64 { return rowMax[i/f] }), c.gxBound},
			{"gweight (ulps of Σ|grad·x̂|)", worst(gw.Float64s(), wantGW, func(i int) float64 { return magW[i] }), c.gwBound},
			{"gbias (ulps of Σ|grad|)", worst(gb.Float64s(), wantGB, func(i int) float64 { return magB[i] }), 1},
		} {
			t.Logf("LayerNorm float32 %v, row means' std %g: %s within %.3g ulp", s, c.offset, r.name, r.ulps)
			if r.ulps > r.bound*(1+1e-6) {
				t.Errorf("LayerNorm float32 %v, row means' std %g: %s off by %.3g ulp, want at most %g", s, c.offset, r.name, r.ulps, r.bound)
			}
		}
	}
}

// TestLayerNormRank: a [B T F] input gives the bits of its [B·T F] rows,
// with [B T] statistics.
func TestLayerNormRank(t *testing.T) {
	rng := newRNG(74)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		x, w, b := randN(rng, 2, 3, 5, 8).As(dt), randN(rng, 1, 8).As(dt), randN(rng, 1, 8).As(dt)
		g := randN(rng, 1, 3, 5, 8).As(dt)
		out, mean, rstd := ops.LayerNorm(x, w, b, 1e-5)
		gx, gw, gb := ops.LayerNormBackward(g, x, w, mean, rstd)
		out2, mean2, rstd2 := ops.LayerNorm(x.Reshape(15, 8), w, b, 1e-5)
		gx2, gw2, gb2 := ops.LayerNormBackward(g.Reshape(15, 8), x.Reshape(15, 8), w, mean2, rstd2)
		desc := fmt.Sprintf("LayerNorm [3 5 8] %v", dt)
		if !mean.HasShape(3, 5) || !rstd.HasShape(3, 5) || !out.HasShape(3, 5, 8) || !gx.HasShape(3, 5, 8) {
			t.Errorf("%s: shapes out %v mean %v rstd %v gx %v", desc, out.Shape(), mean.Shape(), rstd.Shape(), gx.Shape())
		}
		wantBits(t, desc+" out", out, out2.Reshape(3, 5, 8))
		wantBits(t, desc+" mean", mean, mean2.Reshape(3, 5))
		wantBits(t, desc+" rstd", rstd, rstd2.Reshape(3, 5))
		wantBits(t, desc+" gx", gx, gx2.Reshape(3, 5, 8))
		wantBits(t, desc+" gweight", gw, gw2)
		wantBits(t, desc+" gbias", gb, gb2)
	}
	// 1-D: one row, 0-D statistics.
	out, mean, rstd := ops.LayerNorm(vec(1, 3), vec(1, 1), vec(0, 0), 0)
	checkT(t, "LayerNorm [2] out", out, sh(2), []float64{-1, 1}, 0)
	checkT(t, "LayerNorm [2] mean", mean, sh(), []float64{2}, 0)
	checkT(t, "LayerNorm [2] rstd", rstd, sh(), []float64{1}, 0)
}

// rowsOf returns rows [lo, hi) of a tensor whose first axis is its rows, and
// the same rows of its statistics, sharing their memory.
func rowsOf(x *tt, lo, hi int) *tt {
	row := x.Size() / x.Dim(0)
	s := x.Shape()
	s[0] = hi - lo
	return new(tensor.Tensor).SetView(x, lo*row, s...)
}

// TestLayerNormBackwardChunks is the promise a trainer cutting a mini-batch
// into micro-batches at multiples of 32 rows relies on: the backward over
// all rows at once adds into gweight and gbias the bits of the backward
// over the parts one after the other, and gx is the same row for row.
func TestLayerNormBackwardChunks(t *testing.T) {
	rng := newRNG(75)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, c := range []struct {
			n, f int
			cut  []int
		}{
			{64, 24, []int{0, 32, 64}},
			{70, 24, []int{0, 32, 64, 70}},
			{200, 24, []int{0, 96, 128, 200}},
			{1000, 24, []int{0, 320, 640, 1000}},
			{4100, 16, []int{0, 1024, 2080, 4096, 4100}}, // in parallel parts
		} {
			f := c.f
			x := randN(rng, 2, c.n, f)
			addRowOffsets(rng, x, f, 1)
			x, w, b := x.As(dt), randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
			g := randN(rng, 1, c.n, f).As(dt)
			_, mean, rstd := ops.LayerNorm(x, w, b, 1e-5)
			gw0, gb0 := randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
			for _, threads := range []int{1, 2, 4} {
				work := &ops.LayerNormWork{Threads: threads}
				gx, gw, gb := garbage(x), gw0.Clone(), gb0.Clone()
				ops.LayerNormBackwardInto(gx, gw, gb, g, x, w, mean, rstd, work)
				pgx, pgw, pgb := garbage(x), gw0.Clone(), gb0.Clone()
				for k := 0; k+1 < len(c.cut); k++ {
					lo, hi := c.cut[k], c.cut[k+1]
					ops.LayerNormBackwardInto(rowsOf(pgx, lo, hi), pgw, pgb, rowsOf(g, lo, hi), rowsOf(x, lo, hi), w, rowsOf(mean, lo, hi), rowsOf(rstd, lo, hi), work)
				}
				desc := fmt.Sprintf("LayerNormBackwardInto %v %d rows cut at %v, %d threads", dt, c.n, c.cut, threads)
				wantBits(t, desc+" gx", pgx, gx)
				wantBits(t, desc+" gweight", pgw, gw)
				wantBits(t, desc+" gbias", pgb, gb)
			}
		}
	}
}

// TestLayerNormThreads: every thread count gives the bits of one thread,
// at sizes that are cut into several parts.
func TestLayerNormThreads(t *testing.T) {
	rng := newRNG(76)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, s := range [][]int{{1000, 64}, {4100, 16}, {8, 129, 40}} {
			f := s[len(s)-1]
			x, w, b := randN(rng, 2, s...).As(dt), randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
			g := randN(rng, 1, s...).As(dt)
			gw0, gb0 := randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
			run := func(threads int) []*tt {
				work := &ops.LayerNormWork{Threads: threads}
				rows := s[:len(s)-1]
				out, mean, rstd := garbage(x), tensor.Full(dt, nan, rows...), tensor.Full(dt, nan, rows...)
				ops.LayerNormInto(out, mean, rstd, x, w, b, 1e-5, work)
				gx, gw, gb := garbage(x), gw0.Clone(), gb0.Clone()
				ops.LayerNormBackwardInto(gx, gw, gb, g, x, w, mean, rstd, work)
				return in(out, mean, rstd, gx, gw, gb)
			}
			want := run(1)
			for _, threads := range []int{2, 3, 4, 7, 0} {
				got := run(threads)
				for k, name := range []string{"out", "mean", "rstd", "gx", "gweight", "gbias"} {
					wantBits(t, fmt.Sprintf("LayerNorm %v %v, %d threads: %s", dt, s, threads, name), got[k], want[k])
				}
			}
		}
	}
}

func TestLayerNormConstantRow(t *testing.T) {
	// Row 1 is constant: out is bias, gradients are finite.
	x := mk(sh(3, 2), 1, 4, 5, 5, 6, 4)
	w, b, g := vec(1.5, 2), vec(0.25, -0.5), mk(sh(3, 2), 1, 1, 2, -3, 3, 5)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, eps := range []float64{1e-5, 1e-3} {
			desc := fmt.Sprintf("LayerNorm constant row %v eps %g", dt, eps)
			out, mean, rstd := ops.LayerNorm(x.As(dt), w.As(dt), b.As(dt), eps)
			if o := out.Float64s(); o[2] != 0.25 || o[3] != -0.5 {
				t.Errorf("%s: out %v, want the bias (0.25, -0.5) in row 1", desc, o)
			}
			gx, gw, gb := ops.LayerNormBackward(g.As(dt), x.As(dt), w.As(dt), mean, rstd)
			for _, r := range []*tt{mean, rstd, gx, gw, gb} {
				if !r.IsFinite() {
					t.Errorf("%s: non-finite result %v", desc, r.Float64s())
				}
			}
			// Row 1: x̂ = 0, ĝ = (3, -6): gx = rstd·(ĝ − mean ĝ) = rstd·(4.5, -4.5).
			inv := float64(float32(1 / math.Sqrt(eps)))
			if dt == tensor.Float64 {
				inv = 1 / math.Sqrt(eps)
			}
			checkT(t, desc+" rstd", rstd, sh(3), []float64{rstd.At(0), inv, rstd.At(2)}, 0)
			checkT(t, desc+" gx", gx, sh(3, 2), []float64{gx.At(0, 0), gx.At(0, 1), inv * 4.5, -inv * 4.5, gx.At(2, 0), gx.At(2, 1)}, 1e-6)
		}
	}
	// eps 0: rstd is +Inf and out NaN, as torch.nn.functional.layer_norm gives.
	out, _, rstd := ops.LayerNorm(mk(sh(1, 2), 3, 3), vec(1, 1), vec(0, 0), 0)
	checkT(t, "LayerNorm constant row eps 0 rstd", rstd, sh(1), []float64{inf}, 0)
	checkT(t, "LayerNorm constant row eps 0 out", out, sh(1, 2), []float64{nan, nan}, 0)
}

func TestLayerNormEmpty(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		safely(t, fmt.Sprintf("LayerNorm [0 4] %v", dt), func() {
			x := tensor.Zeros(dt, 0, 4)
			out, mean, rstd := ops.LayerNorm(x, tensor.Full(dt, 1, 4), tensor.Zeros(dt, 4), 1e-5)
			checkT(t, "LayerNorm [0 4] out", out, sh(0, 4), nil, 0)
			checkT(t, "LayerNorm [0 4] mean", mean, sh(0), nil, 0)
			gx, gw, gb := ops.LayerNormBackward(x, x, tensor.Full(dt, 1, 4), mean, rstd)
			checkT(t, "LayerNormBackward [0 4] gx", gx, sh(0, 4), nil, 0)
			checkT(t, "LayerNormBackward [0 4] gweight", gw, sh(4), repeat(0, 4), 0)
			checkT(t, "LayerNormBackward [0 4] gbias", gb, sh(4), repeat(0, 4), 0)
		})
		safely(t, fmt.Sprintf("LayerNorm [3 0] %v", dt), func() {
			x := tensor.Zeros(dt, 3, 0)
			out, mean, rstd := ops.LayerNorm(x, tensor.Zeros(dt, 0), tensor.Zeros(dt, 0), 1e-5)
			checkT(t, "LayerNorm [3 0] out", out, sh(3, 0), nil, 0)
			checkT(t, "LayerNorm [3 0] mean", mean, sh(3), repeat(nan, 3), 0)
			checkT(t, "LayerNorm [3 0] rstd", rstd, sh(3), repeat(nan, 3), 0)
			gx, gw, _ := ops.LayerNormBackward(x, x, tensor.Zeros(dt, 0), mean, rstd)
			checkT(t, "LayerNormBackward [3 0] gx", gx, sh(3, 0), nil, 0)
			checkT(t, "LayerNormBackward [3 0] gweight", gw, sh(0), nil, 0)
		})
	}
}

// TestLayerNormInto: the bits of the allocating forms whatever the
// destinations held, gradients added to what they held, gx skipped when
// nil, and no allocation once the work has grown.
func TestLayerNormInto(t *testing.T) {
	rng := newRNG(77)
	var work ops.LayerNormWork // one for every case: it grows and shrinks
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, s := range [][]int{{4, 3}, {70, 9}, {2, 3, 5}, {600, 40}} {
			f := s[len(s)-1]
			x, w, b, g := randN(rng, 2, s...).As(dt), randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt), randN(rng, 1, s...).As(dt)
			out, mean, rstd := ops.LayerNorm(x, w, b, 1e-5)
			gotOut, gotMean, gotRstd := garbage(out), garbage(mean), garbage(rstd)
			desc := fmt.Sprintf("LayerNormInto %v %v", dt, s)
			if r := ops.LayerNormInto(gotOut, gotMean, gotRstd, x, w, b, 1e-5, &work); r != gotOut {
				t.Errorf("%s: did not return out", desc)
			}
			wantBits(t, desc+" out", gotOut, out)
			wantBits(t, desc+" mean", gotMean, mean)
			wantBits(t, desc+" rstd", gotRstd, rstd)

			gx, gw, gb := ops.LayerNormBackward(g, x, w, mean, rstd)
			gw0, gb0 := randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
			gotX, gotW, gotB := garbage(gx), gw0.Clone(), gb0.Clone()
			ops.LayerNormBackwardInto(gotX, gotW, gotB, g, x, w, mean, rstd, nil)
			desc = fmt.Sprintf("LayerNormBackwardInto %v %v", dt, s)
			wantBits(t, desc+" gx", gotX, gx)
			if x.Size()/f <= ops.LayerNormChunkRows { // one chunk: its sum is the gradient
				wantBits(t, desc+" gweight", gotW, plus(gw0, gw))
				wantBits(t, desc+" gbias", gotB, plus(gb0, gb))
			}
			noW, noB := gw0.Clone(), gb0.Clone()
			ops.LayerNormBackwardInto(nil, noW, noB, g, x, w, mean, rstd, &work)
			wantBits(t, desc+" gweight without gx", noW, gotW)
			wantBits(t, desc+" gbias without gx", noB, gotB)
		}
	}

	f32 := func(shape ...int) *tt { return randN(rng, 1, shape...).As(tensor.Float32) }
	for _, s := range [][2]int{{768, 128}, {64, 8}} {
		n, f := s[0], s[1]
		x, w, b, g := f32(n, f), f32(f), f32(f), f32(n, f)
		out, mean, rstd, gx, gw, gb := f32(n, f), f32(n), f32(n), f32(n, f), f32(f), f32(f)
		for _, threads := range []int{1, 2} {
			work := &ops.LayerNormWork{Threads: threads}
			for _, c := range []struct {
				name string
				fn   func()
			}{
				{"LayerNormInto", func() { ops.LayerNormInto(out, mean, rstd, x, w, b, 1e-5, work) }},
				{"LayerNormBackwardInto", func() { ops.LayerNormBackwardInto(gx, gw, gb, g, x, w, mean, rstd, work) }},
			} {
				if a := testing.AllocsPerRun(20, c.fn); a != 0 {
					t.Errorf("%s [%d %d], %d threads: %v allocations per call, want 0", c.name, n, f, threads, a)
				}
			}
		}
	}
}

func TestLayerNormErrors(t *testing.T) {
	z := func(shape ...int) *tt { return tensor.Zeros(tensor.Float64, shape...) }
	f32 := func(shape ...int) *tt { return tensor.Zeros(tensor.Float32, shape...) }
	x, w := z(2, 3), z(3)
	for _, c := range []struct {
		op       string
		mentions []string
		fn       func()
	}{
		{"LayerNorm", []string{"float64, float32, float64", "[2 3], [3] and [3]"}, func() { ops.LayerNorm(x, f32(3), w, 1e-5) }},
		{"LayerNorm", []string{"[4]", "[2 3], [4] and [3]"}, func() { ops.LayerNorm(x, z(4), w, 1e-5) }},
		{"LayerNorm", []string{"[3 1]", "[2 3], [3] and [3 1]"}, func() { ops.LayerNorm(x, w, z(3, 1), 1e-5) }},
		{"LayerNorm", []string{"shape []", "[], [3] and [3]"}, func() { ops.LayerNorm(z(), w, w, 1e-5) }},
		{"LayerNormInto", []string{"[2 2]", "[2 3]"}, func() { ops.LayerNormInto(z(2, 2), z(2), z(2), x, w, w, 1e-5, nil) }},
		{"LayerNormInto", []string{"float32", "[2 3]"}, func() { ops.LayerNormInto(f32(2, 3), z(2), z(2), x, w, w, 1e-5, nil) }},
		{"LayerNormInto", []string{"mean and rstd", "[2 3], [3], [3], [3] and [2]"}, func() { ops.LayerNormInto(z(2, 3), z(3), z(2), x, w, w, 1e-5, nil) }},
		{"LayerNormInto", []string{"mean and rstd", "[2 3], [3], [3], [2] and [2 1]"}, func() { ops.LayerNormInto(z(2, 3), z(2), z(2, 1), x, w, w, 1e-5, nil) }},
		{"LayerNormBackward", []string{"[2 4]", "[2 3]"}, func() { ops.LayerNormBackward(z(2, 4), x, w, z(2), z(2)) }},
		{"LayerNormBackward", []string{"float32", "[2 3]"}, func() { ops.LayerNormBackward(f32(2, 3), x, w, z(2), z(2)) }},
		{"LayerNormBackward", []string{"[2 3], [3], [3] and [2]"}, func() { ops.LayerNormBackward(x, x, w, z(3), z(2)) }},
		{"LayerNormBackward", []string{"[2 3], [2], [2] and [2]"}, func() { ops.LayerNormBackward(x, x, z(2), z(2), z(2)) }},
		{"LayerNormBackwardInto", []string{"[2 2]", "[2 3]"}, func() { ops.LayerNormBackwardInto(z(2, 2), w, w, x, x, w, z(2), z(2), nil) }},
		{"LayerNormBackwardInto", []string{"gweight", "[4]", "[2 3]"}, func() { ops.LayerNormBackwardInto(nil, z(4), w, x, x, w, z(2), z(2), nil) }},
		{"LayerNormBackwardInto", []string{"gbias", "float32", "[2 3]"}, func() { ops.LayerNormBackwardInto(nil, w, f32(3), x, x, w, z(2), z(2), nil) }},
	} {
		expectError(t, c.op, "ops."+c.op+": ", c.mentions, c.fn)
	}
}

// BenchmarkLayerNorm times the float32 kernels at a GPT's shapes into
// destinations made once; GB/s counts the tensors read and written once
// (forward: x and out; backward: x, grad and gx). nn's BenchmarkLayerNorm
// times the layer.
func BenchmarkLayerNorm(b *testing.B) {
	for _, s := range [][2]int{{768, 128}, {4096, 192}} {
		n, f := s[0], s[1]
		rng := newRNG(1)
		f32 := func(std float64, shape ...int) *tt { return randN(rng, std, shape...).As(tensor.Float32) }
		x, w, bias, g := f32(1, n, f), f32(1, f), f32(1, f), f32(1, n, f)
		out, mean, rstd, gx, gw, gb := f32(1, n, f), f32(1, n), f32(1, n), f32(1, n, f), f32(1, f), f32(1, f)
		ops.LayerNormInto(out, mean, rstd, x, w, bias, 1e-5, nil)
		bytes := float64(4 * n * f)
		for _, threads := range []int{1, 2} {
			work := &ops.LayerNormWork{Threads: threads}
			b.Run(fmt.Sprintf("forward/%dx%d/threads=%d", n, f, threads), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ops.LayerNormInto(out, mean, rstd, x, w, bias, 1e-5, work)
				}
				b.ReportMetric(2*bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
			b.Run(fmt.Sprintf("backward/%dx%d/threads=%d", n, f, threads), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ops.LayerNormBackwardInto(gx, gw, gb, g, x, w, mean, rstd, work)
				}
				b.ReportMetric(3*bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// lnBackwardRef is LayerNormBackward's plain reference, a row at a time in
// float64: gweight and gbias summed over each chunk of LayerNormChunkRows
// rows in row order, rounded and added in.
func lnBackwardRef[T float32 | float64](g, x, w, mean, rstd []T, gw, gb []T, f int) (gx []T) {
	n := len(mean)
	gx = make([]T, n*f)
	for c := 0; c < n; c += ops.LayerNormChunkRows {
		sw, sb := make([]float64, f), make([]float64, f)
		for i := c; i < min(n, c+ops.LayerNormChunkRows); i++ {
			m, rs := float64(mean[i]), float64(rstd[i])
			xh, dh := make([]float64, f), make([]float64, f)
			var sd, sx float64
			for j := range f {
				d := float64(g[i*f+j])
				h := (float64(x[i*f+j]) - m) * rs
				e := d * float64(w[j])
				sw[j] += d * h
				sb[j] += d
				sd += e
				sx += e * h
				xh[j], dh[j] = h, e
			}
			ff := float64(f)
			k := rs / ff
			for j := range f {
				gx[i*f+j] = T(k * (ff*dh[j] - sd - xh[j]*sx))
			}
		}
		for j := range f {
			gw[j] += T(sw[j])
			gb[j] += T(sb[j])
		}
	}
	return gx
}

// TestLayerNormBackwardReference: the backward gives the plain
// reference's bits, whatever rows its parts take together.
func TestLayerNormBackwardReference(t *testing.T) {
	rng := newRNG(77)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, s := range [][2]int{{1, 1}, {3, 5}, {4, 7}, {9, 128}, {33, 24}, {70, 128}, {4100, 16}} {
			n, f := s[0], s[1]
			x, w, b := randN(rng, 2, n, f).As(dt), randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
			g := randN(rng, 1, n, f).As(dt)
			_, mean, rstd := ops.LayerNorm(x, w, b, 1e-5)
			gw0, gb0 := randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
			wgw, wgb := gw0.Clone(), gb0.Clone()
			var wgx *tt
			if dt == tensor.Float32 {
				wgx = tensor.FromFloat32s(lnBackwardRef(g.Data32(), x.Data32(), w.Data32(), mean.Data32(), rstd.Data32(), wgw.Data32(), wgb.Data32(), f), n, f)
			} else {
				wgx = tensor.FromFloat64s(tensor.Float64, lnBackwardRef(g.Data64(), x.Data64(), w.Data64(), mean.Data64(), rstd.Data64(), wgw.Data64(), wgb.Data64(), f), n, f)
			}
			for _, threads := range []int{1, 2} {
				gx, gw, gb := garbage(x), gw0.Clone(), gb0.Clone()
				ops.LayerNormBackwardInto(gx, gw, gb, g, x, w, mean, rstd, &ops.LayerNormWork{Threads: threads})
				desc := fmt.Sprintf("LayerNormBackwardInto %v [%d %d], %d threads", dt, n, f, threads)
				wantBits(t, desc+" gx", gx, wgx)
				wantBits(t, desc+" gweight", gw, wgw)
				wantBits(t, desc+" gbias", gb, wgb)
			}
		}
	}
}

func BenchmarkLayerNormBackward(b *testing.B) {
	rng := newRNG(78)
	n, f := 12*64, 128 // the character recipe's batch of tokens and width
	f32 := tensor.Float32
	x, w, bias := randN(rng, 2, n, f).As(f32), randN(rng, 1, f).As(f32), randN(rng, 1, f).As(f32)
	g := randN(rng, 1, n, f).As(f32)
	_, mean, rstd := ops.LayerNorm(x, w, bias, 1e-5)
	gx, gw, gb := garbage(x), tensor.Zeros(tensor.Float32, f), tensor.Zeros(tensor.Float32, f)
	work := &ops.LayerNormWork{Threads: 1}
	for b.Loop() {
		ops.LayerNormBackwardInto(gx, gw, gb, g, x, w, mean, rstd, work)
	}
}
