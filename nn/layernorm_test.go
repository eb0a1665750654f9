package nn_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestLayerNormMicroBatches: micro-batches cut at ChunkRows give the bits
// of one pass over the whole batch, the gradients accumulated in the layer.
func TestLayerNormMicroBatches(t *testing.T) {
	const n, f = 100, 20
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		rng := newRNG(31)
		x, dy := randN(rng, dt, 2, n, f), randN(rng, dt, 1, n, f)
		newLayer := func() *nn.LayerNorm {
			l := nn.NewLayerNorm(dt, f)
			l.Gain.CopyFrom(tensor.RandUniform(newRNG(32), dt, 0.5, 1.5, f))
			l.Bias.CopyFrom(randN(newRNG(33), dt, 1, f))
			return l
		}
		whole := newLayer()
		p := nn.Pass{Step: 1, Train: true, Threads: 1}
		y, dx := whole.Forward(p, x), whole.Backward(p, dy, true)

		parts := newLayer()
		var ps []nn.Pass
		var ys []*tt
		for m, s := range nn.SplitRows(n, 3) {
			q := nn.Pass{Step: 1, Micro: m, Row: s.Lo, Train: true, Threads: 2}
			ps = append(ps, q)
			ys = append(ys, parts.Forward(q, nn.Rows(x, s.Lo, s.Hi)))
		}
		for m, s := range nn.SplitRows(n, 3) {
			dxm := parts.Backward(ps[m], nn.Rows(dy, s.Lo, s.Hi), true)
			if !sameBits(ys[m], nn.Rows(y, s.Lo, s.Hi)) || !sameBits(dxm, nn.Rows(dx, s.Lo, s.Hi)) {
				t.Errorf("%v rows [%d, %d): y or dx differ from the whole batch's", dt, s.Lo, s.Hi)
			}
		}
		if !sameBits(parts.GGain, whole.GGain) || !sameBits(parts.GBias, whole.GBias) {
			t.Errorf("%v: micro-batch gradients %v %v, whole batch %v %v", dt, parts.GGain, parts.GBias, whole.GGain, whole.GBias)
		}
		if parts.InFlight() != 0 {
			t.Errorf("%v: %d micro-batches in flight after their backwards", dt, parts.InFlight())
		}
	}
}

// TestLayerNormArena: with an arena the layer returns the arena's tensors,
// with the bits of a pass without one, and allocates nothing once warm.
func TestLayerNormArena(t *testing.T) {
	const n, f = 64, 48
	rng := newRNG(34)
	x, dy := randN(rng, tensor.Float32, 1, n, f), randN(rng, tensor.Float32, 1, n, f)
	plain := nn.NewLayerNorm(tensor.Float32, f)
	y0, dx0 := plain.Forward(nn.Pass{Train: true}, x), plain.Backward(nn.Pass{Train: true}, dy, true)

	l := nn.NewLayerNorm(tensor.Float32, f)
	arena := new(nn.Arena)
	p := nn.Pass{Train: true, Arena: arena, Threads: 1}
	step := func() (y, dx *tt) {
		arena.Reset()
		y = l.Forward(p, x)
		return y, l.Backward(p, dy, true)
	}
	y1, dx1 := step()
	if !sameBits(y1, y0) || !sameBits(dx1, dx0) {
		t.Errorf("with an arena: y or dx differ from a pass without one")
	}
	if y2, dx2 := step(); y2 != y1 || dx2 != dx1 {
		t.Errorf("the second step did not reuse the arena's tensors")
	}
	if a := testing.AllocsPerRun(20, func() { step() }); a != 0 {
		t.Errorf("Forward and Backward with an arena: %v allocations per step, want 0", a)
	}
}

// BenchmarkLayerNorm times the layer's training forward and backward at a
// GPT's shapes, float32, with an arena as a pipeline gives it; GB/s counts
// the tensors read and written once (forward: x, y; backward: x, dy, dx).
func BenchmarkLayerNorm(b *testing.B) {
	for _, s := range [][2]int{{768, 128}, {4096, 192}} {
		n, f := s[0], s[1]
		for _, threads := range []int{1, 2} {
			rng := newRNG(1)
			x := randN(rng, tensor.Float32, 1, n, f)
			dy := randN(rng, tensor.Float32, 1, n, f)
			l := nn.NewLayerNorm(tensor.Float32, f)
			arena := new(nn.Arena)
			p := nn.Pass{Train: true, Arena: arena, Threads: threads}
			bytes := float64(4 * n * f)
			b.Run(fmt.Sprintf("forward/%dx%d/threads=%d", n, f, threads), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					arena.Reset()
					l.Forward(p, x)
					l.Reset()
				}
				b.ReportMetric(2*bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
			b.Run(fmt.Sprintf("backward/%dx%d/threads=%d", n, f, threads), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					arena.Reset()
					l.Forward(p, x)
					b.StartTimer()
					l.Backward(p, dy, true)
				}
				b.ReportMetric(3*bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
