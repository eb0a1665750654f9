package ops_test

// Conv2d and Conv2dBackward: forward against a direct loop, gradients by finite
// differences, float32/float64 agreement, determinism, empty batches and errors.

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

type convCase struct {
	n, c, h, w, f, kh, kw, stride, pad int
	bias                               bool
}

func (c convCase) String() string {
	b := "nobias"
	if c.bias {
		b = "bias"
	}
	return fmt.Sprintf("x[%d %d %d %d] w[%d %d %d %d] s%d p%d %s",
		c.n, c.c, c.h, c.w, c.f, c.c, c.kh, c.kw, c.stride, c.pad, b)
}

// convCases cover strides 1 to 3, paddings 0 to 2, non-square inputs and
// kernels, N 1 and 2, C and F above 1, and strides that leave rows unreached.
var convCases = []convCase{
	{1, 1, 3, 3, 1, 2, 2, 1, 0, false},
	{1, 2, 5, 7, 3, 2, 3, 1, 0, true},
	{2, 2, 5, 7, 3, 2, 3, 1, 1, false},
	{2, 3, 5, 7, 2, 2, 3, 2, 0, true},
	{1, 2, 5, 7, 3, 3, 2, 2, 1, true},
	{2, 2, 6, 4, 2, 3, 3, 2, 1, false},
	{2, 2, 5, 5, 2, 3, 3, 2, 0, true},  // last row and column unreached
	{1, 2, 7, 6, 2, 2, 2, 3, 0, true},  // stride larger than the kernel
	{2, 1, 4, 3, 2, 1, 1, 1, 0, true},  // 1×1 kernel
	{1, 2, 3, 4, 2, 3, 4, 1, 0, true},  // kernel as large as the input
	{1, 2, 2, 3, 2, 4, 5, 1, 1, false}, // kernel as large as the padded input
	{1, 1, 3, 3, 2, 2, 2, 1, 2, true},  // windows entirely in the padding
}

// naiveConv is the direct definition of the convolution, in float64.
func naiveConv(x, w, b *tt, stride, pad int) *tt {
	xs, ws := x.Shape(), w.Shape()
	n, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	f, kh, kw := ws[0], ws[2], ws[3]
	oh, ow := (h+2*pad-kh)/stride+1, (wd+2*pad-kw)/stride+1
	out := tensor.Zeros(tensor.Float64, n, f, oh, ow)
	for in := range n {
		for fi := range f {
			for i := range oh {
				for j := range ow {
					var s float64
					if b != nil {
						s = b.At(fi)
					}
					for ci := range c {
						for a := range kh {
							for d := range kw {
								y, z := i*stride-pad+a, j*stride-pad+d
								if y >= 0 && y < h && z >= 0 && z < wd {
									s += x.At(in, ci, y, z) * w.At(fi, ci, a, d)
								}
							}
						}
					}
					out.Set(s, in, fi, i, j)
				}
			}
		}
	}
	return out
}

func convInputs(seed uint64, c convCase) (x, w, b *tt) {
	rng := newRNG(seed)
	x = randN(rng, 1, c.n, c.c, c.h, c.w)
	w = randN(rng, 0.5, c.f, c.c, c.kh, c.kw)
	if c.bias {
		b = randN(rng, 1, c.f)
	}
	return x, w, b
}

func TestConv2dHand(t *testing.T) {
	// x = 1..9 in a 3×3 plane, a 2×2 kernel of ones: sums of 2×2 windows.
	x := arange(1, 1, 3, 3)
	w := mk(sh(1, 1, 2, 2), 1, 1, 1, 1)
	checkT(t, "Conv2d 3×3 ones 2×2", ops.Conv2d(x, w, nil, 1, 0), sh(1, 1, 2, 2), []float64{12, 16, 24, 28}, 0)
	checkT(t, "Conv2d 3×3 ones 2×2 bias 0.5 stride 2 pad 1", ops.Conv2d(x, w, vec(0.5), 2, 1), sh(1, 1, 2, 2), []float64{1.5, 5.5, 11.5, 28.5}, 0)
	// The backward of a sum of windows counts how many windows hold each pixel.
	gx, gw, gb := ops.Conv2dBackward(mk(sh(1, 1, 2, 2), 1, 1, 1, 1), x, w, 1, 0)
	checkT(t, "Conv2dBackward gx", gx, sh(1, 1, 3, 3), []float64{1, 2, 1, 2, 4, 2, 1, 2, 1}, 0)
	checkT(t, "Conv2dBackward gw", gw, sh(1, 1, 2, 2), []float64{12, 16, 24, 28}, 0)
	checkT(t, "Conv2dBackward gb", gb, sh(1), []float64{4}, 0)
}

