package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestLinearBackwardThreads holds a linear layer's input and parameter
// gradients to the same bits on every thread budget: with an even budget
// and enough work, Backward runs its two products at once, each on half of
// the threads, and the bits must be those of one thread.
func TestLinearBackwardThreads(t *testing.T) {
	for _, c := range []struct {
		rows, in, out, micros int
		pr                    nn.Precision
	}{
		{128, 256, 64, 1, nn.FP32},     // at once from 2 threads
		{128, 256, 64, 2, nn.FP32},     // W packed ahead, gradients summed over two passes
		{64, 40, 24, 1, nn.FP32},       // too small: one product after the other
		{128, 256, 64, 1, nn.BF16},     // bf16 products, AMX's steps
		{96, 160, 96, 2, nn.BF16Pairs}, // bf16 products, VDPBF16PS's steps
	} {
		t.Run(fmt.Sprintf("%dx%dx%d/micros=%d/%v", c.rows, c.in, c.out, c.micros, c.pr), func(t *testing.T) {
			var want []*tt
			for _, threads := range []int{1, 2, 3, 4} {
				got := linearGrads(t, c.rows, c.in, c.out, c.micros, c.pr, threads)
				if threads == 1 {
					want = got
					continue
				}
				for i, name := range []string{"dx", "weight grad", "bias grad"} {
					if k := firstDiff(got[i].Data32(), want[i].Data32()); k >= 0 {
						t.Errorf("threads %d: %s element %d is %g, one thread gave %g", threads, name, k, got[i].Data32()[k], want[i].Data32()[k])
					}
				}
			}
		})
	}
}

// linearGrads runs micros forward and backward passes of a float32 linear
// layer over rows random rows each, on threads goroutines, and returns the
// last input gradient and the summed weight and bias gradients.
func linearGrads(t *testing.T, rows, in, out, micros int, pr nn.Precision, threads int) []*tt {
	l := mustLinear(t, tensor.Float32, in, out, nn.XavierUniform, 1)
	rng := newRNG(2)
	var dx *tt
	for m := range micros {
		p := nn.Pass{Step: 1, Micro: m, Row: m * rows, Train: true, Weights: 1, Micros: micros, Threads: threads, Precision: pr}
		x := randN(rng, tensor.Float32, 1, rows, in)
		l.Forward(p, x)
		dx = l.Backward(p, randN(rng, tensor.Float32, 1, rows, out), true)
	}
	return []*tt{dx, l.GW, l.GB}
}

// firstDiff returns the first index where a and b differ in bits, or -1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
