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
func TestLayerNormKernels(t *testing.T) { eachLNKernel(t, testLayerNormKernels) }

// eachLNKernel runs test on the AVX2 kernels, or the Go ones, and on the
// AVX-512 ones where the CPU has them.
func eachLNKernel(t *testing.T, test func(*testing.T)) {
	has := useAVX512LN
	defer func() { useAVX512LN = has }()
	for _, on := range []bool{false, true} {
		if on && !has {
			break
		}
		useAVX512LN = on
		t.Run(map[bool]string{false: "avx2", true: "avx512"}[on], test)
	}
}

func testLayerNormKernels(t *testing.T) {
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

			sum, wsum := append([]float32(nil), g...), append([]float32(nil), g...)
			LayerNormAddRounded(sum, gw)
			layerNormAddRoundedRef(wsum, gw)
			sameBits(t, "LayerNormAddRounded", sum, wsum)

			k, ff, sd, sx := rs/float64(n), float64(n), rng.NormFloat64()*5, rng.NormFloat64()*5
			LayerNormInputGrad(got, wxh, wdh, k, ff, sd, sx)
			layerNormInputGradRef(want, wxh, wdh, k, ff, sd, sx)
			sameBits(t, "LayerNormInputGrad", got, want)
		}
	}
}

// TestLayerNormStats: LayerNormStats gives the bits of a plain loop a row
// at a time, at every width to 70 and a GPT's.
func TestLayerNormStats(t *testing.T) { eachLNKernel(t, testLayerNormStats) }

func testLayerNormStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, f := range lnWidths() {
		for c := range 3 {
			x := make([]float32, LayerNormRows*f+5)
			for i := range x {
				x[i] = float32(rng.NormFloat64()*2 + float64(i/f))
				if c == 2 && rng.IntN(50) == 0 {
					x[i] = []float32{float32(math.Inf(1)), 3e38, -1e-40, 0}[rng.IntN(4)]
				}
			}
			var m, q [LayerNormRows]float64
			LayerNormStats(x, f, make([]float64, LayerNormRows*f), &m, &q)
			for k := range LayerNormRows {
				var s, d float64
				for _, v := range x[k*f : (k+1)*f] {
					s += float64(v)
				}
				wm := s / float64(f)
				for _, v := range x[k*f : (k+1)*f] {
					d += (float64(v) - wm) * (float64(v) - wm)
				}
				sameBits64(t, "LayerNormStats mean", m[k:k+1], []float64{wm})
				sameBits64(t, "LayerNormStats squared deviations", q[k:k+1], []float64{d})
			}
		}
	}
}

// TestLayerNormGradSums: LayerNormGradSums gives the bits of a plain loop
// a row at a time.
func TestLayerNormGradSums(t *testing.T) { eachLNKernel(t, testLayerNormGradSums) }

func testLayerNormGradSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, f := range lnWidths() {
		for _, stride := range []int{f, 2*f + 3} {
			xh, dh := randF64(rng, LayerNormGradRows*stride, 3), randF64(rng, LayerNormGradRows*stride, 1)
			if f%5 == 0 {
				dh[rng.IntN(len(dh))] = math.Inf(-1)
				xh[rng.IntN(len(xh))] = 1e300
			}
			var sd, sx [LayerNormGradRows]float64
			LayerNormGradSums(xh, dh, stride, f, &sd, &sx)
			for k := range LayerNormGradRows {
				var d, x float64
				for j := range f {
					d += dh[k*stride+j]
					x += dh[k*stride+j] * xh[k*stride+j]
				}
				sameBits64(t, "LayerNormGradSums sd", sd[k:k+1], []float64{d})
				sameBits64(t, "LayerNormGradSums sx", sx[k:k+1], []float64{x})
			}
		}
	}
}

// TestLayerNormRowGrads: LayerNormRowGrads gives the bits of
// layerNormRowGradRef a row after the other.
func TestLayerNormRowGrads(t *testing.T) { eachLNKernel(t, testLayerNormRowGrads) }

func testLayerNormRowGrads(t *testing.T) {
	const r = LayerNormGradRows
	rng := rand.New(rand.NewPCG(13, 14))
	for _, f := range lnWidths() {
		x, g := make([]float32, r*f), make([]float32, r*f)
		for i := range x {
			x[i], g[i] = float32(rng.NormFloat64()*2+1), float32(rng.NormFloat64())
		}
		if f%7 == 0 {
			x[rng.IntN(len(x))], g[rng.IntN(len(g))] = float32(math.Inf(1)), 1e-40
		}
		w, gwb := randF64(rng, f, 1), randF64(rng, 2*f, 3)
		var m, rs [r]float64
		for k := range r {
			m[k], rs[k] = rng.NormFloat64(), math.Abs(rng.NormFloat64())+0.1
		}
		tmp, wtmp, wgwb := randF64(rng, 2*r*f, 1), make([]float64, 2*r*f), append([]float64(nil), gwb...)
		LayerNormRowGrads(tmp, gwb, x, g, w, f, &m, &rs)
		for k := range r {
			layerNormRowGradRef(wtmp[2*k*f:(2*k+1)*f], wtmp[(2*k+1)*f:(2*k+2)*f], wgwb[:f], wgwb[f:], x[k*f:(k+1)*f], g[k*f:(k+1)*f], w, m[k], rs[k])
		}
		sameBits64(t, "LayerNormRowGrads xh and dh", tmp, wtmp)
		sameBits64(t, "LayerNormRowGrads gw and gb", gwb, wgwb)
	}
}

// lnWidths returns the row widths the layer-norm tests take: all to 70,
// and a GPT's.
func lnWidths() []int {
	widths := []int{128, 384, 768}
	for f := 1; f <= 70; f++ {
		widths = append(widths, f)
	}
	return widths
}

// TestLayerNormManyRows: LayerNormOuts and LayerNormInputGrads give the
// bits of their one-row references a row after the other.
func TestLayerNormManyRows(t *testing.T) { eachLNKernel(t, testLayerNormManyRows) }

func testLayerNormManyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, f := range lnWidths() {
		for _, rows := range []int{1, 3, 8, 16} {
			x := make([]float32, rows*f)
			for i := range x {
				x[i] = float32(rng.NormFloat64()*2 + 1)
			}
			if f%9 == 0 {
				x[rng.IntN(len(x))] = float32(math.Inf(-1))
			}
			w, b := randF64(rng, f, 1), randF64(rng, f, 1)
			m, rs, sd, sx := randF64(rng, rows, 1), randF64(rng, rows, 1), randF64(rng, rows, 9), randF64(rng, rows, 9)
			got, want := make([]float32, rows*f), make([]float32, rows*f)
			LayerNormOuts(got, x, w, b, f, m, rs)
			for k := range rows {
				layerNormOutRef(want[k*f:(k+1)*f], x[k*f:(k+1)*f], w, b, m[k], rs[k])
			}
			sameBits(t, "LayerNormOuts", got, want)

			tmp := randF64(rng, 2*rows*f, 2)
			LayerNormInputGrads(got, tmp, f, rs, sd, sx)
			for r := range rows {
				layerNormInputGradRef(want[r*f:(r+1)*f], tmp[2*r*f:(2*r+1)*f], tmp[(2*r+1)*f:(2*r+2)*f], rs[r], float64(f), sd[r], sx[r])
			}
			sameBits(t, "LayerNormInputGrads", got, want)
		}
	}
}
