package nn_test

import (
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

func TestDropoutEvalPassesThrough(t *testing.T) {
	for _, p := range []float64{0, 0.5, 0.99} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			d := mustDropout(t, p, 1, 0)
			x := randN(newRNG(91), dt, 1, 4, 5)
			y := d.Forward(nn.Pass{Step: 1}, x)
			if !sameBits(y, x) {
				t.Errorf("Dropout(p=%v) eval %v: got %v, want the input %v", p, dt, y, x)
			}
			y.Set(100, 0, 0)
			if x.At(0, 0) == 100 {
				t.Errorf("Dropout(p=%v) eval returned its input, not a copy", p)
			}
			if d.InFlight() != 0 {
				t.Errorf("Dropout eval cached %d micro-batches, want 0", d.InFlight())
			}
		}
	}
}

// TestDropoutStatistics checks the fraction of zeros and the scaling of the
// survivors, so that the mean of the output matches the input's.
func TestDropoutStatistics(t *testing.T) {
	const rows, cols = 200, 250
	const n = rows * cols
	for _, p := range []float64{0, 0.1, 0.5, 0.8} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			d := mustDropout(t, p, 7, 3)
			x := tensor.Full(dt, 1, rows, cols)
			pass := nn.Pass{Step: 2, Micro: 1, Train: true}
			y := d.Forward(pass, x)
			scale := 1 / (1 - p)
			if dt == tensor.Float32 {
				scale = float64(float32(scale))
			}
			zeros, sum := 0, 0.0
			for _, v := range y.Float64s() {
				switch v {
				case 0:
					zeros++
				case scale:
				default:
					t.Fatalf("Dropout(p=%v) %v: element %v is neither 0 nor 1/(1-p) = %v", p, dt, v, scale)
				}
				sum += v
			}
			// Binomial: the zero count has std sqrt(n p (1-p)); allow 5 of them.
			frac := float64(zeros) / n
			if lim := 5 * math.Sqrt(p*(1-p)/n); math.Abs(frac-p) > lim {
				t.Errorf("Dropout(p=%v) %v: zeroed fraction %v, want %v ± %.3g", p, dt, frac, p, lim)
			}
			mean := sum / n
			if lim := 5 * math.Sqrt(p/(1-p)/n); math.Abs(mean-1) > lim+1e-6 {
				t.Errorf("Dropout(p=%v) %v: output mean %v, want the input mean 1 ± %.3g", p, dt, mean, lim)
			}
			// Backward uses the same mask.
			dy := tensor.Full(dt, 2, rows, cols)
			dx := d.Backward(pass, dy, true)
			yv, dxv := y.Float64s(), dx.Float64s()
			for i := range yv {
				if dxv[i] != 2*yv[i] {
					t.Fatalf("Dropout(p=%v) %v: dx[%d] = %v with dy 2 and y %v, want %v", p, dt, i, dxv[i], yv[i], 2*yv[i])
				}
			}
		}
	}
}

func dropoutMask(d *nn.Dropout, p nn.Pass) *tt {
	y := d.Forward(p, tensor.Full(tensor.Float64, 1, 16, 16))
	d.Reset()
	return y
}

// TestDropoutKeyedStreams checks that the mask of a row is a function of
// (seed, index, step, the row's index in the mini-batch) only: not of the
// micro-batch, its order, or where the mini-batch was cut.
func TestDropoutKeyedStreams(t *testing.T) {
	const seed, index = 11, 4
	base := nn.Pass{Step: 3, Micro: 1, Row: 32, Train: true}
	want := dropoutMask(mustDropout(t, 0.5, seed, index), base)

	// The same key in another order, and after other draws, gives the same mask.
	d := mustDropout(t, 0.5, seed, index)
	x := tensor.Full(tensor.Float64, 1, 16, 16)
	var got *tt
	for _, m := range []int{3, 2, 1, 0} {
		y := d.Forward(nn.Pass{Step: 3, Micro: m, Row: 32 * m, Train: true}, x)
		if m == 1 {
			got = y
		}
	}
	if !sameBits(got, want) {
		t.Errorf("mask of %+v after micro-batches 3 and 2: got %v, want %v", base, got, want)
	}
	if again := dropoutMask(d, base); !sameBits(again, want) {
		t.Errorf("mask of %+v drawn twice: got %v, want %v", base, again, want)
	}
	// Another micro-batch index with the same rows gives the same mask.
	if other := dropoutMask(d, nn.Pass{Step: 3, Micro: 5, Row: 32, Train: true}); !sameBits(other, want) {
		t.Errorf("mask of micro-batch 5 at row 32: got %v, want micro-batch 1's %v", other, want)
	}
	// The rows cut in two passes get the masks they get in one.
	half := tensor.Full(tensor.Float64, 1, 8, 16)
	top := d.Forward(nn.Pass{Step: 3, Micro: 1, Row: 32, Train: true}, half).Float64s()
	bottom := d.Forward(nn.Pass{Step: 3, Micro: 2, Row: 40, Train: true}, half).Float64s()
	d.Reset()
	for i, v := range append(top, bottom...) {
		if w := want.Float64s()[i]; math.Float64bits(v) != math.Float64bits(w) {
			t.Fatalf("rows 32-47 cut at row 40: element %d: got %v, want %v (one pass)", i, v, w)
		}
	}

	// Any change of key gives another mask.
	for _, c := range []struct {
		name             string
		seed             uint64
		index, step, row int
	}{
		{"first row", seed, index, 3, 0},
		{"first row", seed, index, 3, 33},
		{"step", seed, index, 4, 32},
		{"step", seed, index, 2, 32},
		{"layer index", seed, index + 1, 3, 32},
		{"layer index", seed, 0, 3, 32},
		{"seed", seed + 1, index, 3, 32},
	} {
		p := nn.Pass{Step: c.step, Micro: 1, Row: c.row, Train: true}
		other := dropoutMask(mustDropout(t, 0.5, c.seed, c.index), p)
		if sameBits(other, want) {
			t.Errorf("another %s (seed %d, index %d, %+v) gives the mask of seed %d, index %d, %+v", c.name, c.seed, c.index, p, seed, index, base)
		}
	}

	// float32 and float64 layers drop the same elements.
	y32 := d.Forward(base, tensor.Full(tensor.Float32, 1, 16, 16))
	for i, v := range y32.Float64s() {
		if (v == 0) != (want.Float64s()[i] == 0) {
			t.Fatalf("float32 and float64 masks differ at element %d", i)
		}
	}
}

func TestDropoutInvalidP(t *testing.T) {
	for _, p := range []float64{-0.1, 1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if d, err := nn.NewDropout(p, 1, 0); err == nil {
			t.Errorf("NewDropout(%v): got %+v, nil error, want an error", p, d)
		}
	}
	for _, p := range []float64{0, 0.5, 0.999} {
		if _, err := nn.NewDropout(p, 1, 0); err != nil {
			t.Errorf("NewDropout(%v): got error %v, want nil", p, err)
		}
	}
}
