package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestCrossEntropyIntoMatchesTheTwoOps checks that the fused training loss
// gives exactly the bits of CrossEntropy and CrossEntropyBackward.
func TestCrossEntropyIntoMatchesTheTwoOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	special := []float64{0, math.Copysign(0, -1), 1e30, -1e30, 88, -104, math.Inf(-1), math.NaN()}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, c := range []struct {
			n, classes int
			scale      float64
			specials   bool
		}{{1, 1, 1, false}, {4, 3, 0.25, false}, {128, 10, 1, false}, {32, 10, 0.3333333333, true}, {5, 100, 0.7, false}, {0, 10, 1, false}} {
			t.Run(fmt.Sprintf("%v/%dx%d/scale=%g/specials=%v", dt, c.n, c.classes, c.scale, c.specials), func(t *testing.T) {
				logits := tensor.RandNormal(rng, dt, 0, 3, c.n, c.classes)
				if c.specials {
					for i, v := range special {
						logits.Set(v, i%c.n, (i*3)%c.classes)
					}
				}
				labels := make([]int, c.n)
				for i := range labels {
					labels[i] = rng.IntN(c.classes)
				}
				wantLoss := ops.CrossEntropy(logits, labels).Item()
				wantGrad := ops.CrossEntropyBackward(tensor.Full(dt, c.scale), logits, labels)
				dst := tensor.Full(dt, math.NaN(), c.n, c.classes) // every element must be written
				gotLoss := ops.CrossEntropyInto(dst, logits, labels, c.scale)
				if math.Float64bits(gotLoss) != math.Float64bits(wantLoss) && !(math.IsNaN(gotLoss) && math.IsNaN(wantLoss)) {
					t.Errorf("loss: got %v, want %v", gotLoss, wantLoss)
				}
				g, w := dst.Float64s(), wantGrad.Float64s()
				for i := range w {
					if math.Float64bits(g[i]) != math.Float64bits(w[i]) && !(math.IsNaN(g[i]) && math.IsNaN(w[i])) {
						t.Fatalf("grad[%d]: got %v, want %v", i, g[i], w[i])
					}
				}
			})
		}
	}
}

// TestCrossEntropySumIntoThreads checks that the row-parallel loss gives, on
// any number of goroutines and over blocks of rows, the bits of the rows fed
// one call at a time, the sum carried from each to the next, and the
// gradient of CrossEntropyBackward; and that it allocates nothing.
func TestCrossEntropySumIntoThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, c := range []struct{ n, classes int }{{1, 10}, {128, 10}, {300, 3}, {600, 65}, {70, 130}} {
			t.Run(fmt.Sprintf("%v/%dx%d", dt, c.n, c.classes), func(t *testing.T) {
				logits := tensor.RandNormal(rng, dt, 0, 3, c.n, c.classes)
				labels := make([]int, c.n)
				for i := range labels {
					labels[i] = rng.IntN(c.classes)
				}
				scale := 1 / float64(c.n)
				want := tensor.Zeros(dt, c.n, c.classes)
				wantSum := 0.25 // carried in from an earlier part
				for i := range c.n {
					wantSum = ops.CrossEntropySumInto(rowView(want, i), rowView(logits, i), labels[i:i+1], scale, wantSum, 1)
				}
				wantGrad := ops.CrossEntropyBackward(tensor.Full(dt, 1), logits, labels).Float64s() // the mean's gradient: scale = 1/n
				for _, threads := range []int{1, 2, 4} {
					dst := tensor.Full(dt, math.NaN(), c.n, c.classes) // every element must be written
					got := ops.CrossEntropySumInto(dst, logits, labels, scale, 0.25, threads)
					if math.Float64bits(got) != math.Float64bits(wantSum) {
						t.Errorf("threads=%d: sum %v, one row at a time %v", threads, got, wantSum)
					}
					g, w := dst.Float64s(), want.Float64s()
					for i := range w {
						if math.Float64bits(g[i]) != math.Float64bits(w[i]) || math.Float64bits(g[i]) != math.Float64bits(wantGrad[i]) {
							t.Fatalf("threads=%d: grad[%d] = %v, one row at a time %v, CrossEntropyBackward %v", threads, i, g[i], w[i], wantGrad[i])
						}
					}
				}
				if c.classes <= 128 {
					dst := tensor.Zeros(dt, c.n, c.classes)
					if a := testing.AllocsPerRun(10, func() { ops.CrossEntropySumInto(dst, logits, labels, scale, 0, 2) }); a > 0 {
						t.Errorf("%v allocations a call, want 0", a)
					}
				}
			})
		}
	}
}

