package nn_test

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestFuseSameBits runs the same MLP, linear layers and ReLUs or exact
// GELUs in turn, fused (nn.Fuse) and apart, and holds the fused one to the
// other's bits: the activations' outputs and input gradients (the model's
// output and input gradient among them), and the weight and bias gradients.
// In float32 (products in
// fp32 and in bf16) and float64, on one and two threads, one micro-batch
// (products that pack as they go) and three (weights packed once a step),
// with Backward and with split backward (BackwardInput, BackwardParams).
func TestFuseSameBits(t *testing.T) {
	acts := map[string]func() *nn.Activation{"relu": nn.NewReLU, "gelu": func() *nn.Activation { return nn.NewGELU(false) }}
	for act, newAct := range acts {
		build := func(dt tensor.DType) []nn.Layer {
			// an activation first and last, so that the ends have no neighbour to fuse with
			return []nn.Layer{newAct(), mustLinear(t, dt, 33, 70, nn.XavierUniform, 1), newAct(),
				mustLinear(t, dt, 70, 50, nn.XavierUniform, 2), newAct(), mustLinear(t, dt, 50, 9, nn.XavierUniform, 3), newAct()}
		}
		fuseSameBits(t, act, build)
	}
}

func fuseSameBits(t *testing.T, act string, build func(tensor.DType) []nn.Layer) {
	for _, c := range []struct {
		dt tensor.DType
		pr nn.Precision
	}{{tensor.Float32, nn.FP32}, {tensor.Float32, nn.BF16}, {tensor.Float64, nn.FP32}} {
		dt := c.dt
		for _, threads := range []int{1, 2} {
			for _, micros := range []int{1, 3} {
				for _, split := range []bool{false, true} {
					name := fmt.Sprintf("%s/%v/%v/threads=%d/micros=%d/split=%v", act, dt, c.pr, threads, micros, split)
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
								if l.Kind() == act { // a linear layer fused with a ReLU gives its output
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
								if layers[i].Kind() == act { // and one after it its input gradient
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

// TestTransformerFusedSameBits holds a transformer block, whose products
// add the residuals and run the GELU and its backward on their tiles, to
// the bits of the same block with every sub-layer run apart (nn.Apart): the
// output, the input gradient and every parameter gradient, in fp32 and
// bf16 products, on one and two threads, over micro-batches whose weights
// are packed once (three) or not (one), with Backward whole and split.
func TestTransformerFusedSameBits(t *testing.T) {
	const tokens, dim = 9, 16
	for _, pr := range []nn.Precision{nn.FP32, nn.BF16} {
		for _, threads := range []int{1, 2} {
			for _, micros := range []int{1, 3} {
				name := fmt.Sprintf("%v/threads=%d/micros=%d", pr, threads, micros)
				rng := newRNG(8)
				xs, dys := make([]*tt, micros), make([]*tt, micros)
				for m := range micros {
					xs[m] = randN(rng, tensor.Float32, 1, 2+m, tokens*dim)
					dys[m] = randN(rng, tensor.Float32, 1, 2+m, tokens*dim)
				}
				run := func(apart bool) (got []*tt) {
					layers, err := nn.BuildShape([]nn.Spec{{Type: "transformer_block", Heads: 2, Init: nn.GPT}}, []int{tokens, dim}, 3, tensor.Float32, 0, 1)
					if err != nil {
						t.Fatal(err)
					}
					b := layers[0]
					if apart {
						nn.Apart(b)
					}
					for m := range micros {
						p := nn.Pass{Step: 1, Micro: m, Micros: micros, Weights: 1, Train: true, Threads: threads, Arena: &nn.Arena{}, Precision: pr}
						got = append(got, b.Forward(p, xs[m]).Clone())
					}
					for m := range micros {
						p := nn.Pass{Step: 1, Micro: m, Micros: micros, Weights: 1, Train: true, Threads: threads, Arena: &nn.Arena{}, Precision: pr}
						got = append(got, b.Backward(p, dys[m], true).Clone())
					}
					for _, p := range b.Params() {
						got = append(got, p.Grad.Clone())
					}
					return got
				}
				want, got := run(true), run(false)
				for i := range want {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("%s: tensor %d differs (max diff %g)", name, i, maxDiff(got[i], want[i]))
					}
				}
			}
		}
	}
}
