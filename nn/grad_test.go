package nn_test

// Finite-difference checks, in float64 through ops/opstest, of the input and
// parameter gradients of every layer. The inputs of a check are [x, params...]:
// f copies the parameter inputs into the layer and runs a training Forward;
// backward zeroes the gradients, runs Forward then Backward and returns
// [dx, grads...]. Inputs are kept away from kinks (ReLU at 0).

import (
	"fmt"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// gradTol is the combined tolerance |analytic-numeric| <= gradTol*max(1, |numeric|)
// for central differences with step 1e-6 in float64.
const gradTol = 1e-6

// fdPass is the training pass every check runs under; Dropout's mask is a
// function of it, so it is fixed across the finite differences.
var fdPass = nn.Pass{Step: 3, Micro: 1, Train: true}

// checkLayer checks dX and every parameter gradient of l at x by central
// differences.
func checkLayer(t *testing.T, name string, l nn.Layer, x *tt) {
	t.Helper()
	ps := l.Params()
	inputs := []*tt{x}
	for _, p := range ps {
		inputs = append(inputs, p.Value.Clone())
	}
	load := func(in []*tt) {
		for i, p := range ps {
			p.Value.CopyFrom(in[i+1])
		}
	}
	f := func(in []*tt) *tt {
		load(in)
		return l.Forward(fdPass, in[0])
	}
	backward := func(g *tt, in []*tt, _ *tt) []*tt {
		l.ZeroGrad()
		load(in)
		l.Forward(fdPass, in[0])
		grads := []*tt{l.Backward(fdPass, g, true)}
		for _, p := range ps {
			grads = append(grads, p.Grad.Clone())
		}
		return grads
	}
	opstest.CheckGrad(t, name, inputs, f, backward, gradTol)
	l.Reset()
}

func TestLinearGrad(t *testing.T) {
	for _, c := range []struct{ in, out, rows int }{
		{1, 1, 1}, {3, 2, 1}, {1, 4, 3}, {4, 1, 5}, {4, 5, 3}, {7, 3, 6}, {16, 8, 2},
	} {
		for _, bias := range []bool{true, false} {
			name := fmt.Sprintf("Linear(in=%d,out=%d,rows=%d,bias=%v)", c.in, c.out, c.rows, bias)
			t.Run(name, func(t *testing.T) {
				rng := newRNG(uint64(100*c.in + 10*c.out + c.rows))
				l := mustLinear(t, tensor.Float64, c.in, c.out, nn.XavierUniform, 7)
				if bias {
					l.B.CopyFrom(randN(rng, tensor.Float64, 1, c.out)) // nonzero bias
				} else {
					l = nn.LinearFrom(l.W, nil)
				}
				checkLayer(t, name, l, randN(rng, tensor.Float64, 1, c.rows, c.in))
			})
		}
	}
}

func TestActivationGrad(t *testing.T) {
	for _, c := range []struct {
		name  string
		layer func() nn.Layer
	}{
		{"ReLU", func() nn.Layer { return nn.NewReLU() }},
		{"LeakyReLU(0.01)", func() nn.Layer { return nn.NewLeakyReLU(0.01) }},
		{"LeakyReLU(0.3)", func() nn.Layer { return nn.NewLeakyReLU(0.3) }},
		{"Sigmoid", func() nn.Layer { return nn.NewSigmoid() }},
		{"Tanh", func() nn.Layer { return nn.NewTanh() }},
		{"GELU(exact)", func() nn.Layer { return nn.NewGELU(false) }},
		{"GELU(tanh)", func() nn.Layer { return nn.NewGELU(true) }},
		{"Softmax", func() nn.Layer { return nn.NewSoftmax() }},
	} {
		for _, shape := range [][]int{{1, 1}, {1, 5}, {4, 3}, {6, 7}} {
			name := fmt.Sprintf("%s%v", c.name, shape)
			t.Run(name, func(t *testing.T) {
				rng := newRNG(uint64(len(name)))
				checkLayer(t, name, c.layer(), randAway(rng, 1.5, 0.05, shape...))
			})
		}
	}
}

func TestPReLUGrad(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		shape []int
	}{
		{0.25, []int{1, 1}}, {0.25, []int{3, 4}}, {-0.4, []int{5, 2}}, {1.7, []int{2, 9}},
		{0.6, []int{70, 2}}, // three row chunks
	} {
		name := fmt.Sprintf("PReLU(alpha=%v)%v", c.alpha, c.shape)
		t.Run(name, func(t *testing.T) {
			l := nn.NewPReLU(tensor.Float64)
			l.Alpha.Fill(c.alpha)
			x := randAway(newRNG(11), 1, 0.05, c.shape...)
			x.Set(-0.8, 0, 0) // at least one negative element: alpha's gradient is nonzero
			checkLayer(t, name, l, x)
		})
	}
}

