package tensor

import "math/rand/v2"

// FillUniform draws every element from U[lo, hi) using rng, in row-major order.
func (t *Tensor) FillUniform(rng *rand.Rand, lo, hi float64) {
	if t.dtype == Float32 {
		for i := range t.f32 {
			t.f32[i] = float32(lo + (hi-lo)*rng.Float64())
		}
		return
	}
	for i := range t.f64 {
		t.f64[i] = lo + (hi-lo)*rng.Float64()
	}
}

// FillNormal draws every element from N(mean, std²) using rng, in row-major order.
func (t *Tensor) FillNormal(rng *rand.Rand, mean, std float64) {
	if t.dtype == Float32 {
		for i := range t.f32 {
			t.f32[i] = float32(mean + std*rng.NormFloat64())
		}
		return
	}
	for i := range t.f64 {
		t.f64[i] = mean + std*rng.NormFloat64()
	}
}

// RandUniform returns a tensor with elements drawn from U[lo, hi) using rng.
func RandUniform(rng *rand.Rand, dt DType, lo, hi float64, shape ...int) *Tensor {
	t := Zeros(dt, shape...)
	t.FillUniform(rng, lo, hi)
	return t
}

// RandNormal returns a tensor with elements drawn from N(mean, std²) using rng.
func RandNormal(rng *rand.Rand, dt DType, mean, std float64, shape ...int) *Tensor {
	t := Zeros(dt, shape...)
	t.FillNormal(rng, mean, std)
	return t
}
