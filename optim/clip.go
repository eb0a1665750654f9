package optim

import (
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// GradNorm returns the L2 norm of all gradients taken together: the square root
// of the per-parameter sums of squares (SumSquares), added in slice order.
// Defined that way, an owner of part of the parameters (a pipeline stage) can
// send its partial sums and one actor can add everyone's in the global order
// and get the same bits as GradNorm over all of them. Params whose Grad is nil
// are skipped, as PyTorch skips a None .grad.
func GradNorm(params []Param) float64 {
	var sum float64
	for _, p := range params {
		sum += SumSquares(p)
	}
	return math.Sqrt(sum)
}

// SumSquares returns the sum of the squares of p's gradient in float64,
// element by element in row-major order, or 0 when Grad is nil.
func SumSquares(p Param) float64 {
	var sum float64
	if p.Grad == nil {
		return 0
	}
	if p.Grad.DType() == tensor.Float32 {
		return sumFrom(0, p.Grad.Data32())
	}
	for _, x := range p.Grad.Data64() {
		sum += x * x
	}
	return sum
}

// SumsOfSquares sets sums[i] to SumSquares(params[i]) for every i, with the
// same bits, faster: each sum is a chain of dependent additions, bound by
// their latency, so it runs the chains of sumLanes float32 gradients side
// by side, taking the next gradient into a lane as one ends.
func SumsOfSquares(sums []float64, params []Param) {
	sums = sums[:len(params)]
	var lanes [sumLanes]sumChain
	active, next := 0, 0
	for {
		// fill the free lanes; other gradients are summed at once
		for active < sumLanes && next < len(params) {
			p := params[next]
			if p.Grad == nil || p.Grad.DType() != tensor.Float32 || p.Grad.Size() == 0 {
				sums[next] = SumSquares(p)
			} else {
				lanes[active] = sumChain{g: p.Grad.Data32(), at: next}
				active++
			}
			next++
		}
		if active == 0 {
			return
		}
		for k := active; k < sumLanes; k++ {
			lanes[k] = lanes[0] // idle: lane 0's sum again, thrown away
		}
		n := len(lanes[0].g)
		for _, l := range lanes[1:] {
			n = min(n, len(l.g))
		}
		sumLanes4(&lanes, n)
		for k := 0; k < active; {
			if len(lanes[k].g) > 0 {
				k++
				continue
			}
			sums[lanes[k].at] = lanes[k].sum
			active--
			lanes[k] = lanes[active]
		}
	}
}

// sumLanes is how many sums SumsOfSquares runs side by side: enough to
// cover the latency of an addition on common CPUs, few enough to stay in
// registers.
const sumLanes = 4

// sumChain is a gradient's sum of squares under way: sum over the elements
// before g, the rest of the gradient of parameter at.
type sumChain struct {
	g   []float32
	sum float64
	at  int
}

// sumLanes4 adds the squares of the next n elements of every lane's
// gradient to its sum, each sum in element order.
func sumLanes4(l *[sumLanes]sumChain, n int) {
	a, b, c, d := l[0].g[:n], l[1].g[:n], l[2].g[:n], l[3].g[:n]
	sa, sb, sc, sd := l[0].sum, l[1].sum, l[2].sum, l[3].sum
	for i := range a {
		x, y, z, w := float64(a[i]), float64(b[i]), float64(c[i]), float64(d[i])
		sa += x * x
		sb += y * y
		sc += z * z
		sd += w * w
	}
	l[0].sum, l[1].sum, l[2].sum, l[3].sum = sa, sb, sc, sd
	l[0].g, l[1].g, l[2].g, l[3].g = l[0].g[n:], l[1].g[n:], l[2].g[n:], l[3].g[n:]
}

// sumFrom returns sum plus the squares of g, added in order, as SumSquares.
func sumFrom(sum float64, g []float32) float64 {
	for _, v := range g {
		x := float64(v)
		sum += x * x
	}
	return sum
}

// ClipCoef returns the factor that clip_grad_norm_ multiplies gradients by:
// min(maxNorm/(totalNorm+1e-6), 1). It is NaN when totalNorm is NaN, and 0 when it is
// +Inf, as in PyTorch. It panics if maxNorm is negative or NaN.
func ClipCoef(totalNorm, maxNorm float64) float64 {
	if math.IsNaN(maxNorm) || maxNorm < 0 {
		panic(fmt.Errorf("optim: max norm %v must be >= 0", maxNorm))
	}
	c := maxNorm / (totalNorm + 1e-6)
	if c > 1 {
		c = 1
	}
	return c
}

// ScaleGrads multiplies every gradient by coef, in the gradient's dtype (coef is
// rounded to float32 for float32 gradients). Params whose Grad is nil are skipped.
func ScaleGrads(params []Param, coef float64) {
	eachGrad(params,
		func(g []float32) { scaleBy(g, float32(coef)) },
		func(g []float64) { scaleBy(g, coef) })
}

func scaleBy[T float32 | float64](g []T, c T) {
	for i := range g {
		g[i] = g[i] * c
	}
}

// eachGrad calls f32 or f64, by dtype, on the data of every gradient that is
// not nil.
func eachGrad(params []Param, f32 func([]float32), f64 func([]float64)) {
	for _, p := range params {
		switch {
		case p.Grad == nil:
		case p.Grad.DType() == tensor.Float32:
			f32(p.Grad.Data32())
		default:
			f64(p.Grad.Data64())
		}
	}
}

// ClipGradNorm scales all gradients together so that their global L2 norm is at most
// maxNorm, like torch.nn.utils.clip_grad_norm_ with norm_type 2, and returns the norm
// before clipping. It is exactly
//
//	total := GradNorm(params)
//	if c := ClipCoef(total, maxNorm); c != 1 {
//		ScaleGrads(params, c)
//	}
//
// so an actor that sees the gradients of several owners can compute GradNorm over all
// of them, in the same order, and send the coefficient to each. A NaN or infinite
// norm is returned as is and, as in PyTorch, makes the gradients NaN or zero; check
// the result to skip such a step. It panics if maxNorm is negative or NaN.
func ClipGradNorm(params []Param, maxNorm float64) (totalNorm float64) {
	total := GradNorm(params)
	if c := ClipCoef(total, maxNorm); c != 1 {
		ScaleGrads(params, c)
	}
	return total
}

// ClipGradValue clamps every gradient element to [-clip, clip], like
// torch.nn.utils.clip_grad_value_ (clip is rounded to float32 for float32 gradients;
// NaN elements stay NaN). It panics if clip is negative or NaN.
func ClipGradValue(params []Param, clip float64) {
	if math.IsNaN(clip) || clip < 0 {
		panic(fmt.Errorf("optim: ClipGradValue: clip %v must be >= 0", clip))
	}
	eachGrad(params,
		func(g []float32) { clampAbs(g, float32(clip)) },
		func(g []float64) { clampAbs(g, clip) })
}

// clampAbs clamps g to [-hi, hi]; NaNs stay.
func clampAbs[T float32 | float64](g []T, hi T) {
	for i, v := range g {
		if v > hi {
			g[i] = hi
		} else if v < -hi {
			g[i] = -hi
		}
	}
}