// rowView is row i of the matrix x, sharing its storage.
func rowView(x *tensor.Tensor, i int) *tensor.Tensor {
	c := x.Dim(1)
	if x.DType() == tensor.Float32 {
		return tensor.Wrap32(x.Data32()[i*c:(i+1)*c], 1, c)
	}
	return tensor.Wrap64(x.Data64()[i*c:(i+1)*c], 1, c)
}

func TestCrossEntropyIntoErrors(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 3)
	for _, c := range []struct {
		name   string
		dst    *tensor.Tensor
		labels []int
		want   string
	}{
		{"dst shape", tensor.Zeros(tensor.Float32, 3, 2), []int{0, 1}, "ops.CrossEntropyInto: destination and inputs differ"},
		{"dst dtype", tensor.Zeros(tensor.Float64, 2, 3), []int{0, 1}, "ops.CrossEntropyInto: destination and inputs differ"},
		{"labels", tensor.Zeros(tensor.Float32, 2, 3), []int{0}, "ops.CrossEntropyInto: 1 labels for logits shape [2 3]"},
		{"label range", tensor.Zeros(tensor.Float32, 2, 3), []int{0, 3}, "ops.CrossEntropyInto: label 3 at row 1 is outside [0, 3)"},
	} {
		got := panicMessage(func() { ops.CrossEntropyInto(c.dst, x, c.labels, 1) })
		if len(got) < len(c.want) || got[:len(c.want)] != c.want {
			t.Errorf("%s: got panic %q, want it to start %q", c.name, got, c.want)
		}
	}
}

func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// TestMatMulInto checks the destination form against MatMul, including batched
// and broadcast shapes, and that it rejects a destination of the wrong shape.
func TestMatMulInto(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ a, b []int }{{[]int{3, 5}, []int{5, 4}}, {[]int{2, 3, 5}, []int{5, 4}}, {[]int{7}, []int{7, 2}}, {[]int{4, 1, 2, 3}, []int{5, 3, 2}}} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			a := tensor.RandNormal(rng, dt, 0, 1, c.a...)
			b := tensor.RandNormal(rng, dt, 0, 1, c.b...)
			want := ops.MatMul(a, b)
			dst := tensor.Full(dt, math.NaN(), want.Shape()...)
			if got := ops.MatMulInto(dst, a, b); got != dst || !sameBitsT(got, want) {
				t.Errorf("%v %v@%v: MatMulInto differs from MatMul", dt, c.a, c.b)
			}
		}
	}
	a, b := tensor.Zeros(tensor.Float32, 2, 3), tensor.Zeros(tensor.Float32, 3, 4)
	for _, c := range []struct {
		dst  *tensor.Tensor
		want string
	}{
		{tensor.Zeros(tensor.Float32, 4, 2), "ops.MatMulInto: destination shape [4 2] is not the product shape [2 4]"},
		{tensor.Zeros(tensor.Float64, 2, 4), "ops.MatMulInto: dtypes float64, float32, float32 do not mix"},
	} {
		if got := panicMessage(func() { ops.MatMulInto(c.dst, a, b) }); len(got) < len(c.want) || got[:len(c.want)] != c.want {
			t.Errorf("got panic %q, want it to start %q", got, c.want)
		}
	}
}

func sameBitsT(a, b *tensor.Tensor) bool {
	x, y := a.Float64s(), b.Float64s()
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return false
		}
	}
	return true
}
