package nn_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestInitStatistics draws a [256, 512] weight (fan_out 256, fan_in 512) from
// each initializer and compares the sample moments with PyTorch's formulas:
// xavier std sqrt(2/(fan_in+fan_out)), he std sqrt(2/fan_in), and the uniform
// bounds sqrt(6/(fan_in+fan_out)) and sqrt(6/fan_in).
func TestInitStatistics(t *testing.T) {
	const fanOut, fanIn = 256, 512
	const n = fanOut * fanIn
	for _, c := range []struct {
		init  nn.Init
		std   float64
		bound float64 // 0 for normal
	}{
		{nn.XavierUniform, math.Sqrt(2.0 / (fanIn + fanOut)), math.Sqrt(6.0 / (fanIn + fanOut))},
		{nn.XavierNormal, math.Sqrt(2.0 / (fanIn + fanOut)), 0},
		{nn.HeUniform, math.Sqrt(2.0 / fanIn), math.Sqrt(6.0 / fanIn)},
		{nn.HeNormal, math.Sqrt(2.0 / fanIn), 0},
		// kaiming_uniform_(a=√5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)), std bound/√3
		{nn.TorchDefault, 1 / math.Sqrt(3*fanIn), 1 / math.Sqrt(fanIn)},
		{nn.GPT, 0.02, 0}, // whatever the fans
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			w := tensor.Zeros(dt, fanOut, fanIn)
			if err := c.init.Fill(w, newRNG(81)); err != nil {
				t.Fatalf("%s.Fill(%v %v): %v", c.init, dt, w.Shape(), err)
			}
			v := w.Float64s()
			mean, sq, maxAbs := 0.0, 0.0, 0.0
			for _, x := range v {
				mean += x
				maxAbs = math.Max(maxAbs, math.Abs(x))
			}
			mean /= n
			for _, x := range v {
				sq += (x - mean) * (x - mean)
			}
			std := math.Sqrt(sq / (n - 1))

			// The sample mean's standard error is std/sqrt(n); allow 5 of them.
			if lim := 5 * c.std / math.Sqrt(n); math.Abs(mean) > lim {
				t.Errorf("%s %v [%d %d]: mean = %.3g, want 0 ± %.3g", c.init, dt, fanOut, fanIn, mean, lim)
			}
			if rel := math.Abs(std/c.std - 1); rel > 0.02 {
				t.Errorf("%s %v [%d %d]: std = %.6g, want %.6g (off by %.2f%%)", c.init, dt, fanOut, fanIn, std, c.std, 100*rel)
			}
			if c.bound > 0 {
				if maxAbs > c.bound {
					t.Errorf("%s %v: max |w| = %v, want <= bound %v", c.init, dt, maxAbs, c.bound)
				}
				if maxAbs < 0.99*c.bound {
					t.Errorf("%s %v: max |w| = %v, want close to bound %v: the range is too narrow", c.init, dt, maxAbs, c.bound)
				}
			} else if maxAbs < 3*c.std {
				t.Errorf("%s %v: max |w| = %v, want tails past 3 std = %v", c.init, dt, maxAbs, 3*c.std)
			}
		}
	}
}

func TestInitSeeded(t *testing.T) {
	for _, init := range nn.Inits {
		a := mustLinear(t, tensor.Float32, 20, 10, init, 5)
		b := mustLinear(t, tensor.Float32, 20, 10, init, 5)
		c := mustLinear(t, tensor.Float32, 20, 10, init, 6)
		if !sameBits(a.W, b.W) {
			t.Errorf("%s: two layers from seed 5 differ", init)
		}
		if sameBits(a.W, c.W) {
			t.Errorf("%s: layers from seeds 5 and 6 are equal", init)
		}
		if z := tensor.Zeros(tensor.Float32, 10); init != nn.TorchDefault && !sameBits(a.B, z) {
			t.Errorf("%s: bias = %v, want zeros", init, a.B)
		}
		if !sameBits(a.B, b.B) {
			t.Errorf("%s: two layers from seed 5 have different biases", init)
		}
		if got := a.W.Shape(); !tensor.EqualShapes(got, []int{10, 20}) {
			t.Errorf("%s: NewLinear(in=20, out=10) weight shape = %v, want [10 20] (PyTorch's [out, in])", init, got)
		}
	}
}

func TestInitErrors(t *testing.T) {
	for _, c := range []struct {
		init  nn.Init
		shape []int
		want  string
	}{
		{"orthogonal", []int{3, 4}, "unknown init"},
		{"", []int{3, 4}, "unknown init"},
		{"He_Normal", []int{3, 4}, "unknown init"},
		{nn.HeNormal, []int{12}, "2-D"},
		{nn.XavierUniform, []int{2, 3, 4}, "2-D"},
	} {
		err := c.init.Fill(tensor.Zeros(tensor.Float64, c.shape...), newRNG(1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Init(%q).Fill(shape %v): got error %v, want one containing %q", string(c.init), c.shape, err, c.want)
		}
	}
	if _, err := nn.NewLinear(tensor.Float64, 3, 4, "bogus", newRNG(1)); err == nil {
		t.Errorf("NewLinear with init %q: got nil error, want one", "bogus")
	}
}

// TestLinearBiasInit: torch_default draws the bias from U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) after the weight, from the same stream, as torch.nn.Linear
// does; the other inits leave it at zero.
func TestLinearBiasInit(t *testing.T) {
	for _, init := range nn.Inits {
		l, err := nn.NewLinear(tensor.Float64, 400, 300, init, newRNG(5))
		if err != nil {
			t.Fatal(err)
		}
		b := l.B.Float64s()
		maxAbs := 0.0
		for _, v := range b {
			maxAbs = math.Max(maxAbs, math.Abs(v))
		}
		if init != nn.TorchDefault {
			if maxAbs != 0 {
				t.Errorf("%s: bias max |b| = %v, want zeros", init, maxAbs)
			}
			continue
		}
		if bound := 1 / math.Sqrt(400); maxAbs > bound || maxAbs < 0.9*bound {
			t.Errorf("%s: bias max |b| = %v, want within and near %v", init, maxAbs, bound)
		}
		// the weight is drawn first: the same stream gives the same weight as Fill alone
		w := tensor.Zeros(tensor.Float64, 300, 400)
		if err := init.Fill(w, newRNG(5)); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w.Float64s(), l.W.Float64s()) {
			t.Errorf("%s: the weight depends on the bias draw", init)
		}
	}
}
