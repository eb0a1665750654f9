package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpShifted64 checks ExpShifted64 against math.Exp bit for bit: on
// random arguments over the whole range, on the edges of the assembly's
// range and beyond (subnormal results, overflow, ±Inf, NaN), at every
// length about a vector's 8, and with shifts that move arguments out of
// the range.
func TestExpShifted64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float32{0, float32(math.Copysign(0, -1)), -708, -708.0001, -707.9999, 700, 700.0001, -745, -746, -800, 709, 710,
		float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.NaN()), math.SmallestNonzeroFloat32, -1e-30, 1e-30}
	check := func(x []float32, m float64) {
		t.Helper()
		dst := make([]float64, len(x))
		ExpShifted64(dst, x, m)
		for i, v := range x {
			want := math.Exp(float64(v) - m)
			if math.Float64bits(dst[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(dst[i])) {
				t.Fatalf("x[%d] = %v, m = %v: got %v (%#x), math.Exp gives %v (%#x)", i, v, m, dst[i], math.Float64bits(dst[i]), want, math.Float64bits(want))
			}
		}
	}
	for n := range 40 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*40 - 30)
		}
		check(x, 0)
	}
	for range 200 {
		x := make([]float32, 1000+rng.IntN(64))
		for i := range x {
			switch rng.IntN(8) {
			case 0:
				x[i] = special[rng.IntN(len(special))]
			case 1:
				x[i] = float32(rng.Float64()*1500 - 800) // the whole range, and past it
			default:
				x[i] = float32(rng.NormFloat64() * 10) // logits
			}
		}
		check(x, []float64{0, 3.5, -20, 1e3, math.Inf(1)}[rng.IntN(5)])
	}
	// every float32 in [-16, 16] at a stride, shifted as a softmax's row max
	var x []float32
	for b := math.Float32bits(-16); b > 1<<31; b -= 997 { // down to -0
		x = append(x, math.Float32frombits(b))
	}
	check(x, 0)
	check(x, 2.75)
}

func BenchmarkExpShifted64(b *testing.B) {
	x := make([]float32, 50257)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 3)
	}
	dst := make([]float64, len(x))
	b.Run("asm", func(b *testing.B) {
		for range b.N {
			ExpShifted64(dst, x, 12)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		for range b.N {
			for i, v := range x {
				dst[i] = math.Exp(float64(v) - 12)
			}
		}
	})
}
