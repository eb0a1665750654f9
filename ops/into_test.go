package ops_test

// The destination-first kernels (Conv2dInto, the pools' and batch norm's
// Into forms): the bits of the allocating ops, whatever the destinations
// held before, gradients added to what the parameters' held, and no
// allocation once their workspace has grown.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// garbage returns a tensor of t's dtype and shape full of NaN, as a reused
// destination may be.
func garbage(t *tt) *tt { return tensor.Full(t.DType(), math.NaN(), t.Shape()...) }

// plus returns a + b elementwise in their dtype, as a layer's gradient
// accumulates.
func plus(a, b *tt) *tt {
	out := a.Clone()
	if a.DType() == tensor.Float32 {
		o, v := out.Data32(), b.Data32()
		for i := range o {
			o[i] += v[i]
		}
		return out
	}
	o, v := out.Data64(), b.Data64()
	for i := range o {
		o[i] += v[i]
	}
	return out
}

func wantBits(t *testing.T, desc string, got, want *tt) {
	t.Helper()
	if !sameBits(got, want) {
		t.Errorf("%s: got %v, want the bits of %v", desc, got, want)
	}
}

func TestConv2dIntoBits(t *testing.T) {
	var work ops.ConvWork // one for every case: it grows and shrinks
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, c := range convCases {
			x, w, b := convInputs(21, c)
			x, w = x.As(dt), w.As(dt)
			if b != nil {
				b = b.As(dt)
			}
			want := ops.Conv2d(x, w, b, c.stride, c.pad)
			wantBits(t, "Conv2dInto "+c.String(), ops.Conv2dInto(garbage(want), x, w, b, c.stride, c.pad, &work), want)

			g := randN(newRNG(22), 1, want.Shape()...).As(dt)
			gx, gw, gb := ops.Conv2dBackward(g, x, w, c.stride, c.pad)
			gw0, gb0 := randN(newRNG(23), 1, gw.Shape()...).As(dt), randN(newRNG(24), 1, c.f).As(dt)
			gotX, gotW, gotB := garbage(gx), gw0.Clone(), gb0.Clone()
			ops.Conv2dBackwardInto(gotX, gotW, gotB, g, x, w, c.stride, c.pad, &work)
			wantBits(t, "Conv2dBackwardInto gx "+c.String(), gotX, gx)
			wantBits(t, "Conv2dBackwardInto gw "+c.String(), gotW, plus(gw0, gw))
			wantBits(t, "Conv2dBackwardInto gb "+c.String(), gotB, plus(gb0, gb))

			// Each destination alone.
			gotX = garbage(gx)
			ops.Conv2dBackwardInto(gotX, nil, nil, g, x, w, c.stride, c.pad, nil)
			wantBits(t, "Conv2dBackwardInto gx alone "+c.String(), gotX, gx)
			gotW = tensor.Zeros(dt, gw.Shape()...)
			ops.Conv2dBackwardInto(nil, gotW, nil, g, x, w, c.stride, c.pad, &work)
			wantBits(t, "Conv2dBackwardInto gw alone "+c.String(), gotW, gw)
		}
	}
}

// TestConv2dBackwardIntoEmpty: an empty batch adds its zero gradients, as
// adding Conv2dBackward's zeros would: -0 becomes +0.
func TestConv2dBackwardIntoEmpty(t *testing.T) {
	x, g, w := tensor.Zeros(tensor.Float32, 0, 1, 2, 2), tensor.Zeros(tensor.Float32, 0, 1, 2, 2), tensor.Zeros(tensor.Float32, 1, 1, 1, 1)
	gw, gb := tensor.Full(tensor.Float32, math.Copysign(0, -1), 1, 1, 1, 1), tensor.Full(tensor.Float32, math.Copysign(0, -1), 1)
	ops.Conv2dBackwardInto(nil, gw, gb, g, x, w, 1, 0, nil)
	if math.Signbit(gw.At(0, 0, 0, 0)) || math.Signbit(gb.At(0)) {
		t.Errorf("Conv2dBackwardInto of no samples onto -0: gw %v, gb %v, want +0", gw, gb)
	}
}

