package nn_test

// Tests of the image layers beyond their gradients (grad_test.go) and the
// Layer contract (layer_test.go): forward values against hand-computed ones
// and a direct loop, output shapes, misfits that panic naming the layer and
// the shapes, and the initializers' fans.

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// conv2dRef is the definition of torch.nn.functional.conv2d as loops.
func conv2dRef(x, w, b *tt, stride, pad int) *tt {
	n, c, h, wd := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
	f, kh, kw := w.Dim(0), w.Dim(2), w.Dim(3)
	oh, ow := (h+2*pad-kh)/stride+1, (wd+2*pad-kw)/stride+1
	y := tensor.Zeros(tensor.Float64, n, f, oh, ow)
	for s := range n {
		for o := range f {
			for i := range oh {
				for j := range ow {
					v := b.At(o)
					for ch := range c {
						for u := range kh {
							for r := range kw {
								hi, wi := i*stride-pad+u, j*stride-pad+r
								if hi >= 0 && hi < h && wi >= 0 && wi < wd {
									v += x.At(s, ch, hi, wi) * w.At(o, ch, u, r)
								}
							}
						}
					}
					y.Set(v, s, o, i, j)
				}
			}
		}
	}
	return y
}

func TestConv2dForward(t *testing.T) {
	// One 3×3 plane 1..9, the filter x[i,j] − x[i+1,j+1] and bias 0.5, with
	// padding 1 and stride 2: the padded 5×5 input has 2×2 windows at rows
	// and columns −1 and 1.
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		l := mustConv2d(t, dt, 1, 1, 2, 2, 2, 1, 1)
		l.W.CopyFrom(tensor.FromFloat64s(dt, []float64{1, 0, 0, -1}, 1, 1, 2, 2))
		l.B.Fill(0.5)
		x := tensor.FromFloat64s(dt, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 1, 3, 3)
		got := l.Forward(nn.Pass{}, x)
		want := tensor.FromFloat64s(dt, []float64{-1 + 0.5, -3 + 0.5, -7 + 0.5, 5 - 9 + 0.5}, 1, 1, 2, 2)
		if !sameBits(got, want) {
			t.Errorf("%v Conv2d(W=%v, b=0.5, stride 2, padding 1)(%v) = %v, want %v", dt, l.W, x, got, want)
		}
	}

	// Several samples, channels and filters, against the loops.
	for _, c := range []struct{ n, c, f, h, w, kh, kw, stride, pad int }{
		{1, 1, 1, 1, 1, 1, 1, 1, 0},
		{2, 3, 4, 5, 7, 3, 2, 1, 1},
		{3, 2, 5, 8, 6, 3, 3, 2, 1},
		{2, 4, 3, 6, 9, 1, 4, 3, 2},
	} {
		name := fmt.Sprintf("n=%d c=%d f=%d %d×%d kernel %d×%d stride %d padding %d", c.n, c.c, c.f, c.h, c.w, c.kh, c.kw, c.stride, c.pad)
		rng := newRNG(uint64(c.n + 10*c.c + 100*c.f))
		l := mustConv2d(t, tensor.Float64, c.c, c.f, c.kh, c.kw, c.stride, c.pad, 2)
		l.B.CopyFrom(randN(rng, tensor.Float64, 1, c.f))
		x := randN(rng, tensor.Float64, 1, c.n, c.c, c.h, c.w)
		got := l.Forward(nn.Pass{}, x)
		want := conv2dRef(x, l.W, l.B, c.stride, c.pad)
		if d := maxDiff(got, want); d > 1e-12 {
			t.Errorf("%s: Forward differs from the loops by %g (shapes %v, %v)", name, d, got.Shape(), want.Shape())
		}
		if out, err := l.OutShape(x.Shape()[1:]); err != nil || !tensor.EqualShapes(append([]int{c.n}, out...), got.Shape()) {
			t.Errorf("%s: OutShape(%v) = %v, %v; Forward gave %v", name, x.Shape()[1:], out, err, got.Shape())
		}
	}
}

