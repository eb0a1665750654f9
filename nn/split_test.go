package nn_test

import (
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

var _ nn.SplitBackward = (*nn.Linear)(nil)

// TestLinearSplitBackward checks that BackwardInput then BackwardParams gives
// Backward's dX and gradients bit for bit, in float32 and float64, with several
// micro-batches in flight.
func TestLinearSplitBackward(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		whole := mustLinear(t, dt, 7, 5, nn.XavierUniform, 4)
		split := mustLinear(t, dt, 7, 5, nn.XavierUniform, 4)
		rng := newRNG(8)
		xs := []*tt{randN(rng, dt, 1, 3, 7), randN(rng, dt, 1, 4, 7)}
		dys := []*tt{randN(rng, dt, 1, 3, 5), randN(rng, dt, 1, 4, 5)}
		for m, x := range xs {
			p := nn.Pass{Step: 1, Micro: m, Train: true}
			whole.Forward(p, x)
			split.Forward(p, x)
		}
		for m := range xs {
			p := nn.Pass{Step: 1, Micro: m, Train: true}
			want := whole.Backward(p, dys[m], true)
			got := split.BackwardInput(p, dys[m])
			if !sameBits(got, want) {
				t.Errorf("%v micro %d: BackwardInput dX differs from Backward's", dt, m)
			}
			if split.InFlight() != len(xs)-m {
				t.Errorf("%v: %d micro-batches in flight between the halves, want %d", dt, split.InFlight(), len(xs)-m)
			}
			split.BackwardParams(p)
		}
		if !sameBits(split.GW, whole.GW) || !sameBits(split.GB, whole.GB) {
			t.Errorf("%v: split gradients differ from Backward's (max diff %g, %g)", dt, maxDiff(split.GW, whole.GW), maxDiff(split.GB, whole.GB))
		}
		if split.InFlight() != 0 {
			t.Errorf("%v: %d micro-batches still cached", dt, split.InFlight())
		}
	}
}

// TestLinearSplitBackwardGrad checks the split path against finite differences.
func TestLinearSplitBackwardGrad(t *testing.T) {
	l := mustLinear(t, tensor.Float64, 6, 4, nn.XavierUniform, 9)
	rng := newRNG(10)
	l.B.CopyFrom(randN(rng, tensor.Float64, 0.5, 4))
	x := randN(rng, tensor.Float64, 1, 3, 6)
	load := func(in []*tt) { l.W.CopyFrom(in[1]); l.B.CopyFrom(in[2]) }
	f := func(in []*tt) *tt {
		load(in)
		y := l.Forward(fdPass, in[0])
		l.Reset()
		return y
	}
	back := func(g *tt, in []*tt, _ *tt) []*tt {
		load(in)
		l.ZeroGrad()
		l.Forward(fdPass, in[0])
		dx := l.BackwardInput(fdPass, g)
		l.BackwardParams(fdPass)
		return []*tt{dx, l.GW.Clone(), l.GB.Clone()}
	}
	opstest.CheckGrad(t, "Linear split backward", []*tt{x, l.W.Clone(), l.B.Clone()}, f, back, gradTol)
}