func TestPoolIntoBits(t *testing.T) {
	vals := []float64{3, 1, 3, -2, math.NaN(), 0, 7, 7, -1, 2, 2, 5, math.Inf(-1), 4, 4, 1}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, c := range poolCases {
			xv := make([]float64, tensor.SizeOf(c.shape))
			for i := range xv {
				xv[i] = vals[(i*5)%len(vals)] + float64(i%3)/8
			}
			x := tensor.FromFloat64s(dt, xv, c.shape...)
			desc := func(op string) string { return op + " " + gradName("", c.shape, c.kernel, c.stride, dt) }
			maxY, arg := ops.MaxPool2dArg(x, c.kernel, c.stride)
			wantBits(t, desc("MaxPool2dInto"), ops.MaxPool2dInto(garbage(maxY), x, c.kernel, c.stride), maxY)
			gotArg := make([]uint8, len(arg))
			wantBits(t, desc("MaxPool2dArgInto"), ops.MaxPool2dArgInto(garbage(maxY), gotArg, x, c.kernel, c.stride, 2), maxY)
			for i := range arg {
				if gotArg[i] != arg[i] {
					t.Errorf("%s: offset %d is %d, want %d", desc("MaxPool2dArgInto"), i, gotArg[i], arg[i])
					break
				}
			}
			g := randN(newRNG(25), 1, maxY.Shape()...).As(dt)
			wantBits(t, desc("MaxPool2dArgScatterInto"), ops.MaxPool2dArgScatterInto(garbage(x), g, arg, c.kernel, c.stride, 2),
				ops.MaxPool2dArgScatter(g, arg, c.shape, c.kernel, c.stride))
			avgY := ops.AvgPool2d(x, c.kernel, c.stride)
			wantBits(t, desc("AvgPool2dInto"), ops.AvgPool2dInto(garbage(avgY), x, c.kernel, c.stride), avgY)
			wantBits(t, desc("AvgPool2dBackwardInto"), ops.AvgPool2dBackwardInto(garbage(x), g, c.kernel, c.stride),
				ops.AvgPool2dBackward(g, c.shape, c.kernel, c.stride))
		}
	}
}

func TestBatchNormIntoBits(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range [][]int{{4, 3}, {2, 3, 4, 5}, {1, 2, 1, 1}, {0, 2, 3, 3}} {
			rng := newRNG(26)
			x, gamma, beta := randN(rng, 2, shape...).As(dt), randN(rng, 1, shape[1]).As(dt), randN(rng, 1, shape[1]).As(dt)
			desc := func(op string) string { return op + " " + gradName("", shape, dt) }
			out, mean, invstd := ops.BatchNorm(x, gamma, beta, 1e-5)
			gotMean, gotInv := garbage(mean), garbage(invstd)
			wantBits(t, desc("BatchNormInto"), ops.BatchNormInto(garbage(out), gotMean, gotInv, x, gamma, beta, 1e-5), out)
			wantBits(t, desc("BatchNormInto mean"), gotMean, mean)
			wantBits(t, desc("BatchNormInto invstd"), gotInv, invstd)

			g := randN(rng, 1, shape...).As(dt)
			gx, gg, gb := ops.BatchNormBackward(g, x, gamma, mean, invstd)
			gg0, gb0 := randN(rng, 1, shape[1]).As(dt), randN(rng, 1, shape[1]).As(dt)
			gotX, gotG, gotB := garbage(gx), gg0.Clone(), gb0.Clone()
			ops.BatchNormBackwardInto(gotX, gotG, gotB, g, x, gamma, mean, invstd)
			wantBits(t, desc("BatchNormBackwardInto gx"), gotX, gx)
			wantBits(t, desc("BatchNormBackwardInto ggamma"), gotG, plus(gg0, gg))
			wantBits(t, desc("BatchNormBackwardInto gbeta"), gotB, plus(gb0, gb))
			gotG, gotB = tensor.Zeros(dt, shape[1]), tensor.Zeros(dt, shape[1])
			ops.BatchNormBackwardInto(nil, gotG, gotB, g, x, gamma, mean, invstd)
			wantBits(t, desc("BatchNormBackwardInto without gx"), gotG, gg)
		}
	}
}

// TestIntoAllocations checks that the Into kernels of a small CNN's layers
// allocate nothing once their workspace has grown.
func TestIntoAllocations(t *testing.T) {
	rng := newRNG(27)
	f32 := func(shape ...int) *tt { return randN(rng, 1, shape...).As(tensor.Float32) }
	x, w, b, g := f32(32, 8, 14, 14), f32(16, 8, 3, 3), f32(16), f32(32, 16, 14, 14)
	y, gx, gw, gb := f32(32, 16, 14, 14), f32(32, 8, 14, 14), f32(16, 8, 3, 3), f32(16)
	py, pg, pdx := f32(32, 16, 7, 7), f32(32, 16, 7, 7), f32(32, 16, 14, 14)
	arg := make([]uint8, py.Size())
	gamma, beta, mean, invstd := f32(16), f32(16), f32(16), f32(16)
	var work ops.ConvWork
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"Conv2dInto", func() { ops.Conv2dInto(y, x, w, b, 1, 1, &work) }},
		{"Conv2dBackwardInto", func() { ops.Conv2dBackwardInto(gx, gw, gb, g, x, w, 1, 1, &work) }},
		{"MaxPool2dInto", func() { ops.MaxPool2dInto(py, y, 2, 2) }},
		{"MaxPool2dArgInto", func() { ops.MaxPool2dArgInto(py, arg, y, 2, 2, 2) }},
		{"MaxPool2dArgScatterInto", func() { ops.MaxPool2dArgScatterInto(pdx, pg, arg, 2, 2, 2) }},
		{"AvgPool2dInto", func() { ops.AvgPool2dInto(py, y, 2, 2) }},
		{"AvgPool2dBackwardInto", func() { ops.AvgPool2dBackwardInto(pdx, pg, 2, 2) }},
		{"BatchNormInto", func() { ops.BatchNormInto(g, mean, invstd, y, gamma, beta, 1e-5) }},
		{"BatchNormBackwardInto", func() { ops.BatchNormBackwardInto(pdx, gamma, beta, g, y, gamma, mean, invstd) }},
	} {
		if n := testing.AllocsPerRun(20, c.fn); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, n)
		}
	}
}