func TestConv2dOutShape(t *testing.T) {
	for _, c := range []struct {
		c, f, kh, kw, stride, pad int
		in, want                  []int
		err                       string // part of the error, "" for none
	}{
		{3, 8, 3, 3, 1, 1, []int{3, 32, 32}, []int{8, 32, 32}, ""},
		{3, 8, 3, 3, 2, 1, []int{3, 32, 32}, []int{8, 16, 16}, ""},
		{1, 6, 5, 5, 1, 0, []int{1, 28, 28}, []int{6, 24, 24}, ""},
		{3, 8, 5, 3, 2, 0, []int{3, 7, 4}, []int{8, 2, 1}, ""},
		{2, 2, 3, 3, 1, 1, []int{2, 1, 1}, []int{2, 1, 1}, ""},
		{3, 8, 3, 3, 1, 1, []int{2, 32, 32}, nil, "2 channels, want 3"},
		{3, 8, 5, 3, 1, 0, []int{3, 4, 7}, nil, "kernel 5×3 is larger than the padded input 4×7"},
		{3, 8, 5, 3, 1, 1, []int{3, 2, 7}, nil, "kernel 5×3 is larger than the padded input 4×9"},
		{3, 8, 3, 3, 1, 1, []int{3, 32}, nil, "not [C H W]"},
		{3, 8, 3, 3, 1, 1, []int{1, 3, 32, 32}, nil, "not [C H W]"},
	} {
		l := mustConv2d(t, tensor.Float32, c.c, c.f, c.kh, c.kw, c.stride, c.pad, 1)
		got, err := l.OutShape(c.in)
		if c.err == "" {
			if err != nil || !tensor.EqualShapes(got, c.want) {
				t.Errorf("Conv2d(%d→%d, %d×%d, stride %d, padding %d).OutShape(%v) = %v, %v; want %v",
					c.c, c.f, c.kh, c.kw, c.stride, c.pad, c.in, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "nn.Conv2d: ") ||
			!strings.Contains(err.Error(), fmt.Sprint(c.in)) {
			t.Errorf("Conv2d(%d→%d, %d×%d, padding %d).OutShape(%v) = %v, %v; want an nn.Conv2d error naming %v and containing %q",
				c.c, c.f, c.kh, c.kw, c.pad, c.in, got, err, c.in, c.err)
		}
	}
}

// wantPanic runs f and fails unless it panics with a message that contains
// every one of parts.
func wantPanic(t *testing.T, name string, f func(), parts ...string) {
	t.Helper()
	msg, ok := panicText(f)
	if !ok {
		t.Errorf("%s: did not panic", name)
		return
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%s: panicked with %q, want it to contain %q", name, msg, p)
		}
	}
}

func TestConv2dMisfitPanics(t *testing.T) {
	f64 := tensor.Float64
	l := mustConv2d(t, f64, 3, 4, 3, 2, 1, 0, 1)
	wantPanic(t, "3-D input", func() { l.Forward(nn.Pass{}, tensor.Zeros(f64, 3, 5, 5)) }, "nn.Conv2d: ", "[3 5 5]", "[4 3 3 2]", "not [N C H W]")
	wantPanic(t, "wrong channels", func() { l.Forward(nn.Pass{}, tensor.Zeros(f64, 2, 2, 5, 5)) }, "nn.Conv2d: ", "[2 2 5 5]", "2 channels, want 3")
	wantPanic(t, "wrong dtype", func() { l.Forward(nn.Pass{}, tensor.Zeros(tensor.Float32, 2, 3, 5, 5)) }, "nn.Conv2d: ", "float32", "float64")
	wantPanic(t, "input smaller than the kernel", func() { l.Forward(nn.Pass{}, tensor.Zeros(f64, 2, 3, 2, 5)) }, "nn.Conv2d: ", "[2 3 2 5]", "kernel 3×2")
	p := nn.Pass{Train: true}
	l.Forward(p, tensor.Zeros(f64, 2, 3, 5, 5)) // output [2 4 3 4]
	wantPanic(t, "wrong dy", func() { l.Backward(p, tensor.Zeros(f64, 2, 4, 4, 4), true) }, "nn.Conv2d: ", "dy", "[2 4 4 4]", "[2 4 3 4]")
}

func TestNewConv2d(t *testing.T) {
	for _, c := range []struct {
		c, f, kh, kw, stride, pad int
		init                      nn.Init
	}{
		{0, 2, 3, 3, 1, 0, nn.HeNormal},
		{2, 0, 3, 3, 1, 0, nn.HeNormal},
		{2, 2, 0, 3, 1, 0, nn.HeNormal},
		{2, 2, 3, -1, 1, 0, nn.HeNormal},
		{2, 2, 3, 3, 0, 0, nn.HeNormal},
		{2, 2, 3, 3, 1, -1, nn.HeNormal},
		{2, 2, 3, 3, 1, 0, "bogus"},
	} {
		if _, err := nn.NewConv2d(tensor.Float32, c.c, c.f, c.kh, c.kw, c.stride, c.pad, c.init, newRNG(1)); err == nil {
			t.Errorf("NewConv2d(c=%d, f=%d, %d×%d, stride %d, padding %d, %q): got nil error, want one", c.c, c.f, c.kh, c.kw, c.stride, c.pad, c.init)
		}
	}

	// fan_in = C·KH·KW = 144 and fan_out = F·KH·KW = 288, as torch.nn.init
	// has them for a [32, 16, 3, 3] weight: the largest |w| of 4608 draws
	// lies just inside each uniform bound, and the bias follows TorchDefault.
	const fanIn, fanOut = 16 * 3 * 3, 32 * 3 * 3
	for _, c := range []struct {
		init        nn.Init
		bound, bias float64 // bias 0: all zero
	}{
		{nn.XavierUniform, math.Sqrt(6.0 / (fanIn + fanOut)), 0},
		{nn.HeUniform, math.Sqrt(6.0 / fanIn), 0},
		{nn.TorchDefault, 1 / math.Sqrt(fanIn), 1 / math.Sqrt(fanIn)},
	} {
		l, err := nn.NewConv2d(tensor.Float64, 16, 32, 3, 3, 1, 1, c.init, newRNG(9))
		if err != nil {
			t.Fatal(err)
		}
		if !l.W.HasShape(32, 16, 3, 3) || !l.B.HasShape(32) || !l.GW.HasShape(32, 16, 3, 3) || !l.GB.HasShape(32) {
			t.Fatalf("NewConv2d(16, 32, 3×3): W %v, B %v, GW %v, GB %v", l.W.Shape(), l.B.Shape(), l.GW.Shape(), l.GB.Shape())
		}
		if m := maxAbs(l.W); m > c.bound || m < 0.98*c.bound {
			t.Errorf("%s: max |w| = %v, want just inside %v", c.init, m, c.bound)
		}
		if m := maxAbs(l.B); (c.bias == 0 && m != 0) || m > c.bias || m < 0.8*c.bias {
			t.Errorf("%s: max |b| = %v, want within and near %v", c.init, m, c.bias)
		}
	}
	l, err := nn.NewConv2d(tensor.Float64, 16, 32, 3, 3, 1, 1, nn.HeNormal, newRNG(9))
	if err != nil {
		t.Fatal(err)
	}
	var sq float64
	for _, v := range l.W.Float64s() {
		sq += v * v
	}
	if std, want := math.Sqrt(sq/float64(l.W.Size())), math.Sqrt(2.0/fanIn); math.Abs(std/want-1) > 0.05 {
		t.Errorf("he_normal: std %v, want %v", std, want)
	}
}

func maxAbs(x *tt) float64 {
	m := 0.0
	for _, v := range x.Float64s() {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// TestConv2dSplitInvariant: the weight and bias gradients of 70 samples are
// the same bits whole or as micro-batches cut at ChunkRows, as Linear's.
func TestConv2dSplitInvariant(t *testing.T) {
	const n = 70
	rng := newRNG(17)
	x := randN(rng, tensor.Float32, 1, n, 2, 5, 5)
	dy := randN(rng, tensor.Float32, 1, n, 3, 3, 3)
	whole := mustConv2d(t, tensor.Float32, 2, 3, 3, 3, 2, 1, 5)
	p := nn.Pass{Step: 1, Train: true}
	whole.Forward(p, x)
	wantDX := whole.Backward(p, dy, true)

	split := mustConv2d(t, tensor.Float32, 2, 3, 3, 3, 2, 1, 5)
	var dxs []float32
	for m, sp := range nn.SplitRows(n, 3) {
		p := nn.Pass{Step: 1, Micro: m, Row: sp.Lo, Train: true}
		split.Forward(p, nn.Rows(x, sp.Lo, sp.Hi))
		dxs = append(dxs, split.Backward(p, nn.Rows(dy, sp.Lo, sp.Hi), true).Float32s()...)
	}
	if !sameBits(split.GW, whole.GW) || !sameBits(split.GB, whole.GB) {
		t.Errorf("gradients of 3 micro-batches differ from one's (max diff %g, %g)", maxDiff(split.GW, whole.GW), maxDiff(split.GB, whole.GB))
	}
	if !sameBits(tensor.FromFloat32s(dxs, wantDX.Shape()...), wantDX) {
		t.Errorf("dx of 3 micro-batches differs from one's")
	}
}

func TestPool2dForward(t *testing.T) {
	// One 4×4 plane 1..16.
	plane := make([]float64, 16)
	for i := range plane {
		plane[i] = float64(i + 1)
	}
	for _, c := range []struct {
		max          bool
		kernel, strd int
		want         []float64 // 2×2
	}{
		{true, 2, 0, []float64{6, 8, 14, 16}},
		{false, 2, 0, []float64{3.5, 5.5, 11.5, 13.5}},
		{true, 3, 1, []float64{11, 12, 15, 16}},
		{false, 3, 1, []float64{6, 7, 10, 11}}, // (1+2+3+5+6+7+9+10+11)/9 = 6
		{true, 2, 2, []float64{6, 8, 14, 16}},
		{false, 3, 3, []float64{6}}, // one whole window: the rest is dropped
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			var l interface {
				nn.Layer
				OutShape([]int) ([]int, error)
			} = mustAvgPool2d(t, c.kernel, c.strd)
			if c.max {
				l = mustMaxPool2d(t, c.kernel, c.strd)
			}
			x := tensor.FromFloat64s(dt, plane, 1, 1, 4, 4)
			got := l.Forward(nn.Pass{}, x)
			side := int(math.Sqrt(float64(len(c.want))))
			want := tensor.FromFloat64s(dt, c.want, 1, 1, side, side)
			if !sameBits(got, want) {
				t.Errorf("%v %s(kernel %d, stride %d)(1..16) = %v, want %v", dt, l.Kind(), c.kernel, c.strd, got, want)
			}
			if out, err := l.OutShape([]int{1, 4, 4}); err != nil || !tensor.EqualShapes(out, []int{1, side, side}) {
				t.Errorf("%s(kernel %d, stride %d).OutShape([1 4 4]) = %v, %v; want [1 %d %d]", l.Kind(), c.kernel, c.strd, out, err, side, side)
			}
		}
	}

	// Ties send the whole gradient to the window's first maximum in
	// row-major order, as PyTorch's CPU kernel.
	l := mustMaxPool2d(t, 2, 2)
	p := nn.Pass{Train: true}
	l.Forward(p, tensor.FromFloat64s(tensor.Float64, []float64{1, 3, 3, 3}, 1, 1, 2, 2))
	dx := l.Backward(p, tensor.Full(tensor.Float64, 5, 1, 1, 1, 1), true)
	if want := tensor.FromFloat64s(tensor.Float64, []float64{0, 5, 0, 0}, 1, 1, 2, 2); !sameBits(dx, want) {
		t.Errorf("MaxPool2d backward of a tie: dx = %v, want %v", dx, want)
	}
}

func TestPool2dShapes(t *testing.T) {
	for _, c := range []struct {
		kernel, stride int
		in, want       []int
		err            string
	}{
		{2, 0, []int{6, 28, 28}, []int{6, 14, 14}, ""},
		{2, 2, []int{3, 7, 5}, []int{3, 3, 2}, ""},
		{3, 1, []int{1, 3, 8}, []int{1, 1, 6}, ""},
		{3, 2, []int{4, 9, 9}, []int{4, 4, 4}, ""},
		{3, 2, []int{4, 2, 9}, nil, "kernel 3×3 is larger than the input 2×9"},
		{2, 0, []int{4, 9}, nil, "not [C H W]"},
	} {
		for _, l := range []interface {
			Kind() string
			OutShape([]int) ([]int, error)
		}{mustMaxPool2d(t, c.kernel, c.stride), mustAvgPool2d(t, c.kernel, c.stride)} {
			got, err := l.OutShape(c.in)
			if c.err == "" {
				if err != nil || !tensor.EqualShapes(got, c.want) {
					t.Errorf("%s(kernel %d, stride %d).OutShape(%v) = %v, %v; want %v", l.Kind(), c.kernel, c.stride, c.in, got, err, c.want)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), fmt.Sprint(c.in)) {
				t.Errorf("%s(kernel %d, stride %d).OutShape(%v) = %v, %v; want an error naming %v and containing %q", l.Kind(), c.kernel, c.stride, c.in, got, err, c.in, c.err)
			}
		}
	}

	if l := mustMaxPool2d(t, 3, 0); l.Stride != 3 {
		t.Errorf("NewMaxPool2d(3, 0).Stride = %d, want the kernel 3", l.Stride)
	}
	if l := mustAvgPool2d(t, 3, 0); l.Stride != 3 {
		t.Errorf("NewAvgPool2d(3, 0).Stride = %d, want the kernel 3", l.Stride)
	}
	for _, c := range [][2]int{{0, 1}, {-1, 0}, {2, -1}} {
		if _, err := nn.NewMaxPool2d(c[0], c[1]); err == nil || !strings.HasPrefix(err.Error(), "nn.NewMaxPool2d: ") {
			t.Errorf("NewMaxPool2d(%d, %d): error %v, want an nn.NewMaxPool2d error", c[0], c[1], err)
		}
		if _, err := nn.NewAvgPool2d(c[0], c[1]); err == nil || !strings.HasPrefix(err.Error(), "nn.NewAvgPool2d: ") {
			t.Errorf("NewAvgPool2d(%d, %d): error %v, want an nn.NewAvgPool2d error", c[0], c[1], err)
		}
	}
}

func TestPool2dMisfitPanics(t *testing.T) {
	f64 := tensor.Float64
	for _, l := range []nn.Layer{mustMaxPool2d(t, 3, 2), mustAvgPool2d(t, 3, 2)} {
		name := map[string]string{"maxpool2d": "nn.MaxPool2d: ", "avgpool2d": "nn.AvgPool2d: "}[l.Kind()]
		wantPanic(t, l.Kind()+" 2-D input", func() { l.Forward(nn.Pass{}, tensor.Zeros(f64, 4, 9)) }, name, "[4 9]", "not [N C H W]")
		wantPanic(t, l.Kind()+" small plane", func() { l.Forward(nn.Pass{}, tensor.Zeros(f64, 1, 2, 9, 2)) }, name, "[1 2 9 2]", "kernel 3×3")
		p := nn.Pass{Train: true}
		l.Forward(p, tensor.Zeros(f64, 2, 2, 7, 7)) // output [2 2 3 3]
		wantPanic(t, l.Kind()+" wrong dy", func() { l.Backward(p, tensor.Zeros(f64, 2, 2, 3, 4), true) }, name, "dy", "[2 2 3 4]", "[2 2 3 3]")
		l.Forward(p, tensor.Zeros(f64, 2, 2, 7, 7))
		wantPanic(t, l.Kind()+" dy of another dtype", func() { l.Backward(p, tensor.Zeros(tensor.Float32, 2, 2, 3, 3), true) }, name, "float32")
	}
}

// TestBatchNormRunningStats checks the training output and the running
// statistics after two training forwards against numbers worked out by hand
// from PyTorch's update, which tracks the unbiased variance:
// running = 0.9·running + 0.1·batch statistic.
func TestBatchNormRunningStats(t *testing.T) {
	for _, c := range []struct {
		name     string
		x        []float64
		shape    []int
		y        []float64    // the training output, gamma 1 and beta 0
		mean, vr [2][]float64 // after the first and the second forward
	}{
		{
			// channel 0: 1, 3: mean 2, variance 1 (biased), 2 (unbiased)
			// channel 1: 10, 20: mean 15, variance 25, 50
			name: "[N C]", x: []float64{1, 10, 3, 20}, shape: []int{2, 2},
			y:    []float64{-1 / math.Sqrt(1+1e-5), -5 / math.Sqrt(25+1e-5), 1 / math.Sqrt(1+1e-5), 5 / math.Sqrt(25+1e-5)},
			mean: [2][]float64{{0.2, 1.5}, {0.38, 2.85}},  // 0 + 0.1·2, 0.9·0.2 + 0.1·2, ...
			vr:   [2][]float64{{1.1, 5.9}, {1.19, 10.31}}, // 0.9·1 + 0.1·2, 0.9·1.1 + 0.1·2, ...
		},
		{
			// channel 0: 1, 2, 3, 6: mean 3, squares 4+1+0+9 = 14, variance 3.5, 14/3
			// channel 1: 0, 0, 4, 4: mean 2, squares 16, variance 4, 16/3
			name: "[N C H W]", x: []float64{1, 2, 0, 0, 3, 6, 4, 4}, shape: []int{2, 2, 1, 2},
			y: []float64{-2 / math.Sqrt(3.5+1e-5), -1 / math.Sqrt(3.5+1e-5), -2 / math.Sqrt(4+1e-5), -2 / math.Sqrt(4+1e-5),
				0, 3 / math.Sqrt(3.5+1e-5), 2 / math.Sqrt(4+1e-5), 2 / math.Sqrt(4+1e-5)},
			mean: [2][]float64{{0.3, 0.2}, {0.57, 0.38}},
			vr:   [2][]float64{{0.9 + 1.4/3, 0.9 + 1.6/3}, {0.81 + 0.9*1.4/3 + 1.4/3, 0.81 + 0.9*1.6/3 + 1.6/3}},
		},
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			tol := 1e-14
			if dt == tensor.Float32 {
				tol = 1e-6
			}
			l := mustBatchNorm(t, dt, 2)
			x := tensor.FromFloat64s(dt, c.x, c.shape...)
			for step := range 2 {
				y := l.Forward(nn.Pass{Step: step + 1, Train: true}, x)
				if d := maxDiff(y, tensor.FromFloat64s(tensor.Float64, c.y, c.shape...)); step == 0 && d > tol {
					t.Errorf("%s %v: training output %v, want %v (max diff %g)", c.name, dt, y, c.y, d)
				}
				l.Backward(nn.Pass{Step: step + 1, Train: true}, tensor.Zeros(dt, c.shape...), false)
				if d := maxDiff(l.RunningMean, tensor.FromFloat64s(tensor.Float64, c.mean[step], 2)); d > tol {
					t.Errorf("%s %v: running mean after %d training forwards = %v, want %v", c.name, dt, step+1, l.RunningMean, c.mean[step])
				}
				if d := maxDiff(l.RunningVar, tensor.FromFloat64s(tensor.Float64, c.vr[step], 2)); d > tol {
					t.Errorf("%s %v: running var after %d training forwards = %v, want %v", c.name, dt, step+1, l.RunningVar, c.vr[step])
				}
			}
			if l.RunningMean.DType() != dt || l.RunningVar.DType() != dt {
				t.Errorf("%v layer: running statistics are %v and %v", dt, l.RunningMean.DType(), l.RunningVar.DType())
			}
			// Evaluation uses them and leaves them be.
			mean, vr := l.RunningMean.Clone(), l.RunningVar.Clone()
			l.Forward(nn.Pass{}, x)
			if !sameBits(mean, l.RunningMean) || !sameBits(vr, l.RunningVar) {
				t.Errorf("%s %v: an evaluation forward changed the running statistics", c.name, dt)
			}
		}
	}
}

func TestBatchNormEvaluate(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		l := mustBatchNorm(t, dt, 2)
		if ps := l.Params(); len(ps) != 2 || ps[0].Name != "weight" || ps[1].Name != "bias" || ps[0].Value.At(0) != 1 || ps[1].Value.At(1) != 0 {
			t.Errorf("NewBatchNorm(%v, 2).Params() = %+v, want weight 1 and bias 0", dt, ps)
		}
		bs := l.Buffers()
		if len(bs) != 2 || bs[0].Name != "running_mean" || bs[1].Name != "running_var" || bs[0].Value != l.RunningMean || bs[1].Value != l.RunningVar {
			t.Fatalf("Buffers() = %+v, want running_mean and running_var", bs)
		}
		if l.RunningMean.At(1) != 0 || l.RunningVar.At(1) != 1 || l.Eps != 1e-5 || l.Momentum != 0.1 {
			t.Errorf("NewBatchNorm: running mean %v, var %v, eps %v, momentum %v; want 0, 1, 1e-5, 0.1", l.RunningMean, l.RunningVar, l.Eps, l.Momentum)
		}
		l.RunningMean.CopyFrom(tensor.FromFloat64s(dt, []float64{0.5, -1}, 2))
		l.RunningVar.CopyFrom(tensor.FromFloat64s(dt, []float64{4, 0.25}, 2))
		l.Gamma.CopyFrom(tensor.FromFloat64s(dt, []float64{2, 3}, 2))
		l.Beta.CopyFrom(tensor.FromFloat64s(dt, []float64{1, 0}, 2))
		// One sample suffices in evaluation; [1 2 1 2] and [3 2] alike.
		i0, i1 := 1/math.Sqrt(4+1e-5), 1/math.Sqrt(0.25+1e-5)
		for _, c := range []struct {
			x, want []float64
			shape   []int
		}{
			{[]float64{1.5, 0}, []float64{1 + 2*i0, 3 * i1}, []int{1, 2}},
			{[]float64{1.5, -0.5, 0, 1}, []float64{1 + 2*i0, 1 - 2*i0, 3 * i1, 6 * i1}, []int{1, 2, 1, 2}},
			{[]float64{0.5, -1, 2.5, -2, -1.5, 1}, []float64{1, 0, 1 + 4*i0, -3 * i1, 1 - 4*i0, 6 * i1}, []int{3, 2}},
		} {
			got := l.Forward(nn.Pass{Micro: 2}, tensor.FromFloat64s(dt, c.x, c.shape...))
			tol := 1e-14
			if dt == tensor.Float32 {
				tol = 1e-6
			}
			if d := maxDiff(got, tensor.FromFloat64s(tensor.Float64, c.want, c.shape...)); d > tol || got.DType() != dt {
				t.Errorf("%v evaluation of %v %v = %v, want %v", dt, c.shape, c.x, got, c.want)
			}
		}
		if l.InFlight() != 0 {
			t.Errorf("InFlight() = %d after evaluation forwards, want 0", l.InFlight())
		}
	}
}

