package opstest_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/ops/opstest"
	"github.com/pipetrain/pipetrain/tensor"
)

// fakeTB records failures instead of failing the test. It embeds testing.TB
// only to satisfy the interface's unexported method; the methods CheckGrad
// may call are overridden.
type fakeTB struct {
	testing.TB
	msgs   []string
	failed bool
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Error(args ...any)                 { f.failed = true; f.msgs = append(f.msgs, fmt.Sprint(args...)) }
func (f *fakeTB) Errorf(format string, args ...any) { f.Error(fmt.Sprintf(format, args...)) }
func (f *fakeTB) Fatal(args ...any)                 { f.Error(args...); panic("fakeTB.Fatal") }
func (f *fakeTB) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }
func (f *fakeTB) Log(args ...any)                   {}
func (f *fakeTB) Logf(format string, args ...any)   {}
func (f *fakeTB) Failed() bool                      { return f.failed }
func (f *fakeTB) Name() string                      { return "fakeTB" }

// mapElems applies fn to every element pair of same-shaped float64 tensors.
func mapElems(a, b *tensor.Tensor, fn func(x, y float64) float64) *tensor.Tensor {
	av, bv := a.Float64s(), b.Float64s()
	out := make([]float64, len(av))
	for i := range av {
		out[i] = fn(av[i], bv[i])
	}
	return tensor.FromFloat64s(tensor.Float64, out, a.Shape()...)
}

// f(x, y) = x² sin(y), elementwise.
func sqSin(in []*tensor.Tensor) *tensor.Tensor {
	return mapElems(in[0], in[1], func(x, y float64) float64 { return x * x * math.Sin(y) })
}

func sqSinBackward(g *tensor.Tensor, in []*tensor.Tensor, _ *tensor.Tensor) []*tensor.Tensor {
	gx := mapElems(in[0], in[1], func(x, y float64) float64 { return 2 * x * math.Sin(y) })
	gy := mapElems(in[0], in[1], func(x, y float64) float64 { return x * x * math.Cos(y) })
	return []*tensor.Tensor{mapElems(gx, g, mul), mapElems(gy, g, mul)}
}

func mul(a, b float64) float64 { return a * b }

// sumSq(x) = sum(x²), a 0-D result.
func sumSq(in []*tensor.Tensor) *tensor.Tensor {
	var s float64
	for _, v := range in[0].Float64s() {
		s += v * v
	}
	return tensor.FromFloat64s(tensor.Float64, []float64{s})
}

func sumSqBackward(g *tensor.Tensor, in []*tensor.Tensor, _ *tensor.Tensor) []*tensor.Tensor {
	gv := g.Item()
	x := in[0].Float64s()
	for i := range x {
		x[i] *= 2 * gv
	}
	return []*tensor.Tensor{tensor.FromFloat64s(tensor.Float64, x, in[0].Shape()...)}
}

func inputs(seed uint64, shape ...int) []*tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 1))
	return []*tensor.Tensor{
		tensor.RandNormal(rng, tensor.Float64, 0, 1, shape...),
		tensor.RandNormal(rng, tensor.Float64, 0, 1, shape...),
	}
}

func TestCheckGradPassesCorrectGradient(t *testing.T) {
	for _, shape := range [][]int{{}, {1}, {3, 4}, {2, 3, 2}, {0, 3}} {
		if !opstest.CheckGrad(t, "sqSin", inputs(1, shape...), sqSin, sqSinBackward, 1e-6) {
			t.Errorf("CheckGrad(sqSin, shape %v) = false, want true", shape)
		}
	}
	x := []*tensor.Tensor{tensor.FromFloat64s(tensor.Float64, []float64{1, -2, 3, 0.5}, 2, 2)}
	opstest.CheckGrad(t, "sumSq", x, sumSq, sumSqBackward, 1e-6)
}

func TestCheckGradFlagsWrongGradient(t *testing.T) {
	// d/dx x² sin(y) is 2x sin(y); x sin(y) is wrong by a factor of 2.
	wrong := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		gs := sqSinBackward(g, in, out)
		gx := mapElems(gs[0], gs[0], func(a, _ float64) float64 { return a / 2 })
		return []*tensor.Tensor{gx, gs[1]}
	}
	ft := &fakeTB{}
	if opstest.CheckGrad(ft, "sqSinWrong", inputs(2, 3, 4), sqSin, wrong, 1e-6) {
		t.Fatal("CheckGrad with a halved gradient = true, want false")
	}
	if len(ft.msgs) != 1 {
		t.Fatalf("got %d reports %q, want 1", len(ft.msgs), ft.msgs)
	}
	msg := ft.msgs[0]
	for _, want := range []string{"sqSinWrong", "[3 4], [3 4]", "gradient 0", "analytic", "numeric", "worst at ["} {
		if !strings.Contains(msg, want) {
			t.Errorf("report %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "gradient 1") {
		t.Errorf("report %q flags the correct gradient 1", msg)
	}
}

func TestCheckGradFlagsSingleWrongElement(t *testing.T) {
	// One element off by 1e-4 must be found, and named by its coordinates.
	wrong := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		gs := sqSinBackward(g, in, out)
		v := gs[1].Float64s()
		v[1*4+2] += 1e-4
		return []*tensor.Tensor{gs[0], tensor.FromFloat64s(tensor.Float64, v, 3, 4)}
	}
	ft := &fakeTB{}
	opstest.CheckGrad(ft, "oneOff", inputs(3, 3, 4), sqSin, wrong, 1e-6)
	if len(ft.msgs) != 1 || !strings.Contains(ft.msgs[0], "worst at [1 2]") || !strings.Contains(ft.msgs[0], "1 of 12 elements") {
		t.Fatalf("reports %q, want one naming element [1 2] as the only bad one", ft.msgs)
	}
}