func TestConv2dMatchesDirectLoop(t *testing.T) {
	for i, c := range convCases {
		x, w, b := convInputs(uint64(100+i), c)
		want := naiveConv(x, w, b, c.stride, c.pad)
		got := ops.Conv2d(x, w, b, c.stride, c.pad)
		checkT(t, "Conv2d "+c.String(), got, want.Shape(), want.Float64s(), 1e-12)
	}
}

func TestGradConv2d(t *testing.T) {
	for i, c := range convCases {
		x, w, b := convInputs(uint64(200+i), c)
		name := gradName("Conv2d", c)
		if c.bias {
			opstest.CheckGrad(t, name, in(x, w, b),
				func(p []*tt) *tt { return ops.Conv2d(p[0], p[1], p[2], c.stride, c.pad) },
				func(g *tt, p []*tt, _ *tt) []*tt {
					gx, gw, gb := ops.Conv2dBackward(g, p[0], p[1], c.stride, c.pad)
					return in(gx, gw, gb)
				}, gradTol)
		} else {
			opstest.CheckGrad(t, name, in(x, w),
				func(p []*tt) *tt { return ops.Conv2d(p[0], p[1], nil, c.stride, c.pad) },
				func(g *tt, p []*tt, _ *tt) []*tt {
					gx, gw, gb := ops.Conv2dBackward(g, p[0], p[1], c.stride, c.pad)
					if !gb.HasShape(c.f) {
						t.Errorf("%s: gb has shape %v, want [%d]", name, gb.Shape(), c.f)
					}
					return in(gx, gw)
				}, gradTol)
		}
	}
}

// TestConv2dBiasGradIsSum checks gb against the sum of grad over N, OH and OW.
func TestConv2dBiasGradIsSum(t *testing.T) {
	c := convCase{2, 2, 5, 7, 3, 2, 3, 2, 1, false}
	x, w, _ := convInputs(7, c)
	out := ops.Conv2d(x, w, nil, c.stride, c.pad)
	g := randN(newRNG(8), 1, out.Shape()...)
	_, _, gb := ops.Conv2dBackward(g, x, w, c.stride, c.pad)
	checkT(t, "Conv2dBackward gb", gb, sh(c.f), ops.Sum(g, 0, 2, 3).Float64s(), 1e-14)
}

func TestConv2dFloat32MatchesFloat64(t *testing.T) {
	for i, c := range convCases {
		x, w, b := convInputs(uint64(300+i), c)
		x32, w32 := x.As(tensor.Float32), w.As(tensor.Float32)
		var b32 *tt
		if b != nil {
			b32 = b.As(tensor.Float32)
		}
		// Compare on the float32-rounded inputs, so only arithmetic differs.
		x, w = x32.As(tensor.Float64), w32.As(tensor.Float64)
		if b != nil {
			b = b32.As(tensor.Float64)
		}
		out32 := ops.Conv2d(x32, w32, b32, c.stride, c.pad)
		out64 := ops.Conv2d(x, w, b, c.stride, c.pad)
		if out32.DType() != tensor.Float32 {
			t.Errorf("Conv2d %v: float32 inputs give %v", c, out32.DType())
		}
		checkT(t, "Conv2d float32 "+c.String(), out32, out64.Shape(), out64.Float64s(), 1e-5)

		g := randN(newRNG(uint64(400+i)), 1, out64.Shape()...)
		g = g.As(tensor.Float32).As(tensor.Float64)
		gx32, gw32, gb32 := ops.Conv2dBackward(g.As(tensor.Float32), x32, w32, c.stride, c.pad)
		gx, gw, gb := ops.Conv2dBackward(g, x, w, c.stride, c.pad)
		for _, p := range []struct {
			name     string
			got, ref *tt
		}{{"gx", gx32, gx}, {"gw", gw32, gw}, {"gb", gb32, gb}} {
			if p.got.DType() != tensor.Float32 {
				t.Errorf("Conv2dBackward %v: %s is %v, want float32", c, p.name, p.got.DType())
			}
			checkT(t, "Conv2dBackward float32 "+p.name+" "+c.String(), p.got, p.ref.Shape(), p.ref.Float64s(), 1e-5)
		}
	}
}

// TestConv2dDeterministic checks that the weight gradient, summed over samples,
// has the same bits on one thread as on all of them, run after run.
func TestConv2dDeterministic(t *testing.T) {
	rng := newRNG(9)
	x := tensor.RandNormal(rng, tensor.Float32, 0, 1, 8, 16, 12, 12)
	w := tensor.RandNormal(rng, tensor.Float32, 0, 0.2, 32, 16, 3, 3)
	g := tensor.RandNormal(rng, tensor.Float32, 0, 1, 8, 32, 12, 12)
	run := func() []*tt {
		out := ops.Conv2d(x, w, nil, 1, 1)
		gx, gw, gb := ops.Conv2dBackward(g, x, w, 1, 1)
		return in(out, gx, gw, gb)
	}
	ref := run()
	prev := runtime.GOMAXPROCS(1)
	one := run()
	runtime.GOMAXPROCS(prev)
	again := run()
	for k, name := range []string{"out", "gx", "gw", "gb"} {
		for _, got := range []*tt{one[k], again[k]} {
			a, b := ref[k].Data32(), got.Data32()
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Errorf("Conv2d %s: element %d differs between runs: %v and %v", name, i, a[i], b[i])
					break
				}
			}
		}
	}
}