func TestDropoutGrad(t *testing.T) {
	for _, c := range []struct {
		p     float64
		shape []int
	}{
		{0, []int{3, 4}}, {0.2, []int{1, 6}}, {0.5, []int{5, 8}}, {0.9, []int{4, 4}},
	} {
		name := fmt.Sprintf("Dropout(p=%v)%v", c.p, c.shape)
		t.Run(name, func(t *testing.T) {
			d := mustDropout(t, c.p, 42, 2)
			checkLayer(t, name, d, randN(newRNG(12), tensor.Float64, 1, c.shape...))
		})
	}
}

func TestLayerNormGrad(t *testing.T) {
	for _, shape := range [][]int{{1, 2}, {1, 5}, {4, 3}, {6, 8}, {70, 3}} { // the last in three row chunks
		name := fmt.Sprintf("LayerNorm%v", shape)
		t.Run(name, func(t *testing.T) {
			rng := newRNG(uint64(13 + shape[1]))
			l := nn.NewLayerNorm(tensor.Float64, shape[1])
			// Away from the initial gain 1 and bias 0, so that every term counts.
			l.Gain.CopyFrom(tensor.RandUniform(rng, tensor.Float64, 0.5, 1.5, shape[1]))
			l.Bias.CopyFrom(randN(rng, tensor.Float64, 1, shape[1]))
			x := randN(rng, tensor.Float64, 2, shape...)
			checkLayer(t, name, l, x)
		})
	}
}

// TestSequentialGrad checks the gradients TrainStep accumulates, over several
// micro-batches and every kind of layer, against finite differences of the
// mean loss it returns.
func TestSequentialGrad(t *testing.T) {
	for _, c := range []struct {
		loss  nn.Loss
		micro int
	}{
		{nn.CrossEntropy, 1}, {nn.CrossEntropy, 3}, {nn.MSE, 2}, {nn.BCEWithLogits, 4},
	} {
		name := fmt.Sprintf("Sequential(%s,micro=%d)", c.loss, c.micro)
		t.Run(name, func(t *testing.T) {
			const n, in, hidden, out = 70, 4, 6, 3 // three row chunks
			rng := newRNG(14)
			model := &nn.Sequential{Loss: c.loss, Layers: []nn.Layer{
				mustLinear(t, tensor.Float64, in, hidden, nn.HeNormal, 1),
				nn.NewTanh(),
				mustDropout(t, 0.25, 9, 2),
				nn.NewLayerNorm(tensor.Float64, hidden),
				nn.NewGELU(false),
				mustLinear(t, tensor.Float64, hidden, out, nn.XavierNormal, 2),
			}}
			x := randN(rng, tensor.Float64, 1, n, in)
			labels := make([]int, n)
			for i := range labels {
				labels[i] = rng.IntN(out)
			}
			target := nn.Target{Labels: labels}
			if c.loss == nn.BCEWithLogits {
				target = nn.Target{Values: tensor.RandUniform(rng, tensor.Float64, 0, 1, n, out)}
			}
			ps := model.Params()
			inputs := make([]*tt, len(ps))
			for i, p := range ps {
				inputs[i] = p.Value.Clone()
			}
			load := func(in []*tt) {
				for i, p := range ps {
					p.Value.CopyFrom(in[i])
				}
			}
			const step = 5
			f := func(in []*tt) *tt {
				load(in)
				loss, err := model.TrainStep(step, x, target, c.micro)
				if err != nil {
					t.Fatal(err)
				}
				return tensor.Full(tensor.Float64, loss)
			}
			backward := func(g *tt, in []*tt, _ *tt) []*tt {
				load(in)
				model.ZeroGrad()
				if _, err := model.TrainStep(step, x, target, c.micro); err != nil {
					t.Fatal(err)
				}
				grads := make([]*tt, len(ps))
				for i, p := range ps {
					grads[i] = tensor.FromFloat64s(tensor.Float64, p.Grad.Float64s(), p.Grad.Shape()...)
					d := grads[i].Data64()
					for j := range d {
						d[j] *= g.Item()
					}
				}
				return grads
			}
			opstest.CheckGrad(t, name, inputs, f, backward, gradTol)
		})
	}
}