func TestCheckGradFlagsWrongShape(t *testing.T) {
	wrong := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		gs := sqSinBackward(g, in, out)
		return []*tensor.Tensor{gs[0].Reshape(4, 3), gs[1]}
	}
	ft := &fakeTB{}
	opstest.CheckGrad(ft, "shape", inputs(4, 3, 4), sqSin, wrong, 1e-6)
	if len(ft.msgs) != 1 || !strings.Contains(ft.msgs[0], "shape [4 3], want the input's shape [3 4]") {
		t.Fatalf("reports %q, want one about the shape [4 3] of gradient 0", ft.msgs)
	}
}

func TestCheckGradFlagsWrongCount(t *testing.T) {
	wrong := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		return sqSinBackward(g, in, out)[:1]
	}
	ft := &fakeTB{}
	opstest.CheckGrad(ft, "count", inputs(5, 2), sqSin, wrong, 1e-6)
	if len(ft.msgs) != 1 || !strings.Contains(ft.msgs[0], "1 gradients for 2 inputs") {
		t.Fatalf("reports %q, want one about the gradient count", ft.msgs)
	}
}

func TestCheckGradFlagsNaN(t *testing.T) {
	wrong := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		gs := sqSinBackward(g, in, out)
		v := gs[0].Float64s()
		v[0] = math.NaN()
		return []*tensor.Tensor{tensor.FromFloat64s(tensor.Float64, v, 2), gs[1]}
	}
	ft := &fakeTB{}
	opstest.CheckGrad(ft, "nan", inputs(6, 2), sqSin, wrong, 1e-6)
	if len(ft.msgs) != 1 || !strings.Contains(ft.msgs[0], "analytic NaN") {
		t.Fatalf("reports %q, want one about the NaN", ft.msgs)
	}
}

func TestCheckGradFlagsMutation(t *testing.T) {
	mutating := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		gs := sqSinBackward(g, in, out)
		in[1].Data64()[0] = 42
		return gs
	}
	ft := &fakeTB{}
	opstest.CheckGrad(ft, "mutate", inputs(7, 2), sqSin, mutating, 1e-6)
	if len(ft.msgs) != 1 || !strings.Contains(ft.msgs[0], "modified input 1") {
		t.Fatalf("reports %q, want one about modifying input 1", ft.msgs)
	}
}

func TestCheckGradReportsPanic(t *testing.T) {
	panicking := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		panic(fmt.Errorf("boom"))
	}
	ft := &fakeTB{}
	opstest.CheckGrad(ft, "panic", inputs(8, 2), sqSin, panicking, 1e-6)
	if len(ft.msgs) != 1 || !strings.Contains(ft.msgs[0], "panic: boom") {
		t.Fatalf("reports %q, want one about the panic", ft.msgs)
	}
}

func TestCheckGradSkipsNilAndFloat32(t *testing.T) {
	in := inputs(9, 3)
	in[1] = in[1].As(tensor.Float32)
	f := func(in []*tensor.Tensor) *tensor.Tensor {
		return sqSin([]*tensor.Tensor{in[0], in[1].As(tensor.Float64)})
	}
	b := func(g *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor {
		gs := sqSinBackward(g, []*tensor.Tensor{in[0], in[1].As(tensor.Float64)}, out)
		return []*tensor.Tensor{gs[0], nil}
	}
	opstest.CheckGrad(t, "mixed", in, f, b, 1e-6)
}

func TestCheckerSettings(t *testing.T) {
	// A coarse step fails a tight tolerance on a curved function and a
	// loose tolerance accepts it.
	in := []*tensor.Tensor{tensor.FromFloat64s(tensor.Float64, []float64{3}, 1)}
	cube := func(in []*tensor.Tensor) *tensor.Tensor {
		return mapElems(in[0], in[0], func(x, _ float64) float64 { return x * x * x })
	}
	cubeBackward := func(g *tensor.Tensor, in []*tensor.Tensor, _ *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{mapElems(in[0], g, func(x, g float64) float64 { return 3 * x * x * g })}
	}
	if err := (opstest.Checker{Step: 0.1, Tol: 1e-6}).Check("cube", in, cube, cubeBackward); err == nil {
		t.Error("step 0.1, tol 1e-6: got nil, want a mismatch (the central error is h² = 0.01 times |w|)")
	}
	if err := (opstest.Checker{Step: 0.1, Tol: 0.1}).Check("cube", in, cube, cubeBackward); err != nil {
		t.Errorf("step 0.1, tol 0.1: got %v, want nil", err)
	}
	if err := (opstest.Checker{}).Check("cube", in, cube, cubeBackward); err != nil {
		t.Errorf("zero Checker: got %v, want nil", err)
	}
}

func TestNumericGrad(t *testing.T) {
	x := tensor.FromFloat64s(tensor.Float64, []float64{1, -2, 0.5}, 3)
	g := opstest.NumericGrad([]*tensor.Tensor{x}, sumSq, tensor.FromFloat64s(tensor.Float64, []float64{2}), 0)
	want := []float64{4, -8, 2}
	for i, v := range g[0].Float64s() {
		if math.Abs(v-want[i]) > 1e-8 {
			t.Errorf("NumericGrad(sum(x²), x=%v, g=2) = %v, want %v", x.Float64s(), g[0].Float64s(), want)
			break
		}
	}
}
