package optim

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// TestFloat32WideGolden runs each optimizer for six steps on a 24-element float32
// parameter and compares the final weights bit for bit against an independent
// float32 emulation of PyTorch's scalar CPU kernels (every operation rounded to
// float32; see goldenGrads). With this many elements a change in the order of
// operations or in a rounding flips bits with near certainty, which the 2-element
// goldens alone could miss.
func TestFloat32WideGolden(t *testing.T) {
	const n, steps = 24, 6
	w0 := make([]float64, n)
	for i := range w0 {
		w0[i] = float64((i*5)%11-5) / 4
	}
	grads := make([][]float64, steps)
	for k := range grads {
		grads[k] = make([]float64, n)
		for i := range grads[k] {
			grads[k][i] = float64((i*7+k*13)%17-8) / 10
		}
	}
	lrs := []float64{0.1, 0.05, 0.025, 0.1, 0.2, 0.01}
	def := DefaultAdamConfig()
	cases := []struct {
		name string
		new  func() (Optimizer, error)
		want []uint32
	}{
		{"sgd momentum 0.9 nesterov weight_decay 0.01", func() (Optimizer, error) {
			return NewSGD(SGDConfig{Momentum: 0.9, Nesterov: true, WeightDecay: 0.01})
		}, []uint32{
			0xbf33c16b, 0xbe1e48ce, 0x3f655ac8, 0x3e107216, 0x3f150629, 0xbe159439,
			0x3f60b4e3, 0xbf9fcb09, 0x3f3278e1, 0xbf73e75a, 0x3ed1ee9a, 0xbfa21dfc,
			0xbd05b12b, 0x3fa06a9d, 0xbecb15ff, 0x3f7f9878, 0xbf35df9e, 0x3fa18130,
			0xbf641b9e, 0x3e234570, 0xbf186ce5, 0xbe1e0d08, 0xbf61ee7a, 0x3e10addc,
		}},
		{"sgd momentum 0.9 weight_decay 0.05", func() (Optimizer, error) {
			return NewSGD(SGDConfig{Momentum: 0.9, WeightDecay: 0.05})
		}, []uint32{
			0xbf5196db, 0xbe189144, 0x3f753721, 0x3d6740e6, 0x3f2cf1e5, 0xbe89c845,
			0x3f618a47, 0xbf856470, 0x3f1b26c5, 0xbf563080, 0x3e8f9d29, 0xbf8f3adc,
			0xbe0cb16e, 0x3f93ecbf, 0xbe92fb92, 0x3f58db67, 0xbf11c301, 0x3f848cd6,
			0xbf582683, 0x3e8669de, 0xbf238e22, 0xbca20968, 0xbf76e656, 0x3e3e2054,
		}},
		{"adam weight_decay 0.01", func() (Optimizer, error) {
			c := def
			c.WeightDecay = 0.01
			return NewAdam(c)
		}, []uint32{
			0xbf81d7dd, 0x3d231a0d, 0x3f85a696, 0x3a870660, 0x3f43ba5d, 0xbeab8ba2,
			0x3f473757, 0xbf80ca18, 0x3f2e1173, 0xbf858217, 0x3eac60ec, 0xbfa47689,
			0xbe290ade, 0x3fad0449, 0xbebf5df8, 0x3f8208dc, 0xbf223707, 0x3f792c6a,
			0xbf347fe5, 0x3e993147, 0xbf3e96cc, 0x3ca7fda1, 0xbf8a3678, 0x3e083a0c,
		}},
		{"adamw weight_decay 0.1", func() (Optimizer, error) {
			c := def
			c.WeightDecay = 0.1
			return NewAdamW(c)
		}, []uint32{
			0xbf7771b7, 0x3d13f382, 0x3f7f65d5, 0x3bc49b77, 0x3f3a9f81, 0xbea2d668,
			0x3f5850f9, 0xbf782d44, 0x3f27a5c1, 0xbf7ff162, 0x3ea5f11d, 0xbf9e0096,
			0xbe23223d, 0x3fa60600, 0xbeb83eb7, 0x3f792aec, 0xbf1c9b2d, 0x3f702919,
			0xbf2d9ad6, 0x3e91178c, 0xbf3550d6, 0x3c715cc4, 0xbf8422a3, 0x3e05dbaa,
		}},
		{"adam betas (0.4, 0.99)", func() (Optimizer, error) {
			return NewAdam(AdamConfig{Betas: [2]float64{0.4, 0.99}, Eps: 1e-8})
		}, []uint32{
			0xbf764fa6, 0xbb08631e, 0x3f8ae298, 0xbd3cf492, 0x3f2e3005, 0xbe8be506,
			0x3f47ec2d, 0xbf7a8f7f, 0x3f22f6f3, 0xbf8289b5, 0x3ed07ad8, 0xbfb2fa47,
			0x3da53409, 0x3fa85435, 0xbeb01163, 0x3f8d3811, 0xbf3c8685, 0x3f84d82d,
			0xbf408863, 0x3eab8a62, 0xbf4bcf49, 0xbd8e7fd0, 0xbf82f941, 0x3cfd85ae,
		}},
	}
	for _, c := range cases {
		opt, err := c.new()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := run(t, opt, newParam("w", tensor.Float32, w0...), grads, lrs)
		inputs := fmt.Sprintf("%s float32 w0=%v grads=%v lrs=%v", c.name, w0, grads, lrs)
		for i, w := range got[steps-1] {
			if b := math.Float32bits(float32(w)); b != c.want[i] {
				t.Errorf("%s: element %d after %d steps: got %#08x (%.9g), want %#08x (%.9g)", inputs, i, steps, b, w, c.want[i], math.Float32frombits(c.want[i]))
			}
		}
	}
}