func TestBatchNormMisfitPanics(t *testing.T) {
	f64 := tensor.Float64
	l := mustBatchNorm(t, f64, 3)
	train := nn.Pass{Train: true}
	wantPanic(t, "1-D input", func() { l.Forward(train, tensor.Zeros(f64, 3)) }, "nn.BatchNorm: ", "[3]", "3 channels")
	wantPanic(t, "wrong channels", func() { l.Forward(nn.Pass{}, tensor.Zeros(f64, 2, 4, 5, 5)) }, "nn.BatchNorm: ", "[2 4 5 5]", "3 channels")
	wantPanic(t, "wrong dtype", func() { l.Forward(train, tensor.Zeros(tensor.Float32, 2, 3)) }, "nn.BatchNorm: ", "float32", "float64")
	wantPanic(t, "one value per channel", func() { l.Forward(train, tensor.Zeros(f64, 1, 3, 1, 1)) }, "nn.BatchNorm: ", "more than one value per channel", "[1 3 1 1]")
	l.Forward(train, tensor.Zeros(f64, 2, 3, 2, 2))
	wantPanic(t, "wrong dy", func() { l.Backward(train, tensor.Zeros(f64, 2, 3, 4), true) }, "nn.BatchNorm: ", "dy", "[2 3 4]", "[2 3 2 2]")
	if _, err := nn.NewBatchNorm(f64, 0); err == nil {
		t.Errorf("NewBatchNorm(0): got nil error, want one")
	}
}