func TestConv2dEmptyBatch(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		safely(t, "Conv2d empty batch "+dt.String(), func() {
			x := tensor.Zeros(dt, 0, 2, 5, 7)
			w := tensor.Full(dt, 1, 3, 2, 2, 3)
			b := tensor.Full(dt, 1, 3)
			out := ops.Conv2d(x, w, b, 2, 1)
			if !out.HasShape(0, 3, 3, 4) || out.DType() != dt {
				t.Errorf("Conv2d empty batch: got %v %v, want %v [0 3 3 4]", out.DType(), out.Shape(), dt)
			}
			gx, gw, gb := ops.Conv2dBackward(out, x, w, 2, 1)
			checkT(t, "Conv2dBackward empty batch gx", gx, sh(0, 2, 5, 7), nil, 0)
			checkT(t, "Conv2dBackward empty batch gw", gw, sh(3, 2, 2, 3), repeat(0, 36), 0)
			checkT(t, "Conv2dBackward empty batch gb", gb, sh(3), repeat(0, 3), 0)
		})
	}
	// No channels: the output is the bias alone.
	safely(t, "Conv2d zero channels", func() {
		out := ops.Conv2d(tensor.Zeros(tensor.Float64, 1, 0, 2, 2), tensor.Zeros(tensor.Float64, 2, 0, 1, 1), vec(1, 2), 1, 0)
		checkT(t, "Conv2d zero channels", out, sh(1, 2, 2, 2), []float64{1, 1, 1, 1, 2, 2, 2, 2}, 0)
	})
}

func TestConv2dDoesNotModifyInputs(t *testing.T) {
	c := convCases[4]
	x, w, b := convInputs(11, c)
	xc, wc, bc := x.Clone(), w.Clone(), b.Clone()
	out := ops.Conv2d(x, w, b, c.stride, c.pad)
	g := out.Clone()
	ops.Conv2dBackward(g, x, w, c.stride, c.pad)
	for _, p := range [][2]*tt{{x, xc}, {w, wc}, {b, bc}, {g, out}} {
		checkT(t, "Conv2d input after forward and backward", p[0], p[1].Shape(), p[1].Float64s(), 0)
	}
}

