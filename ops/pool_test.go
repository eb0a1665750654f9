package ops_test

// Pooling: finite-difference checks in float64, forward and backward against
// naive loops and by hand, ties and NaN in max pooling, empty inputs; and, for
// pooling and batch norm both, float32/float64 agreement and errors.

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// poolCases cover kernel 2 and 3, stride 1, 2 and 3, overlapping windows,
// non-square inputs, rows and columns no window reaches, C > 1, N = 1 and 2.
var poolCases = []struct {
	shape          []int
	kernel, stride int
}{
	{[]int{1, 1, 4, 4}, 2, 2},
	{[]int{1, 1, 4, 5}, 2, 1},
	{[]int{2, 3, 5, 4}, 3, 1},
	{[]int{2, 2, 7, 6}, 3, 2},
	{[]int{1, 2, 5, 7}, 2, 2},
	{[]int{2, 1, 3, 3}, 3, 3},
	{[]int{1, 3, 6, 3}, 2, 3},
	{[]int{2, 2, 4, 3}, 1, 1},
}

// refPool pools x, [N C H W], with naive loops: max (first maximum, or first
// NaN) or mean per window, and the argmax of each window.
func refPool(x []float64, shape []int, k, s int, isMax bool) (out []float64, arg []int) {
	n, c, h, w := shape[0], shape[1], shape[2], shape[3]
	oh, ow := (h-k)/s+1, (w-k)/s+1
	for b := range n {
		for ch := range c {
			for i := range oh {
				for j := range ow {
					best, bi, sum := math.Inf(-1), -1, 0.0
					for r := range k {
						for q := range k {
							idx := ((b*c+ch)*h+i*s+r)*w + j*s + q
							v := x[idx]
							sum += v
							if bi < 0 || (!math.IsNaN(best) && (v > best || math.IsNaN(v))) {
								best, bi = v, idx
							}
						}
					}
					if isMax {
						out = append(out, best)
					} else {
						out = append(out, sum/float64(k*k))
					}
					arg = append(arg, bi)
				}
			}
		}
	}
	return out, arg
}

func TestGradMaxPool2d(t *testing.T) {
	rng := newRNG(60)
	for _, c := range poolCases {
		opstest.CheckGrad(t, gradName("MaxPool2d", c.shape, "kernel", c.kernel, "stride", c.stride), in(randDistinct(rng, c.shape...)),
			func(x []*tt) *tt { return ops.MaxPool2d(x[0], c.kernel, c.stride) },
			func(g *tt, x []*tt, _ *tt) []*tt { return in(ops.MaxPool2dBackward(g, x[0], c.kernel, c.stride)) },
			gradTol)
	}
}

func TestGradAvgPool2d(t *testing.T) {
	rng := newRNG(61)
	for _, c := range poolCases {
		opstest.CheckGrad(t, gradName("AvgPool2d", c.shape, "kernel", c.kernel, "stride", c.stride), in(randN(rng, 1, c.shape...)),
			func(x []*tt) *tt { return ops.AvgPool2d(x[0], c.kernel, c.stride) },
			func(g *tt, x []*tt, _ *tt) []*tt {
				return in(ops.AvgPool2dBackward(g, x[0].Shape(), c.kernel, c.stride))
			},
			gradTol)
	}
}

