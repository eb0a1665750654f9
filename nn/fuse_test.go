package nn_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestFuseSameBits runs the same MLP, linear and ReLU layers in turn, fused
// (nn.Fuse) and apart, and holds the fused one to the other's bits: the
// ReLUs' outputs and input gradients (the model's output and input gradient
// among them), and the weight and bias gradients. In float32 (products in
// fp32 and in bf16) and float64, on one and two threads, one micro-batch
// (products that pack as they go) and three (weights packed once a step),
// with Backward and with split backward (BackwardInput, BackwardParams).
func TestFuseSameBits(t *testing.T) {
	build := func(dt tensor.DType) []nn.Layer {
		// ReLU first and last, so that the ends have no neighbour to fuse with.
		return []nn.Layer{nn.NewReLU(), mustLinear(t, dt, 33, 70, nn.XavierUniform, 1), nn.NewReLU(),
			mustLinear(t, dt, 70, 50, nn.XavierUniform, 2), nn.NewReLU(), mustLinear(t, dt, 50, 9, nn.XavierUniform, 3), nn.NewReLU()}
	}
	for _, c := range []struct {
		dt tensor.DType
		pr nn.Precision
	}{{tensor.Float32, nn.FP32}, {tensor.Float32, nn.BF16}, {tensor.Float64, nn.FP32}} {
		dt := c.dt
		for _, threads := range []int{1, 2} {
			for _, micros := range []int{1, 3} {
				for _, split := range []bool{false, true} {
					name := fmt.Sprintf("%v/%v/threads=%d/micros=%d/split=%v", dt, c.pr, threads, micros, split)
					rng := newRNG(5)
					xs, dys := make([]*tt, micros), make([]*tt, micros)
					for m := range micros {
						xs[m] = randN(rng, dt, 1, 40+m, 33)
						dys[m] = randN(rng, dt, 1, 40+m, 9)
					}
					apart, fused := build(dt), build(dt)
					nn.Fuse(fused)
					run := func(layers []nn.Layer) (outs, grads []*tt) {
						for m := range micros {
							p := nn.Pass{Step: 1, Micro: m, Micros: micros, Weights: 1, Train: true, Threads: threads, Arena: &nn.Arena{}, Precision: c.pr}
							h := xs[m]
							for _, l := range layers {
								h = l.Forward(p, h)
								if l.Kind() == "relu" { // a fused linear layer's own output is the ReLU's
									outs = append(outs, h.Clone())
								}
							}
						}
						for m := range micros {
							p := nn.Pass{Step: 1, Micro: m, Micros: micros, Weights: 1, Train: true, Threads: threads, Arena: &nn.Arena{}, Precision: c.pr}
							g := dys[m]
							for i := len(layers) - 1; i >= 0; i-- {
								if lin, ok := layers[i].(*nn.Linear); ok && split {
									g = lin.BackwardInput(p, g)
									lin.BackwardParams(p)
								} else {
									g = layers[i].Backward(p, g, true)
								}
								if layers[i].Kind() == "relu" { // and its input gradient the ReLU's
									grads = append(grads, g.Clone())
								}
							}
						}
						for _, l := range layers {
							for _, p := range l.Params() {
								grads = append(grads, p.Grad.Clone())
							}
						}
						return outs, grads
					}
					wantOuts, wantGrads := run(apart)
					gotOuts, gotGrads := run(fused)
					for i := range wantOuts {
						if !sameBits(gotOuts[i], wantOuts[i]) {
							t.Fatalf("%s: output %d differs (max diff %g)", name, i, maxDiff(gotOuts[i], wantOuts[i]))
						}
					}
					for i := range wantGrads {
						if !sameBits(gotGrads[i], wantGrads[i]) {
							t.Fatalf("%s: gradient %d differs (max diff %g)", name, i, maxDiff(gotGrads[i], wantGrads[i]))
						}
					}
				}
			}
		}
	}
}

// TestFuseUndo: a second Fuse over layers in another order drops the links
// the first made.
func TestFuseUndo(t *testing.T) {
	lin, relu := mustLinear(t, tensor.Float32, 4, 3, nn.XavierUniform, 1), nn.NewReLU()
	nn.Fuse([]nn.Layer{lin, relu})
	nn.Fuse([]nn.Layer{relu, nn.NewReLU(), lin}) // now apart
	x := randN(newRNG(2), tensor.Float32, 1, 5, 4)
	p := nn.Pass{Step: 1, Train: true}
	y := lin.Forward(p, x)
	negative := false
	for _, v := range y.Data32() {
		negative = negative || v < 0
	}
	if !negative {
		t.Fatal("the linear layer still applies the ReLU after Fuse put a ReLU before it instead")
	}
	if got := relu.Forward(p, y); got == y {
		t.Fatal("the ReLU still passes its input on")
	}
}