func TestConv2dGrad(t *testing.T) {
	for _, c := range []struct{ n, c, f, h, w, kh, kw, stride, pad int }{
		{1, 1, 1, 3, 3, 2, 2, 1, 0},
		{1, 2, 3, 5, 4, 3, 2, 1, 1},  // non-square input and kernel
		{3, 3, 2, 6, 7, 3, 3, 2, 0},  // stride 2, a column left over
		{2, 2, 4, 5, 6, 2, 3, 2, 1},  // stride 2 and padding
		{2, 1, 2, 4, 3, 4, 3, 1, 0},  // the kernel the whole input
		{34, 2, 2, 3, 3, 2, 2, 1, 1}, // two sample chunks
	} {
		name := fmt.Sprintf("Conv2d(n=%d,c=%d,f=%d,%dx%d,kernel=%dx%d,stride=%d,pad=%d)", c.n, c.c, c.f, c.h, c.w, c.kh, c.kw, c.stride, c.pad)
		t.Run(name, func(t *testing.T) {
			rng := newRNG(uint64(15 + c.n*c.f*c.h))
			l := mustConv2d(t, tensor.Float64, c.c, c.f, c.kh, c.kw, c.stride, c.pad, 3)
			l.B.CopyFrom(randN(rng, tensor.Float64, 1, c.f)) // nonzero bias
			checkLayer(t, name, l, randN(rng, tensor.Float64, 1, c.n, c.c, c.h, c.w))
		})
	}
}

// distinct returns an input whose elements are a shuffle of 0.1·i − 1 plus
// noise below 0.01: no two elements of a window are within 0.08 of each
// other, so the maximum of every window stays put under the finite
// differences' steps.
func distinct(seed uint64, shape ...int) *tt {
	rng := newRNG(seed)
	x := tensor.Zeros(tensor.Float64, shape...)
	d := x.Data64()
	for i, j := range rng.Perm(len(d)) {
		d[i] = 0.1*float64(j) - 1 + 0.01*rng.Float64()
	}
	return x
}

func TestPool2dGrad(t *testing.T) {
	for _, c := range []struct{ n, c, h, w, kernel, stride int }{
		{1, 1, 2, 2, 2, 0},
		{1, 2, 4, 4, 2, 2},
		{3, 2, 5, 7, 3, 2}, // non-square, a row and a column left over
		{2, 3, 4, 5, 3, 1}, // overlapping windows
		{2, 1, 6, 4, 2, 1},
	} {
		maxName := fmt.Sprintf("MaxPool2d(kernel=%d,stride=%d)[%d %d %d %d]", c.kernel, c.stride, c.n, c.c, c.h, c.w)
		t.Run(maxName, func(t *testing.T) {
			checkLayer(t, maxName, mustMaxPool2d(t, c.kernel, c.stride), distinct(uint64(c.h*c.w), c.n, c.c, c.h, c.w))
		})
		avgName := fmt.Sprintf("AvgPool2d(kernel=%d,stride=%d)[%d %d %d %d]", c.kernel, c.stride, c.n, c.c, c.h, c.w)
		t.Run(avgName, func(t *testing.T) {
			checkLayer(t, avgName, mustAvgPool2d(t, c.kernel, c.stride), randN(newRNG(uint64(c.h)), tensor.Float64, 1, c.n, c.c, c.h, c.w))
		})
	}
}

func TestBatchNormGrad(t *testing.T) {
	for _, shape := range [][]int{{2, 1}, {4, 3}, {7, 2}, {1, 2, 2, 3}, {3, 2, 3, 2}, {2, 3, 1, 4}} {
		name := fmt.Sprintf("BatchNorm%v", shape)
		t.Run(name, func(t *testing.T) {
			rng := newRNG(uint64(19 + len(shape)*shape[0]))
			l := mustBatchNorm(t, tensor.Float64, shape[1])
			// Away from the initial gamma 1 and beta 0, so that every term counts.
			l.Gamma.CopyFrom(tensor.RandUniform(rng, tensor.Float64, 0.5, 1.5, shape[1]))
			l.Beta.CopyFrom(randN(rng, tensor.Float64, 1, shape[1]))
			checkLayer(t, name, l, randN(rng, tensor.Float64, 2, shape...))
		})
	}
}

func TestFlattenGrad(t *testing.T) {
	for _, shape := range [][]int{{1, 3}, {2, 3, 4}, {3, 2, 2, 3}, {1, 1, 1, 1}} {
		name := fmt.Sprintf("Flatten%v", shape)
		t.Run(name, func(t *testing.T) {
			checkLayer(t, name, nn.NewFlatten(), randN(newRNG(20), tensor.Float64, 1, shape...))
		})
	}
}
