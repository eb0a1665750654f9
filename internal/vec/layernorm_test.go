package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits64 is sameBits for float64, any NaN matching any NaN.
func sameBits64(t *testing.T, name string, got, want []float64) {
	t.Helper()
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s: [%d] of %d = %v, want %v", name, i, len(got), got[i], want[i])
		}
	}
}

func randF64(rng *rand.Rand, n int, std float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = rng.NormFloat64() * std
	}
	return s
}

// TestLayerNormKernels: the layer-norm kernels give their references' bits
// at every length up to 70 and past, specials included.
func TestLayerNormKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	rows := softmaxRows()
	for _, n := range []int{128, 131, 384, 768} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()*3 + 1)
		}
		rows = append(rows, x)
	}
	for _, x := range rows {
		n := len(x)
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(rng.NormFloat64())
		}
		w, b := randF64(rng, n+3, 1), randF64(rng, n+3, 1)
		for _, c := range [][2]float64{{0.3, 1.7}, {-2, 1e-3}, {0, math.Inf(1)}, {1e30, 1e-300}} {
			m, rs := c[0], c[1]
			got, want := make([]float32, n), make([]float32, n)
			LayerNormOut(got, x, w, b, m, rs)
			layerNormOutRef(want, x, w, b, m, rs)
			sameBits(t, "LayerNormOut", got, want)

			gw0, gb0 := randF64(rng, n, 2), randF64(rng, n, 2)
			xh, dh, gw, gb := make([]float64, n+1), make([]float64, n+2), append([]float64(nil), gw0...), append([]float64(nil), gb0...)
			LayerNormRowGrad(xh, dh, gw, gb, x, g, w, m, rs)
			wxh, wdh, wgw, wgb := make([]float64, n+1), make([]float64, n+2), gw0, gb0
			layerNormRowGradRef(wxh, wdh, wgw, wgb, x, g, w, m, rs)
			for k, p := range [][2][]float64{{xh, wxh}, {dh, wdh}, {gw, wgw}, {gb, wgb}} {
				sameBits64(t, []string{"LayerNormRowGrad xh", "dh", "gw", "gb"}[k], p[0], p[1])
			}

			k, ff, sd, sx := rs/float64(n), float64(n), rng.NormFloat64()*5, rng.NormFloat64()*5
			LayerNormInputGrad(got, wxh, wdh, k, ff, sd, sx)
			layerNormInputGradRef(want, wxh, wdh, k, ff, sd, sx)
			sameBits(t, "LayerNormInputGrad", got, want)
		}
	}
}