func TestIntoErrors(t *testing.T) {
	z := func(shape ...int) *tt { return tensor.Zeros(tensor.Float64, shape...) }
	f32 := func(shape ...int) *tt { return tensor.Zeros(tensor.Float32, shape...) }
	x, w := z(1, 2, 4, 4), z(3, 2, 2, 2)
	for _, c := range []struct {
		op       string
		mentions []string
		fn       func()
	}{
		{"Conv2dInto", []string{"[1 3 4 4]", "[1 3 3 3]"}, func() { ops.Conv2dInto(z(1, 3, 4, 4), x, w, nil, 1, 0, nil) }},
		{"Conv2dInto", []string{"float32", "float64"}, func() { ops.Conv2dInto(f32(1, 3, 3, 3), x, w, nil, 1, 0, nil) }},
		{"Conv2dBackwardInto", []string{"gx", "[1 2 4 5]"}, func() { ops.Conv2dBackwardInto(z(1, 2, 4, 5), nil, nil, z(1, 3, 3, 3), x, w, 1, 0, nil) }},
		{"Conv2dBackwardInto", []string{"gw", "[3 2 2 1]"}, func() { ops.Conv2dBackwardInto(nil, z(3, 2, 2, 1), nil, z(1, 3, 3, 3), x, w, 1, 0, nil) }},
		{"Conv2dBackwardInto", []string{"gb", "[2]"}, func() { ops.Conv2dBackwardInto(nil, nil, z(2), z(1, 3, 3, 3), x, w, 1, 0, nil) }},
		{"Conv2dBackwardInto", []string{"[1 3 2 2]", "[1 3 3 3]"}, func() { ops.Conv2dBackwardInto(nil, nil, nil, z(1, 3, 2, 2), x, w, 1, 0, nil) }},
		{"MaxPool2dInto", []string{"[1 2 3 2]", "[1 2 2 2]"}, func() { ops.MaxPool2dInto(z(1, 2, 3, 2), x, 2, 2) }},
		{"MaxPool2dArgInto", []string{"3 offsets", "[1 2 2 2]"}, func() { ops.MaxPool2dArgInto(z(1, 2, 2, 2), make([]uint8, 3), x, 2, 2, 0) }},
		{"MaxPool2dArgInto", []string{"kernel 17", "16"}, func() { ops.MaxPool2dArgInto(z(1, 1, 1, 1), make([]uint8, 1), z(1, 1, 17, 17), 17, 1, 0) }},
		{"MaxPool2dArgScatter", []string{"offset 4", "2×2"}, func() {
			ops.MaxPool2dArgScatterInto(f32(1, 2, 4, 4), f32(1, 2, 2, 2), []uint8{0, 1, 2, 4, 3, 2, 1, 0}, 2, 2, 0)
		}},
		{"MaxPool2dArgScatter", []string{"offset 9", "3×3"}, func() { ops.MaxPool2dArgScatterInto(z(1, 1, 4, 4), z(1, 1, 2, 2), []uint8{0, 1, 9, 2}, 3, 1, 0) }},
		{"MaxPool2dArgScatterInto", []string{"float32", "float64"}, func() { ops.MaxPool2dArgScatterInto(f32(1, 2, 4, 4), z(1, 2, 2, 2), make([]uint8, 8), 2, 2, 0) }},
		{"AvgPool2dInto", []string{"[1 2 2 3]", "[1 2 2 2]"}, func() { ops.AvgPool2dInto(z(1, 2, 2, 3), x, 2, 2) }},
		{"AvgPool2dBackwardInto", []string{"[1 2 3 3]", "[1 2 4 4]"}, func() { ops.AvgPool2dBackwardInto(x, z(1, 2, 3, 3), 2, 2) }},
		{"BatchNormInto", []string{"[1 2 4 5]", "[1 2 4 4]"}, func() { ops.BatchNormInto(z(1, 2, 4, 5), z(2), z(2), x, z(2), z(2), 1e-5) }},
		{"BatchNormInto", []string{"[3]", "[1 2 4 4]"}, func() { ops.BatchNormInto(z(1, 2, 4, 4), z(3), z(2), x, z(2), z(2), 1e-5) }},
		{"BatchNormBackwardInto", []string{"[1 2 4 3]", "[1 2 4 4]"}, func() { ops.BatchNormBackwardInto(z(1, 2, 4, 3), z(2), z(2), x, x, z(2), z(2), z(2)) }},
		{"BatchNormBackwardInto", []string{"[5]", "[1 2 4 4]"}, func() { ops.BatchNormBackwardInto(nil, z(5), z(2), x, x, z(2), z(2), z(2)) }},
	} {
		expectError(t, c.op, "ops."+c.op+":", c.mentions, c.fn)
	}
}

