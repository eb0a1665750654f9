package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxCausalBits: the float32 softmax, recomputed from its
// statistics too, and its backward, 8 floats at a time, give the bits of
// the scalar steps they replace.
func TestSoftmaxCausalBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for tt := 1; tt <= 67; tt++ {
		for n := 1; n <= tt; n += 1 + tt/7 {
			row, want := make([]float32, tt), make([]float32, tt)
			for i := range row {
				row[i] = float32(rng.NormFloat64() * 4)
			}
			copy(want, row)
			x := want[:n]
			shift(x, rowMax(x))
			expInPlace(x)
			inv := 1 / rowSum(x)
			for j, v := range x {
				x[j] = float32(float64(v) * inv)
			}
			clear(want[n:])
			got := append([]float32(nil), row...)
			m, inv := softmaxCausal(got, n)
			known := append([]float32(nil), row...)
			softmaxKnown(known, n, m, inv)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("softmax of %d of %d: element %d is %v, want %v", n, tt, i, got[i], want[i])
				}
				if math.Float32bits(known[i]) != math.Float32bits(want[i]) {
					t.Fatalf("softmax of %d of %d from its statistics: element %d is %v, want %v", n, tt, i, known[i], want[i])
				}
			}
			d := make([]float32, tt)
			for i := range d {
				d[i] = float32(rng.NormFloat64())
			}
			wantD := append([]float32(nil), d...)
			dot := rowDot(wantD[:n], want[:n])
			for j, v := range wantD[:n] {
				wantD[j] = float32(0.125 * float64(want[j]) * (float64(v) - dot))
			}
			clear(wantD[n:])
			softmaxCausalBackward(d, got, n, 0.125)
			for i := range d {
				if math.Float32bits(d[i]) != math.Float32bits(wantD[i]) {
					t.Fatalf("softmax backward of %d of %d: element %d is %v, want %v", n, tt, i, d[i], wantD[i])
				}
			}
		}
	}
}
