package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// lnForwardRef is LayerNorm's plain reference, a row at a time in float64
// in the loop form of the kernels before they were interleaved and
// vectorised: the sums in element order, the output rounded once.
func lnForwardRef[T float32 | float64](x, w, b []T, f int, eps float64) (out, mean, rstd []T) {
	n := len(x) / f
	out, mean, rstd = make([]T, n*f), make([]T, n), make([]T, n)
	for i := range n {
		row := x[i*f : (i+1)*f]
		var s float64
		for _, v := range row {
			s += float64(v)
		}
		m := s / float64(f)
		var q float64
		for _, v := range row {
			q += (float64(v) - m) * (float64(v) - m)
		}
		rs := 1 / math.Sqrt(q/float64(f)+eps)
		mean[i], rstd[i] = T(m), T(rs)
		for j, v := range row {
			h := (float64(v) - m) * rs
			out[i*f+j] = T(h*float64(w[j]) + float64(b[j]))
		}
	}
	return out, mean, rstd
}

// TestLayerNormKernelsReference: forward and backward give the plain
// references' bits at every width to 70 and a GPT's, for few rows and
// many, on 1 to 3 threads.
func TestLayerNormKernelsReference(t *testing.T) {
	rng := newRNG(79)
	widths := []int{128, 384, 768}
	for f := 1; f <= 70; f++ {
		widths = append(widths, f)
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, f := range widths {
			for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 300} {
				x := randN(rng, 2, n, f)
				addRowOffsets(rng, x, f, 1)
				x, w, b := x.As(dt), randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
				g := randN(rng, 1, n, f).As(dt)
				gw0, gb0 := randN(rng, 1, f).As(dt), randN(rng, 1, f).As(dt)
				var want [6]*tt
				wgw, wgb := gw0.Clone(), gb0.Clone()
				if dt == tensor.Float32 {
					o, m, r := lnForwardRef(x.Data32(), w.Data32(), b.Data32(), f, 1e-5)
					gx := lnBackwardRef(g.Data32(), x.Data32(), w.Data32(), m, r, wgw.Data32(), wgb.Data32(), f)
					want = [6]*tt{tensor.FromFloat32s(o, n, f), tensor.FromFloat32s(m, n), tensor.FromFloat32s(r, n), tensor.FromFloat32s(gx, n, f), wgw, wgb}
				} else {
					o, m, r := lnForwardRef(x.Data64(), w.Data64(), b.Data64(), f, 1e-5)
					gx := lnBackwardRef(g.Data64(), x.Data64(), w.Data64(), m, r, wgw.Data64(), wgb.Data64(), f)
					want = [6]*tt{tensor.FromFloat64s(dt, o, n, f), tensor.FromFloat64s(dt, m, n), tensor.FromFloat64s(dt, r, n), tensor.FromFloat64s(dt, gx, n, f), wgw, wgb}
				}
				for _, threads := range []int{1, 2, 3} {
					work := &ops.LayerNormWork{Threads: threads}
					out, mean, rstd := garbage(x), tensor.Full(dt, nan, n), tensor.Full(dt, nan, n)
					ops.LayerNormInto(out, mean, rstd, x, w, b, 1e-5, work)
					gx, gw, gb := garbage(x), gw0.Clone(), gb0.Clone()
					ops.LayerNormBackwardInto(gx, gw, gb, g, x, w, mean, rstd, work)
					desc := fmt.Sprintf("LayerNorm %v [%d %d], %d threads", dt, n, f, threads)
					for k, got := range []*tt{out, mean, rstd, gx, gw, gb} {
						wantBits(t, desc+" "+[]string{"out", "mean", "rstd", "gx", "gweight", "gbias"}[k], got, want[k])
					}
					// Without gx, the same weight and bias gradients.
					gw, gb = gw0.Clone(), gb0.Clone()
					ops.LayerNormBackwardInto(nil, gw, gb, g, x, w, mean, rstd, work)
					wantBits(t, desc+" gweight without gx", gw, want[4])
					wantBits(t, desc+" gbias without gx", gb, want[5])
				}
			}
		}
	}
}
