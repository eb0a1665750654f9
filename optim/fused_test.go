package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

var (
	_ ScaledStepper = (*Adam)(nil)
	_ ScaledStepper = (*SGD)(nil)
)

// fusedCases are the optimizers whose StepScaled is tested, Threads 2 so
// that a large parameter's update is split, in SGD's chunks too.
var fusedCases = []struct {
	name string
	new  func() (ScaledStepper, error)
}{
	{"adam", func() (ScaledStepper, error) {
		return NewAdam(AdamConfig{Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, Threads: 2})
	}},
	{"adam weight_decay", func() (ScaledStepper, error) {
		return NewAdam(AdamConfig{Betas: [2]float64{0.8, 0.99}, Eps: 1e-8, WeightDecay: 0.05, Threads: 2})
	}},
	{"adamw weight_decay", func() (ScaledStepper, error) {
		return NewAdamW(AdamConfig{Betas: [2]float64{0.9, 0.95}, Eps: 1e-8, WeightDecay: 0.1, Threads: 2})
	}},
	{"adamw weight_decay matrices", func() (ScaledStepper, error) {
		return NewAdamW(AdamConfig{Betas: [2]float64{0.9, 0.95}, Eps: 1e-8, WeightDecay: 0.1, MatricesOnly: true, Threads: 2})
	}},
	{"sgd", func() (ScaledStepper, error) { return NewSGD(SGDConfig{Threads: 2}) }},
	{"sgd momentum", func() (ScaledStepper, error) { return NewSGD(SGDConfig{Momentum: 0.9, Threads: 2}) }},
	{"sgd nesterov weight_decay matrices", func() (ScaledStepper, error) {
		return NewSGD(SGDConfig{Momentum: 0.8, Nesterov: true, WeightDecay: 0.01, MatricesOnly: true, Threads: 2})
	}},
	{"adamw small lerp", func() (ScaledStepper, error) { // 1 - beta1 >= 0.5: torch's other lerp
		return NewAdamW(AdamConfig{Betas: [2]float64{0.3, 0.9}, Eps: 1e-6, WeightDecay: 0.01, Threads: 2})
	}},
}

// fusedParams returns a matrix large enough to be updated in parts and a
// bias of an odd length, of dtype dt, with random weights.
func fusedParams(dt tensor.DType, r *rand.Rand) []Param {
	ps := []Param{
		{Name: "w", Value: tensor.Zeros(dt, 3, 17001), Grad: tensor.Zeros(dt, 3, 17001)},
		{Name: "b", Value: tensor.Zeros(dt, 37), Grad: tensor.Zeros(dt, 37)},
	}
	for _, p := range ps {
		p.Value.CopyFrom(randTensor(dt, r, 0.5, p.Value.Shape()...))
	}
	return ps
}

// randTensor returns normal values of standard deviation sd, and a few
// zeros, signed zeros and large ones.
func randTensor(dt tensor.DType, r *rand.Rand, sd float64, shape ...int) *tensor.Tensor {
	t := tensor.Zeros(tensor.Float64, shape...)
	x := t.Data64()
	for i := range x {
		switch r.IntN(50) {
		case 0:
			x[i] = 0
		case 1:
			x[i] = math.Copysign(0, -1)
		case 2:
			x[i] = r.NormFloat64() * 1e4
		default:
			x[i] = r.NormFloat64() * sd
		}
	}
	return tensor.FromFloat64s(dt, x, shape...)
}

// bitsDiff names the first element where a and b differ in bits, or "".
func bitsDiff(a, b *tensor.Tensor) string {
	if a.DType() == tensor.Float32 {
		x, y := a.Data32(), b.Data32()
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return fmt.Sprintf("element %d: %#08x, want %#08x", i, math.Float32bits(x[i]), math.Float32bits(y[i]))
			}
		}
		return ""
	}
	x, y := a.Data64(), b.Data64()
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return fmt.Sprintf("element %d: %#016x, want %#016x", i, math.Float64bits(x[i]), math.Float64bits(y[i]))
		}
	}
	return ""
}