func TestFlatten(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		vals := make([]float64, 24)
		for i := range vals {
			vals[i] = float64(i)
		}
		l := nn.NewFlatten()
		p := nn.Pass{Train: true}
		x := tensor.FromFloat64s(dt, vals, 2, 3, 2, 2)
		y := l.Forward(p, x)
		if want := tensor.FromFloat64s(dt, vals, 2, 12); !sameBits(y, want) {
			t.Errorf("%v Flatten(%v) = %v, want %v", dt, x.Shape(), y, want)
		}
		y.Set(-1, 0, 0)
		if x.At(0, 0, 0, 0) != 0 {
			t.Errorf("%v Flatten returned a view of its input", dt)
		}
		dy := tensor.FromFloat64s(dt, vals, 2, 12)
		if dx, want := l.Backward(p, dy, true), tensor.FromFloat64s(dt, vals, 2, 3, 2, 2); !sameBits(dx, want) {
			t.Errorf("%v Flatten backward of %v = %v, want %v", dt, dy.Shape(), dx, want)
		}
		l.Forward(p, x)
		if dx := l.Backward(p, dy, false); dx != nil || l.InFlight() != 0 {
			t.Errorf("Flatten Backward(needDX=false) = %v with %d in flight, want nil and 0", dx, l.InFlight())
		}
	}

	l := nn.NewFlatten()
	for _, c := range []struct{ in, want []int }{{[]int{3, 4, 5}, []int{60}}, {[]int{7}, []int{7}}, {[]int{16, 1, 1}, []int{16}}} {
		if got, err := l.OutShape(c.in); err != nil || !tensor.EqualShapes(got, c.want) {
			t.Errorf("Flatten.OutShape(%v) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if _, err := l.OutShape(nil); err == nil || !strings.HasPrefix(err.Error(), "nn.Flatten: ") {
		t.Errorf("Flatten.OutShape([]) error = %v, want an nn.Flatten error", err)
	}
	f64, p := tensor.Float64, nn.Pass{Train: true}
	wantPanic(t, "Flatten of a 1-D input", func() { l.Forward(p, tensor.Zeros(f64, 5)) }, "nn.Flatten: ", "[5]")
	l.Forward(p, tensor.Zeros(f64, 2, 3, 4))
	wantPanic(t, "Flatten backward of a wrong dy", func() { l.Backward(p, tensor.Zeros(f64, 2, 11), true) }, "nn.Flatten: ", "[2 11]", "[2 12]", "[2 3 4]")
}