// TestGELUFloat32: the vectorised float32 GELU and its backward stay within
// a few float32 steps of the float64 forms, the Into forms give the
// allocating forms' bits, and dst may be the input.
func TestGELUFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	x64 := tensor.RandNormal(rng, tensor.Float64, 0, 3, 4097)
	g64 := tensor.RandNormal(rng, tensor.Float64, 0, 1, 4097)
	x, g := x64.As(tensor.Float32), g64.As(tensor.Float32)
	y, dx := ops.GELU(x, false), ops.GELUBackward(g, x, false)
	wy, wdx := ops.GELU(x.As(tensor.Float64), false).Float64s(), ops.GELUBackward(g.As(tensor.Float64), x.As(tensor.Float64), false).Float64s()
	for i, v := range y.Float64s() {
		if d := math.Abs(v - wy[i]); d > 4e-7*math.Max(math.Abs(wy[i]), 0.25) {
			t.Fatalf("ops.GELU(%v) = %v, float64 gives %v", x.Float64s()[i], v, wy[i])
		}
		if d := math.Abs(dx.Float64s()[i] - wdx[i]); d > 5e-7*math.Max(math.Abs(wdx[i]), 0.25) {
			t.Fatalf("GELUBackward at %v = %v, float64 gives %v", x.Float64s()[i], dx.Float64s()[i], wdx[i])
		}
	}
	same := x.Clone()
	ops.GELUInto(same, same, 2)
	if !slices.Equal(same.Float32s(), y.Float32s()) {
		t.Error("GELUInto(x, x) differs from ops.GELU(x)")
	}
	gs := g.Clone()
	ops.GELUBackwardInto(gs, gs, x, 2)
	if !slices.Equal(gs.Float32s(), dx.Float32s()) {
		t.Error("ops.GELUBackwardInto(g, g, x) differs from ops.GELUBackward(g, x)")
	}
}

// TestElementwiseThreads: ReLU and GELU split over goroutines give the bits
// of one, NaN and signed zeros included, forward and backward.
func TestElementwiseThreads(t *testing.T) {
	rng := newRNG(41)
	for _, n := range []int{1, 1000, 3<<16 + 5} {
		x := randN(rng, 1, n).As(tensor.Float32)
		for i, v := range []float64{math.NaN(), 0, math.Copysign(0, -1), math.Inf(-1)} {
			x.Set(v, (i*7919)%n)
		}
		g := randN(rng, 1, n).As(tensor.Float32)
		for _, c := range []struct {
			name          string
			want, wantDX  *tt
			forward, back func(dst *tt, threads int) *tt
		}{
			{"ReLU", ops.ReLU(x), ops.ReLUBackward(g, x),
				func(dst *tt, th int) *tt { return ops.ReLUInto(dst, x, th) },
				func(dst *tt, th int) *tt { return ops.ReLUBackwardInto(dst, g, x, th) }},
			{"GELU", ops.GELU(x, false), ops.GELUBackward(g, x, false),
				func(dst *tt, th int) *tt { return ops.GELUInto(dst, x, th) },
				func(dst *tt, th int) *tt { return ops.GELUBackwardInto(dst, g, x, th) }},
		} {
			for _, threads := range []int{1, 2, 3} {
				wantBits(t, fmt.Sprintf("%sInto n=%d threads=%d", c.name, n, threads), c.forward(tensor.Full(tensor.Float32, 7, n), threads), c.want)
				wantBits(t, fmt.Sprintf("%sBackwardInto n=%d threads=%d", c.name, n, threads), c.back(tensor.Full(tensor.Float32, 7, n), threads), c.wantDX)
			}
		}
	}
}