func TestConv2dErrors(t *testing.T) {
	z := func(shape ...int) *tt { return tensor.Zeros(tensor.Float64, shape...) }
	f32 := func(shape ...int) *tt { return tensor.Zeros(tensor.Float32, shape...) }
	cases := []struct {
		op, desc string
		mentions []string
		fn       func()
	}{
		{"Conv2d", "channel mismatch", []string{"[2 3 5 5]", "[4 2 3 3]"},
			func() { ops.Conv2d(z(2, 3, 5, 5), z(4, 2, 3, 3), nil, 1, 0) }},
		{"Conv2d", "kernel larger than the input", []string{"[1 1 2 5]", "[1 1 3 3]"},
			func() { ops.Conv2d(z(1, 1, 2, 5), z(1, 1, 3, 3), nil, 1, 0) }},
		{"Conv2d", "kernel larger than the padded input", []string{"[1 1 4 4]", "[1 1 3 7]"},
			func() { ops.Conv2d(z(1, 1, 4, 4), z(1, 1, 3, 7), nil, 1, 1) }},
		{"Conv2d", "bias length", []string{"[1 2 4 4]", "[3 2 2 2]", "[2]"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), z(2), 1, 0) }},
		{"Conv2d", "bias rank", []string{"[1 2 4 4]", "[3 2 2 2]", "[1 3]"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), z(1, 3), 1, 0) }},
		{"Conv2d", "stride 0", []string{"[1 2 4 4]", "[3 2 2 2]", "stride 0"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), nil, 0, 0) }},
		{"Conv2d", "negative stride", []string{"[1 2 4 4]", "[3 2 2 2]", "stride -1"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), nil, -1, 0) }},
		{"Conv2d", "negative padding", []string{"[1 2 4 4]", "[3 2 2 2]", "padding -1"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), nil, 1, -1) }},
		{"Conv2d", "huge padding", []string{"[1 2 4 4]", "[3 2 2 2]"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), nil, 1, math.MaxInt/2) }},
		{"Conv2d", "padding too large to hold the output", []string{"[1 2 4 4]", "[3 2 2 2]"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), nil, 1, 1<<40) }},
		{"Conv2d", "empty kernel", []string{"[1 2 4 4]", "[3 2 0 2]"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 0, 2), nil, 1, 0) }},
		{"Conv2d", "x of rank 3", []string{"[2 4 4]", "[3 2 2 2]"},
			func() { ops.Conv2d(z(2, 4, 4), z(3, 2, 2, 2), nil, 1, 0) }},
		{"Conv2d", "w of rank 2", []string{"[1 2 4 4]", "[3 8]"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 8), nil, 1, 0) }},
		{"Conv2d", "mixed dtypes x w", []string{"[1 2 4 4]", "[3 2 2 2]"},
			func() { ops.Conv2d(f32(1, 2, 4, 4), z(3, 2, 2, 2), nil, 1, 0) }},
		{"Conv2d", "mixed dtypes bias", []string{"[1 2 4 4]", "[3 2 2 2]", "[3]"},
			func() { ops.Conv2d(z(1, 2, 4, 4), z(3, 2, 2, 2), f32(3), 1, 0) }},
		{"Conv2dBackward", "grad shape", []string{"[1 3 2 2]", "[1 2 4 4]", "[3 2 2 2]", "[1 3 3 3]"},
			func() { ops.Conv2dBackward(z(1, 3, 2, 2), z(1, 2, 4, 4), z(3, 2, 2, 2), 1, 0) }},
		{"Conv2dBackward", "mixed dtypes", []string{"[1 3 3 3]", "[1 2 4 4]", "[3 2 2 2]"},
			func() { ops.Conv2dBackward(f32(1, 3, 3, 3), z(1, 2, 4, 4), z(3, 2, 2, 2), 1, 0) }},
		{"Conv2dBackward", "channel mismatch", []string{"[2 3 5 5]", "[4 2 3 3]"},
			func() { ops.Conv2dBackward(z(2, 4, 3, 3), z(2, 3, 5, 5), z(4, 2, 3, 3), 1, 0) }},
		{"Conv2dBackward", "kernel larger than the padded input", []string{"[1 1 2 2]", "[1 1 5 5]"},
			func() { ops.Conv2dBackward(z(1, 1, 1, 1), z(1, 1, 2, 2), z(1, 1, 5, 5), 1, 1) }},
		{"Conv2dBackward", "stride 0", []string{"stride 0"},
			func() { ops.Conv2dBackward(z(1, 3, 3, 3), z(1, 2, 4, 4), z(3, 2, 2, 2), 0, 0) }},
		{"Conv2dBackward", "negative padding", []string{"padding -2"},
			func() { ops.Conv2dBackward(z(1, 3, 3, 3), z(1, 2, 4, 4), z(3, 2, 2, 2), 1, -2) }},
	}
	for _, c := range cases {
		expectError(t, c.op+" "+c.desc, "ops."+c.op+":", c.mentions, c.fn)
	}
}

// TestConv2dWeightGradSampleOrder checks that gw has the bits of the samples'
// weight gradients, each computed alone, added in float32 in sample order;
// the second case spans several of the groups the backward works in.
func TestConv2dWeightGradSampleOrder(t *testing.T) {
	for _, c := range []convCase{
		{5, 3, 6, 5, 4, 3, 2, 1, 1, false},
		{5, 2048, 4, 4, 32, 4, 4, 1, 0, false}, // F·C·KH·KW = 2^20
	} {
		rng := newRNG(12)
		x := tensor.RandNormal(rng, tensor.Float32, 0, 1, c.n, c.c, c.h, c.w)
		w := tensor.RandNormal(rng, tensor.Float32, 0, 0.2, c.f, c.c, c.kh, c.kw)
		out := ops.Conv2d(x, w, nil, c.stride, c.pad)
		os := out.Shape()
		g := tensor.RandNormal(rng, tensor.Float32, 0, 1, os...)
		_, gw, _ := ops.Conv2dBackward(g, x, w, c.stride, c.pad)

		xn, gn := c.c*c.h*c.w, os[1]*os[2]*os[3]
		var want []float32
		for i := range c.n {
			xi := tensor.FromFloat32s(x.Data32()[i*xn:(i+1)*xn], 1, c.c, c.h, c.w)
			gi := tensor.FromFloat32s(g.Data32()[i*gn:(i+1)*gn], 1, os[1], os[2], os[3])
			_, gwi, _ := ops.Conv2dBackward(gi, xi, w, c.stride, c.pad)
			if want == nil {
				want = gwi.Float32s()
				continue
			}
			for j, v := range gwi.Data32() {
				want[j] += v
			}
		}
		for j, v := range gw.Data32() {
			if math.Float32bits(v) != math.Float32bits(want[j]) {
				t.Errorf("Conv2dBackward %v: gw element %d is %v, want %v (samples added in order)", c, j, v, want[j])
				break
			}
		}
	}
}
