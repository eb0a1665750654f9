package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxRows returns rows of every length up to 70 with specials mixed in.
func softmaxRows() [][]float32 {
	rng := rand.New(rand.NewPCG(5, 6))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -3e38, 3e38}
	var rows [][]float32
	for n := 1; n <= 70; n++ {
		for k := range 4 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 10)
				if k > 1 && rng.IntN(5) == 0 {
					x[i] = specials[rng.IntN(len(specials))]
				}
			}
			rows = append(rows, x)
		}
	}
	return rows
}

// TestSoftmaxKernels: Max finds the reference's largest value (a zero of
// either sign where that is one), ScaleF64 and SoftmaxGrad give its bits.
func TestSoftmaxKernels(t *testing.T) {
	for _, x := range softmaxRows() {
		if got, want := Max(x), maxRef(x); got != want {
			t.Errorf("Max(%v) = %v, want %v", x, got, want)
		}
		y := make([]float32, len(x))
		for i := range y {
			y[i] = float32(math.Abs(float64(x[len(x)-1-i]))) / 7
		}
		for _, c := range []float64{1.0 / 3, 1e-300, -2.5} {
			a, b := append([]float32(nil), x...), append([]float32(nil), x...)
			ScaleF64(a, c)
			scaleF64Ref(b, c)
			sameBits(t, "ScaleF64", a, b)
			a, b = append([]float32(nil), x...), append([]float32(nil), x...)
			SoftmaxGrad(a, y, c, 0.37)
			softmaxGradRef(b, y, c, 0.37)
			sameBits(t, "SoftmaxGrad", a, b)
		}
	}
	nan := []float32{1, 2, float32(math.NaN()), 3, 4, 5, 6, 7, 8}
	if m := Max(nan); !(m >= 8 || m != m) {
		t.Errorf("Max(%v) = %v, want 8 or a NaN", nan, m)
	}
}

func sameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s: element %d of %d: %v, want %v", name, i, len(got), got[i], want[i])
		}
	}
}
