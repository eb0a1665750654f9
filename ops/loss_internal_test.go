package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// ceRef is the cross-entropy of float32 logits as the float64 loop of
// Run computes it, one math.Max and one math.Exp an element: the bits the
// vectorised run32 must give.
func ceRef(logits []float32, c int, labels []int, scale float64) (grad []float32, losses []float64) {
	grad = make([]float32, len(logits))
	row, ex := make([]float64, c), make([]float64, c)
	for i, y := range labels {
		for j, v := range logits[i*c : (i+1)*c] {
			row[j] = float64(v)
		}
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		if math.IsInf(m, -1) {
			m = 0
		}
		sum := 0.0
		for j, v := range row {
			ex[j] = math.Exp(v - m)
			sum += ex[j]
		}
		losses = append(losses, row[y]-m-math.Log(sum))
		for j := range row {
			p := ex[j] / sum
			if j == y {
				p--
			}
			grad[i*c+j] = float32(p * scale)
		}
	}
	return grad, losses
}

func same64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// TestCrossEntropy32Bits checks the float32 cross-entropy against ceRef bit
// for bit: logits of a language model's spread, rows with special values
// (±Inf, NaN, ±0, all -Inf, huge), and widths about the exponentials' 8.
func TestCrossEntropy32Bits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)), -1e30, 1e30, -800, 750}
	for _, c := range []int{1, 7, 8, 9, 65, 1000, 50257} {
		rows := max(2, 20000/c)
		logits := make([]float32, rows*c)
		labels := make([]int, rows)
		for i := range rows {
			for j := range c {
				logits[i*c+j] = float32(rng.NormFloat64() * 4)
			}
			labels[i] = rng.IntN(c)
			switch i % 6 {
			case 1: // a special value or two
				for range 1 + rng.IntN(2) {
					logits[i*c+rng.IntN(c)] = special[rng.IntN(len(special))]
				}
			case 2: // every logit -Inf
				for j := range c {
					logits[i*c+j] = float32(math.Inf(-1))
				}
			case 3: // zeros of both signs as the max
				for j := range c {
					logits[i*c+j] = -float32(rng.Float64())
				}
				logits[i*c+rng.IntN(c)] = float32(math.Copysign(0, -1))
				logits[i*c+rng.IntN(c)] = 0
			}
		}
		scale := 1 / float64(rows)
		wantGrad, wantLosses := ceRef(logits, c, labels, scale)
		want := 0.0
		for _, l := range wantLosses {
			want -= l
		}
		for _, threads := range []int{1, 2} {
			dst := tensor.Zeros(tensor.Float32, rows, c)
			got := CrossEntropySumInto(dst, tensor.FromFloat32s(logits, rows, c), labels, scale, 0, threads)
			if !same64(got, want) {
				t.Fatalf("width %d, %d threads: sum %v, want %v", c, threads, got, want)
			}
			for k, g := range dst.Data32() {
				if math.Float32bits(g) != math.Float32bits(wantGrad[k]) && !(g != g && wantGrad[k] != wantGrad[k]) {
					t.Fatalf("width %d, %d threads: gradient %d (row %d) %v, want %v", c, threads, k, k/c, g, wantGrad[k])
				}
			}
		}
	}
}

func TestMax32(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	for _, row := range [][]float32{
		{}, {1, 2, 3}, {negZero, 0}, {0, negZero}, {negZero, negZero}, {nan, 1}, {1, nan, inf}, {inf, nan},
		{float32(math.Inf(-1))}, {-3, -1, -2},
	} {
		want := math.Inf(-1)
		for _, v := range row {
			want = math.Max(want, float64(v))
		}
		if got := max32(row); !same64(got, want) {
			t.Errorf("max32(%v) = %v, math.Max's fold %v", row, got, want)
		}
	}
}