func TestPoolAgainstNaiveLoops(t *testing.T) {
	rng := newRNG(63)
	for _, c := range poolCases {
		x := randN(rng, 1, c.shape...)
		x.Data64()[0] = nan // one window at least holds a NaN
		g := randN(rng, 1, ops.MaxPool2d(x, c.kernel, c.stride).Shape()...)
		for _, max := range []bool{true, false} {
			want, arg := refPool(x.Float64s(), c.shape, c.kernel, c.stride, max)
			wantGrad := make([]float64, x.Size())
			for o, gv := range g.Float64s() {
				if max {
					wantGrad[arg[o]] += gv
					continue
				}
				_, idx := refWindow(c.shape, c.kernel, c.stride, o)
				for _, i := range idx {
					wantGrad[i] += gv / float64(c.kernel*c.kernel)
				}
			}
			desc := fmt.Sprintf("%v kernel %d stride %d", c.shape, c.kernel, c.stride)
			if max {
				checkT(t, "MaxPool2d "+desc, ops.MaxPool2d(x, c.kernel, c.stride), g.Shape(), want, 0)
				checkT(t, "MaxPool2dBackward "+desc, ops.MaxPool2dBackward(g, x, c.kernel, c.stride), c.shape, wantGrad, 1e-12)
			} else {
				checkT(t, "AvgPool2d "+desc, ops.AvgPool2d(x, c.kernel, c.stride), g.Shape(), want, 1e-12)
				checkT(t, "AvgPool2dBackward "+desc, ops.AvgPool2dBackward(g, c.shape, c.kernel, c.stride), c.shape, wantGrad, 1e-12)
			}
		}
	}
}

// refWindow returns the input offsets of output element o's window.
func refWindow(shape []int, k, s, o int) (int, []int) {
	h, w := shape[2], shape[3]
	oh, ow := (h-k)/s+1, (w-k)/s+1
	plane, i, j := o/(oh*ow), o/ow%oh, o%ow
	var idx []int
	for r := range k {
		for q := range k {
			idx = append(idx, (plane*h+i*s+r)*w+j*s+q)
		}
	}
	return plane, idx
}

func TestEdgePoolByHand(t *testing.T) {
	// 1..12 in a 3×4 plane, kernel 2 stride 2: the last row is left out.
	x := arange(1, 1, 3, 4)
	checkT(t, "AvgPool2d 3×4 k2 s2", ops.AvgPool2d(x, 2, 2), sh(1, 1, 1, 2), []float64{3.5, 5.5}, 0)
	checkT(t, "MaxPool2d 3×4 k2 s2", ops.MaxPool2d(x, 2, 2), sh(1, 1, 1, 2), []float64{6, 8}, 0)
	checkT(t, "AvgPool2dBackward 3×4 k2 s2", ops.AvgPool2dBackward(mk(sh(1, 1, 1, 2), 4, 8), sh(1, 1, 3, 4), 2, 2),
		sh(1, 1, 3, 4), []float64{1, 1, 2, 2, 1, 1, 2, 2, 0, 0, 0, 0}, 0)
	checkT(t, "MaxPool2dBackward 3×4 k2 s2", ops.MaxPool2dBackward(mk(sh(1, 1, 1, 2), 4, 8), x, 2, 2),
		sh(1, 1, 3, 4), []float64{0, 0, 0, 0, 0, 4, 0, 8, 0, 0, 0, 0}, 0)
	// Overlapping windows accumulate: each inner element is in four windows.
	checkT(t, "AvgPool2dBackward 3×3 k2 s1", ops.AvgPool2dBackward(mk(sh(1, 1, 2, 2), 4, 4, 4, 4), sh(1, 1, 3, 3), 2, 1),
		sh(1, 1, 3, 3), []float64{1, 2, 1, 2, 4, 2, 1, 2, 1}, 0)
	center := mk(sh(1, 1, 3, 3), 0, 0, 0, 0, 9, 0, 0, 0, 0)
	checkT(t, "MaxPool2dBackward 3×3 k2 s1, one maximum in every window",
		ops.MaxPool2dBackward(mk(sh(1, 1, 2, 2), 1, 2, 3, 4), center, 2, 1), sh(1, 1, 3, 3), []float64{0, 0, 0, 0, 10, 0, 0, 0, 0}, 0)
}