// checkSame compares weights, gradients and optimizer states bit for bit.
func checkSame(t *testing.T, got, want []Param, og, ow Optimizer, inputs string) {
	t.Helper()
	for i := range got {
		if d := bitsDiff(got[i].Value, want[i].Value); d != "" {
			t.Fatalf("%s: %s.Value %s", inputs, got[i].Name, d)
		}
		if d := bitsDiff(got[i].Grad, want[i].Grad); d != "" {
			t.Fatalf("%s: %s.Grad %s", inputs, got[i].Name, d)
		}
	}
	sg, sw := og.StateView(), ow.StateView()
	if sg.Step != sw.Step || len(sg.Tensors) != len(sw.Tensors) {
		t.Fatalf("%s: state at step %d with %d tensors, want %d with %d", inputs, sg.Step, len(sg.Tensors), sw.Step, len(sw.Tensors))
	}
	for name, tw := range sw.Tensors {
		if d := bitsDiff(sg.Tensors[name], tw); d != "" {
			t.Fatalf("%s: state %s %s", inputs, name, d)
		}
	}
}

// TestStepScaled holds StepScaled to ScaleGrads, Step and ZeroGrad, bit for
// bit in weights, gradients and moments, over several steps of changing
// learning rate and scale (1 among them), clearing or not.
func TestStepScaled(t *testing.T) {
	scales := []float64{0.37, 1, 1e-3, 0.999999, 1}
	for _, c := range fusedCases {
		for _, dt := range dtypes {
			for _, zero := range []bool{true, false} {
				inputs := fmt.Sprintf("%s %v zero=%v", c.name, dt, zero)
				r := rand.New(rand.NewPCG(1, 2))
				got := fusedParams(dt, r)
				want := cloneParams(got)
				og, err := c.new()
				if err != nil {
					t.Fatal(err)
				}
				ow, _ := c.new()
				for k, scale := range scales {
					for i := range got {
						g := randTensor(dt, r, 1e-2, got[i].Grad.Shape()...)
						if !zero && k > 0 && k%2 == 0 {
							g = got[i].Grad.Clone() // what the last step left
						}
						got[i].Grad.CopyFrom(g)
						want[i].Grad.CopyFrom(g)
					}
					lr := 1e-3 / float64(k+1)
					if err := og.StepScaled(got, lr, scale, zero); err != nil {
						t.Fatalf("%s: step %d: %v", inputs, k+1, err)
					}
					if scale != 1 {
						ScaleGrads(want, scale)
					}
					if err := ow.Step(want, lr); err != nil {
						t.Fatalf("%s: step %d: %v", inputs, k+1, err)
					}
					if zero {
						ZeroGrad(want)
					}
					checkSame(t, got, want, og, ow, fmt.Sprintf("%s step %d scale %v", inputs, k+1, scale))
				}
			}
		}
	}
}

// TestStepScaledNaN: a NaN scale (the clip factor of a NaN norm) and NaN or
// infinite gradients give the three passes' bits too, NaN payloads
// included, gradients kept or cleared.
func TestStepScaledNaN(t *testing.T) {
	scale := math.Float64frombits(0x7ff8100000000000) // a payload float32 keeps
	for _, c := range fusedCases {
		for _, dt := range dtypes {
			for _, zero := range []bool{true, false} {
				for _, sc := range []float64{scale, 0.5, math.Inf(1)} {
					inputs := fmt.Sprintf("%s %v zero=%v scale %v", c.name, dt, zero, sc)
					r := rand.New(rand.NewPCG(7, 8))
					got := fusedParams(dt, r)
					for _, p := range got {
						p.Grad.CopyFrom(randTensor(dt, r, 1e-2, p.Grad.Shape()...))
						if dt == tensor.Float32 {
							g := p.Grad.Data32()
							for i := 0; i < len(g); i += 7 {
								g[i] = math.Float32frombits([]uint32{0x7fc00001, 0xffc00002, 0x7f800000, 0xff800000}[i%4])
							}
						} else {
							g := p.Grad.Data64()
							for i := 0; i < len(g); i += 7 {
								g[i] = math.Float64frombits([]uint64{0x7ff8000000000001, 0xfff8000000000002, 0x7ff0000000000000, 0xfff0000000000000}[i%4])
							}
						}
					}
					want := cloneParams(got)
					og, _ := c.new()
					ow, _ := c.new()
					if err := og.StepScaled(got, 1e-3, sc, zero); err != nil {
						t.Fatal(err)
					}
					ScaleGrads(want, sc)
					if err := ow.Step(want, 1e-3); err != nil {
						t.Fatal(err)
					}
					if zero {
						ZeroGrad(want)
					}
					checkSame(t, got, want, og, ow, inputs)
				}
			}
		}
	}
}