func TestEdgeMaxPoolTiesAndNaN(t *testing.T) {
	cases := []struct {
		desc           string
		x              *tt
		kernel, stride int
		grad           []float64
		out, gx        []float64
	}{
		// The whole gradient goes to the first maximum in row-major order.
		{"ties k2 s2", mk(sh(1, 1, 2, 4), 1, 3, 3, 0, 3, 2, 0, 3), 2, 2,
			[]float64{5, 7}, []float64{3, 3}, []float64{0, 5, 7, 0, 0, 0, 0, 0}},
		// Equal everywhere, overlapping: each window's first maximum is its corner.
		{"all equal k2 s1", mk(sh(1, 1, 3, 3), repeat(2, 9)...), 2, 1,
			[]float64{1, 2, 3, 4}, []float64{2, 2, 2, 2}, []float64{1, 2, 0, 3, 4, 0, 0, 0, 0}},
		{"all -Inf k2 s2", mk(sh(1, 1, 2, 2), ninf, ninf, ninf, ninf), 2, 2,
			[]float64{3}, []float64{ninf}, []float64{3, 0, 0, 0}},
		// NaN is the maximum, and the gradient goes to the last NaN, as
		// PyTorch's CPU kernel (val > max || isnan(val)) does.
		{"NaN k2 s2", mk(sh(1, 1, 2, 2), 1, nan, nan, 2), 2, 2,
			[]float64{3}, []float64{nan}, []float64{0, 0, 3, 0}},
		{"NaN after the max k2 s2", mk(sh(1, 1, 2, 2), 9, 1, 2, nan), 2, 2,
			[]float64{3}, []float64{nan}, []float64{0, 0, 0, 3}},
		{"NaN overlapping k2 s1", mk(sh(1, 1, 2, 3), 1, nan, 3, 4, 5, nan), 2, 1,
			[]float64{2, 3}, []float64{nan, nan}, []float64{0, 2, 0, 0, 0, 3}},
		{"NaN beside Inf k2 s1", mk(sh(1, 1, 2, 3), inf, 0, nan, 1, 2, 3), 2, 1,
			[]float64{2, 3}, []float64{inf, nan}, []float64{2, 0, 3, 0, 0, 0}},
	}
	for _, c := range cases {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			x := c.x.As(dt)
			desc := fmt.Sprintf("%s (%v)", c.desc, dt)
			out := ops.MaxPool2d(x, c.kernel, c.stride)
			g := tensor.FromFloat64s(dt, c.grad, out.Shape()...)
			checkT(t, "MaxPool2d "+desc, out, out.Shape(), c.out, 0)
			checkT(t, "MaxPool2dBackward "+desc, ops.MaxPool2dBackward(g, x, c.kernel, c.stride), x.Shape(), c.gx, 0)
			if out.DType() != dt {
				t.Errorf("MaxPool2d %s: dtype %v", desc, out.DType())
			}
		}
	}
}

func TestEdgePoolEmpty(t *testing.T) {
	for _, c := range []struct {
		shape, out     []int
		kernel, stride int
	}{
		{sh(0, 3, 4, 4), sh(0, 3, 2, 2), 2, 2},
		{sh(2, 0, 4, 5), sh(2, 0, 3, 4), 2, 1},
		{sh(2, 1, 0, 5), sh(2, 1, 0, 4), 2, 1},
		{sh(1, 2, 3, 0), sh(1, 2, 1, 0), 3, 1},
		{sh(1, 1, 0, 0), sh(1, 1, 0, 0), 5, 2},
	} {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			desc := fmt.Sprintf("%v kernel %d stride %d (%v)", c.shape, c.kernel, c.stride, dt)
			safely(t, desc, func() {
				x := tensor.Zeros(dt, c.shape...)
				g := tensor.Zeros(dt, c.out...)
				checkT(t, "MaxPool2d "+desc, ops.MaxPool2d(x, c.kernel, c.stride), c.out, nil, 0)
				checkT(t, "AvgPool2d "+desc, ops.AvgPool2d(x, c.kernel, c.stride), c.out, nil, 0)
				checkT(t, "MaxPool2dBackward "+desc, ops.MaxPool2dBackward(g, x, c.kernel, c.stride), c.shape, nil, 0)
				checkT(t, "AvgPool2dBackward "+desc, ops.AvgPool2dBackward(g, c.shape, c.kernel, c.stride), c.shape, nil, 0)
			})
		}
	}
}