// TestStepScaledErrors: a StepScaled that fails leaves weights, gradients
// and state as they were, before the first step and after one.
func TestStepScaledErrors(t *testing.T) {
	cases := []struct {
		name   string
		lr     float64
		breaks func([]Param) []Param
		substr string
	}{
		{"negative lr", -1, func(ps []Param) []Param { return ps }, "learning rate"},
		{"NaN lr", math.NaN(), func(ps []Param) []Param { return ps }, "learning rate"},
		{"nil grad", 1e-3, func(ps []Param) []Param {
			return append(ps[:1:1], Param{Name: "b", Value: ps[1].Value})
		}, "nil Value or Grad"},
		{"grad shape", 1e-3, func(ps []Param) []Param {
			return append(ps[:1:1], Param{Name: "b", Value: ps[1].Value, Grad: tensor.Zeros(ps[1].Value.DType(), 36)})
		}, "shape"},
		{"grad dtype", 1e-3, func(ps []Param) []Param {
			return append(ps[:1:1], Param{Name: "b", Value: ps[1].Value, Grad: tensor.Zeros(tensor.Float64, 37)})
		}, "gradient is"},
		{"one parameter fewer", 1e-3, func(ps []Param) []Param { return ps[:1] }, "parameters"},
	}
	for _, c := range fusedCases {
		for _, tc := range cases {
			for _, before := range []int{0, 1} {
				inputs := fmt.Sprintf("%s: %s after %d steps", c.name, tc.name, before)
				if before == 0 && tc.name == "one parameter fewer" {
					continue // a first step binds to any count
				}
				r := rand.New(rand.NewPCG(3, 4))
				ps := fusedParams(tensor.Float32, r)
				o, _ := c.new()
				ref, _ := c.new()
				for range before {
					for _, p := range ps {
						p.Grad.CopyFrom(randTensor(tensor.Float32, r, 1e-2, p.Grad.Shape()...))
					}
					_ = o.StepScaled(ps, 1e-3, 0.5, false)
				}
				if err := ref.LoadState(o.State()); err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					p.Grad.CopyFrom(randTensor(tensor.Float32, r, 1e-2, p.Grad.Shape()...))
				}
				was := cloneParams(ps)
				wantErr(t, o.StepScaled(tc.breaks(ps), tc.lr, 0.5, true), tc.substr, inputs)
				checkSame(t, ps, was, o, ref, inputs)
			}
		}
	}
}

// BenchmarkStepScaled times the end of a step on a parameter of the recipe
// GPT's size (about 0.8M float32), clipping's scale not 1: the three
// passes ScaleGrads, Step and ZeroGrad, and StepScaled's one, for AdamW
// (the recipe's) and SGD with momentum. Run with GOMAXPROCS=1 to time the
// passes, not the cores.
func BenchmarkStepScaled(b *testing.B) {
	const n = 800 << 10
	r := rand.New(rand.NewPCG(5, 6))
	g := randTensor(tensor.Float32, r, 1e-2, n)
	opts := []struct {
		name string
		new  func() (ScaledStepper, error)
	}{
		{"adamw", func() (ScaledStepper, error) {
			return NewAdamW(AdamConfig{Betas: [2]float64{0.9, 0.95}, Eps: 1e-8, WeightDecay: 0.1})
		}},
		{"sgd", func() (ScaledStepper, error) { return NewSGD(SGDConfig{Momentum: 0.9}) }},
	}
	for _, opt := range opts {
		for _, c := range []struct {
			name string
			step func(o ScaledStepper, ps []Param) error
		}{
			{"three", func(o ScaledStepper, ps []Param) error {
				ScaleGrads(ps, 0.5)
				if err := o.Step(ps, 1e-3); err != nil {
					return err
				}
				ZeroGrad(ps)
				return nil
			}},
			{"fused", func(o ScaledStepper, ps []Param) error { return o.StepScaled(ps, 1e-3, 0.5, true) }},
		} {
			b.Run(opt.name+"/"+c.name, func(b *testing.B) {
				o, _ := opt.new()
				ps := []Param{{Name: "w", Value: randTensor(tensor.Float32, r, 0.02, n), Grad: tensor.Zeros(tensor.Float32, n)}}
				for b.Loop() {
					b.StopTimer()
					ps[0].Grad.CopyFrom(g) // the cleared gradient back, as a backward pass writes it
					b.StartTimer()
					if err := c.step(o, ps); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