func TestEdgePoolNormErrors(t *testing.T) {
	f32 := func(shape ...int) *tt { return tensor.Zeros(tensor.Float32, shape...) }
	z := func(shape ...int) *tt { return tensor.Zeros(tensor.Float64, shape...) }
	cases := []struct {
		op       string
		desc     string
		mentions []string
		fn       func()
	}{
		{"MaxPool2d", "MaxPool2d([2 3 4])", []string{"[2 3 4]"}, func() { ops.MaxPool2d(z(2, 3, 4), 2, 2) }},
		{"MaxPool2d", "MaxPool2d([1 1 3 3], kernel 4)", []string{"[1 1 3 3]", "4"}, func() { ops.MaxPool2d(z(1, 1, 3, 3), 4, 1) }},
		{"MaxPool2d", "MaxPool2d([1 1 5 3], kernel 4)", []string{"[1 1 5 3]", "4"}, func() { ops.MaxPool2d(z(1, 1, 5, 3), 4, 1) }},
		{"MaxPool2d", "MaxPool2d([1 1 4 4], kernel 0)", []string{"[1 1 4 4]"}, func() { ops.MaxPool2d(z(1, 1, 4, 4), 0, 1) }},
		{"MaxPool2d", "MaxPool2d([1 1 4 4], stride 0)", []string{"[1 1 4 4]"}, func() { ops.MaxPool2d(z(1, 1, 4, 4), 2, 0) }},
		{"AvgPool2d", "AvgPool2d([4 4])", []string{"[4 4]"}, func() { ops.AvgPool2d(z(4, 4), 2, 2) }},
		{"AvgPool2d", "AvgPool2d([1 2 2 2], kernel 3)", []string{"[1 2 2 2]"}, func() { ops.AvgPool2d(z(1, 2, 2, 2), 3, 1) }},
		{"AvgPool2d", "AvgPool2d([1 1 4 4], stride -1)", []string{"[1 1 4 4]"}, func() { ops.AvgPool2d(z(1, 1, 4, 4), 2, -1) }},
		{"MaxPool2dBackward", "MaxPool2dBackward(grad [1 1 3 3], [1 1 4 4], 2, 2)", []string{"[1 1 3 3]", "[1 1 4 4]", "[1 1 2 2]"},
			func() { ops.MaxPool2dBackward(z(1, 1, 3, 3), z(1, 1, 4, 4), 2, 2) }},
		{"MaxPool2dBackward", "MaxPool2dBackward(float32 grad, float64 x)", []string{"[1 1 2 2]", "[1 1 4 4]"},
			func() { ops.MaxPool2dBackward(f32(1, 1, 2, 2), z(1, 1, 4, 4), 2, 2) }},
		{"MaxPool2dBackward", "MaxPool2dBackward(grad [1 1], [4 4])", []string{"[1 1]", "[4 4]"}, func() { ops.MaxPool2dBackward(z(1, 1), z(4, 4), 2, 2) }},
		{"AvgPool2dBackward", "AvgPool2dBackward(grad [1 1 2 1], [1 1 4 5], 2, 2)", []string{"[1 1 2 1]", "[1 1 4 5]", "[1 1 2 2]"},
			func() { ops.AvgPool2dBackward(z(1, 1, 2, 1), sh(1, 1, 4, 5), 2, 2) }},
		{"AvgPool2dBackward", "AvgPool2dBackward(grad [1 1 2 2], [1 -1 4 4])", []string{"[1 1 2 2]", "[1 -1 4 4]"}, func() { ops.AvgPool2dBackward(z(1, 1, 2, 2), sh(1, -1, 4, 4), 2, 2) }},
		{"AvgPool2dBackward", "AvgPool2dBackward(grad [2 2], [4 4])", []string{"[2 2]", "[4 4]"}, func() { ops.AvgPool2dBackward(z(2, 2), sh(4, 4), 2, 2) }},
		{"BatchNorm", "BatchNorm([3])", []string{"[3]"}, func() { ops.BatchNorm(z(3), z(3), z(3), 1e-5) }},
		{"BatchNorm", "BatchNorm([4 3], gamma [2])", []string{"[4 3]", "[2]", "[3]"}, func() { ops.BatchNorm(z(4, 3), z(2), z(3), 1e-5) }},
		{"BatchNorm", "BatchNorm([2 3 4 4], beta [3 1])", []string{"[2 3 4 4]", "[3 1]"}, func() { ops.BatchNorm(z(2, 3, 4, 4), z(3), z(3, 1), 1e-5) }},
		{"BatchNorm", "BatchNorm(float32 x, float64 gamma)", []string{"[4 3]", "[3]"}, func() { ops.BatchNorm(f32(4, 3), z(3), z(3), 1e-5) }},
		{"BatchNormBackward", "BatchNormBackward(grad [4 2], [4 3])", []string{"[4 2]", "[4 3]"},
			func() { ops.BatchNormBackward(z(4, 2), z(4, 3), z(3), z(3), z(3)) }},
		{"BatchNormBackward", "BatchNormBackward(mean [4])", []string{"[4 3]", "[4]"},
			func() { ops.BatchNormBackward(z(4, 3), z(4, 3), z(3), z(4), z(3)) }},
		{"BatchNormBackward", "BatchNormBackward(float32 invstd)", []string{"[4 3]", "[3]"},
			func() { ops.BatchNormBackward(z(4, 3), z(4, 3), z(3), z(3), f32(3)) }},
		{"BatchNormBackward", "BatchNormBackward([5])", []string{"[5]"},
			func() { ops.BatchNormBackward(z(5), z(5), z(5), z(5), z(5)) }},
	}
	for _, c := range cases {
		expectError(t, c.desc, "ops."+c.op+":", c.mentions, c.fn)
	}
}

// TestMaxPool2dFloat32: float32 max pooling, which works on float32 alone,
// gives the float64 path's bits: the same maxima, NaN and ties included,
// and, where windows do not overlap, the same gradients.
func TestMaxPool2dFloat32(t *testing.T) {
	vals := []float64{3, 1, 3, -2, math.NaN(), 0, 7, 7, -1, 2, 2, 5, math.Inf(-1), 4, 4, 1}
	for _, c := range poolCases {
		n := tensor.SizeOf(c.shape)
		xv := make([]float64, n)
		for i := range xv {
			xv[i] = vals[(i*7)%len(vals)]
		}
		x64 := tensor.FromFloat64s(tensor.Float64, xv, c.shape...)
		x32 := x64.As(tensor.Float32)
		y64, y32 := ops.MaxPool2d(x64, c.kernel, c.stride), ops.MaxPool2d(x32, c.kernel, c.stride)
		if !sameBits32(y32, y64.As(tensor.Float32)) {
			t.Errorf("%v k%d s%d: float32 forward %v, float64 %v", c.shape, c.kernel, c.stride, y32.Float64s(), y64.Float64s())
		}
		g64 := tensor.Full(tensor.Float64, 0.5, y64.Shape()...)
		d64, d32 := ops.MaxPool2dBackward(g64, x64, c.kernel, c.stride), ops.MaxPool2dBackward(g64.As(tensor.Float32), x32, c.kernel, c.stride)
		if c.stride >= c.kernel && !sameBits32(d32, d64.As(tensor.Float32)) {
			t.Errorf("%v k%d s%d: float32 backward %v, float64 %v", c.shape, c.kernel, c.stride, d32.Float64s(), d64.Float64s())
		}
	}
}

func sameBits32(a, b *tensor.Tensor) bool {
	x, y := a.Data32(), b.Data32()
	if len(x) != len(y) || !tensor.EqualShapes(a.Shape(), b.Shape()) {
		return false
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return true
}

// TestMaxPool2dArg: the forward with window offsets and the scatter give
// MaxPool2d's and MaxPool2dBackward's bits, overlapping windows, ties and
// NaN included, in both dtypes.
func TestMaxPool2dArg(t *testing.T) {
	vals := []float64{3, 1, 3, -2, math.NaN(), 0, 7, 7, -1, 2, 2, 5, math.Inf(-1), 4, 4, 1}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, c := range poolCases {
			n := tensor.SizeOf(c.shape)
			xv := make([]float64, n)
			for i := range xv {
				xv[i] = vals[(i*5)%len(vals)]
			}
			x := tensor.FromFloat64s(dt, xv, c.shape...)
			y, arg := ops.MaxPool2dArg(x, c.kernel, c.stride)
			g := tensor.FromFloat64s(dt, make([]float64, y.Size()), y.Shape()...)
			for i := range g.Size() {
				g.Set(float64(i%7)-2.5, unravel(i, y.Shape())...)
			}
			want, wantDX := ops.MaxPool2d(x, c.kernel, c.stride), ops.MaxPool2dBackward(g, x, c.kernel, c.stride)
			dx := ops.MaxPool2dArgScatter(g, arg, x.Shape(), c.kernel, c.stride)
			if fmt.Sprint(y.Float64s()) != fmt.Sprint(want.Float64s()) || fmt.Sprint(dx.Float64s()) != fmt.Sprint(wantDX.Float64s()) {
				t.Errorf("%v %v k%d s%d: the offsets' path differs from MaxPool2d/MaxPool2dBackward", dt, c.shape, c.kernel, c.stride)
			}
		}
	}
}

func unravel(i int, shape []int) []int {
	out := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		out[d] = i % shape[d]
		i /= shape[d]
	}
	return out
}

// TestMaxPool2x2Path: the 2×2 stride-2 path gives what the general window
// search gives, maxima and the elements their gradients go to, with ties,
// NaNs, odd sizes and both dtypes.
func TestMaxPool2x2Path(t *testing.T) {
	rng := newRNG(64)
	for _, shape := range [][]int{{2, 3, 5, 7}, {1, 1, 4, 4}, {3, 2, 6, 9}} {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			x := randN(rng, 1, shape...)
			v := x.Data64()
			for i := range v {
				v[i] = math.Round(v[i] * 2) // ties in most windows
			}
			v[3], v[len(v)/2] = nan, nan
			x = x.As(dt)
			out, arg := ops.MaxPool2dArg(x, 2, 2)
			want, from := refPool(x.Float64s(), shape, 2, 2, true)
			checkT(t, fmt.Sprintf("MaxPool2dArg %v %v", shape, dt), out, out.Shape(), want, 0)
			oh, ow := (shape[2]-2)/2+1, (shape[3]-2)/2+1
			for o := range from {
				plane, i, j := o/(oh*ow), o/ow%oh, o%ow
				at := plane*shape[2]*shape[3] + 2*i*shape[3] + 2*j + int(arg[o])/2*shape[3] + int(arg[o])%2
				if at != from[o] {
					t.Fatalf("%v %v: output %d came from %d (offset %d), want %d", shape, dt, o, at, arg[o], from[o])
				}
			}
		}
	}
}

// TestMaxPool2dArgThreads: the 2×2 float32 pooling split over goroutines
// gives the bits, offsets and gradient of one goroutine, and MaxPool2d's
// and MaxPool2dBackward's.
func TestMaxPool2dArgThreads(t *testing.T) {
	rng := newRNG(31)
	for _, shape := range [][]int{{8, 32, 28, 28}, {16, 64, 14, 14}, {5, 7, 9, 12}} {
		x := randN(rng, 1, shape...).As(tensor.Float32)
		want := ops.MaxPool2d(x, 2, 2)
		g := randN(rng, 1, want.Shape()...).As(tensor.Float32)
		wantDX := ops.MaxPool2dBackward(g, x, 2, 2)
		var oneArg []uint8
		for _, threads := range []int{1, 2, 3} {
			y, arg := tensor.Zeros(tensor.Float32, want.Shape()...), make([]uint8, want.Size())
			ops.MaxPool2dArgInto(y, arg, x, 2, 2, threads)
			dx := ops.MaxPool2dArgScatterInto(tensor.Full(tensor.Float32, math.NaN(), shape...), g, arg, 2, 2, threads)
			if !sameBits32(y, want) || !sameBits32(dx, wantDX) {
				t.Errorf("%v, threads=%d: the pooling or its gradient differs from MaxPool2d's", shape, threads)
			}
			if oneArg == nil {
				oneArg = arg
			} else if !slices.Equal(arg, oneArg) {
				t.Errorf("%v, threads=%d: offsets differ from one goroutine's", shape, threads)
			}
		}
	}
}
