package tensor

import (
	"math/rand/v2"
	"testing"
)

func TestConstructors(t *testing.T) {
	tests := []struct {
		name  string
		t     *Tensor
		shape []int
		size  int
		vals  []float64
	}{
		{"scalar", Zeros(Float32), []int{}, 1, []float64{0}},
		{"empty", Zeros(Float64, 2, 0, 3), []int{2, 0, 3}, 0, []float64{}},
		{"full", Full(Float32, 1.5, 2, 2), []int{2, 2}, 4, []float64{1.5, 1.5, 1.5, 1.5}},
		{"from", FromFloat64s(Float64, []float64{1, 2, 3, 4, 5, 6}, 2, 3), []int{2, 3}, 6, []float64{1, 2, 3, 4, 5, 6}},
		{"from scalar", FromFloat64s(Float32, []float64{7}), []int{}, 1, []float64{7}},
	}
	for _, tc := range tests {
		if got := tc.t.Shape(); !EqualShapes(got, tc.shape) {
			t.Errorf("%s: Shape() = %v, want %v", tc.name, got, tc.shape)
		}
		if got := tc.t.Size(); got != tc.size {
			t.Errorf("%s: Size() = %d, want %d", tc.name, got, tc.size)
		}
		got := tc.t.Float64s()
		if len(got) != len(tc.vals) {
			t.Fatalf("%s: Float64s() = %v, want %v", tc.name, got, tc.vals)
		}
		for i := range got {
			if got[i] != tc.vals[i] {
				t.Errorf("%s: Float64s() = %v, want %v", tc.name, got, tc.vals)
				break
			}
		}
	}
}

func TestShapeIsACopy(t *testing.T) {
	x := Zeros(Float32, 2, 3)
	s := x.Shape()
	s[0] = 9
	if x.Shape()[0] != 2 {
		t.Fatalf("mutating Shape() changed the tensor: %v", x.Shape())
	}
}

func TestFromFloat64sPanicsOnLength(t *testing.T) {
	defer func() {
		r := recover()
		if _, ok := r.(error); !ok {
			t.Fatalf("recovered %v (%T), want an error", r, r)
		}
	}()
	FromFloat64s(Float64, []float64{1, 2, 3}, 2, 2)
}

func TestReshapeSharesStorage(t *testing.T) {
	x := FromFloat64s(Float64, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	y := x.Reshape(3, -1)
	if !EqualShapes(y.Shape(), []int{3, 2}) {
		t.Fatalf("Reshape(3, -1) shape %v, want [3 2]", y.Shape())
	}
	y.Set(10, 2, 1)
	if got := x.At(1, 2); got != 10 {
		t.Fatalf("x.At(1, 2) = %v after a write through the view, want 10", got)
	}
}

func TestSetView(t *testing.T) {
	x := FromFloat64s(Float32, []float64{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)
	var v Tensor
	v.SetView(x, 2, 3, 2)
	if !v.HasShape(3, 2) || v.DType() != Float32 || v.At(0, 0) != 3 || v.At(2, 1) != 8 {
		t.Fatalf("SetView(x, 2, 3, 2) = %v, want float32[3 2] [3 ... 8]", &v)
	}
	v.Set(10, 0, 1)
	if got := x.At(0, 3); got != 10 {
		t.Fatalf("x.At(0, 3) = %v after a write through the view, want 10", got)
	}
	y := Zeros(Float64, 3, 3)
	if n := testing.AllocsPerRun(10, func() { v.SetView(y, 3, 2, 3).SetView(x, 0, 2, 2, 2) }); n != 0 {
		t.Errorf("SetView on a kept header: %v allocations, want 0", n)
	}
	if !v.HasShape(2, 2, 2) || v.At(1, 1, 1) != 8 {
		t.Errorf("SetView(x, 0, 2, 2, 2) = %v, want float32[2 2 2] [1 ... 8]", &v)
	}
	for _, c := range []struct {
		off   int
		shape []int
	}{{-1, []int{2}}, {7, []int{2}}, {0, []int{3, 3}}, {0, []int{-1, 2}}} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("SetView(x [2 4], %d, %v): no panic", c.off, c.shape)
				}
			}()
			new(Tensor).SetView(x, c.off, c.shape...)
		}()
	}
}

func TestBroadcastShapes(t *testing.T) {
	tests := []struct {
		a, b, want []int
		ok         bool
	}{
		{[]int{2, 3}, []int{3}, []int{2, 3}, true},
		{[]int{4, 1, 3}, []int{5, 1}, []int{4, 5, 3}, true},
		{[]int{}, []int{2, 2}, []int{2, 2}, true},
		{[]int{0, 3}, []int{1, 3}, []int{0, 3}, true},
		{[]int{2, 3}, []int{4}, nil, false},
		{[]int{0}, []int{2}, nil, false},
	}
	for _, tc := range tests {
		got, ok := BroadcastShapes(tc.a, tc.b)
		if ok != tc.ok || ok && !EqualShapes(got, tc.want) {
			t.Errorf("BroadcastShapes(%v, %v) = %v, %v; want %v, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBroadcastStrides(t *testing.T) {
	got := BroadcastStrides([]int{3, 1}, []int{2, 3, 4})
	want := []int{0, 1, 0}
	if !EqualShapes(got, want) {
		t.Fatalf("BroadcastStrides([3 1], [2 3 4]) = %v, want %v", got, want)
	}
}

func TestResolveShape(t *testing.T) {
	tests := []struct {
		size    int
		shape   []int
		want    []int
		wantErr bool
	}{
		{6, []int{-1}, []int{6}, false},
		{6, []int{2, -1}, []int{2, 3}, false},
		{0, []int{0, 5}, []int{0, 5}, false},
		{1, []int{}, []int{}, false},
		{6, []int{4, -1}, nil, true},
		{6, []int{-1, -1}, nil, true},
		{6, []int{5}, nil, true},
	}
	for _, tc := range tests {
		got, err := ResolveShape(tc.size, tc.shape)
		if (err != nil) != tc.wantErr || err == nil && !EqualShapes(got, tc.want) {
			t.Errorf("ResolveShape(%d, %v) = %v, %v; want %v, error %v", tc.size, tc.shape, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestSeededFillsRepeat(t *testing.T) {
	a := RandNormal(rand.New(rand.NewPCG(1, 2)), Float32, 0, 1, 4, 4)
	b := RandNormal(rand.New(rand.NewPCG(1, 2)), Float32, 0, 1, 4, 4)
	c := RandNormal(rand.New(rand.NewPCG(1, 3)), Float32, 0, 1, 4, 4)
	av, bv, cv := a.Float64s(), b.Float64s(), c.Float64s()
	same := true
	for i := range av {
		if av[i] != bv[i] {
			t.Fatalf("same seed gave different draws at %d: %v vs %v", i, av[i], bv[i])
		}
		same = same && av[i] == cv[i]
	}
	if same {
		t.Fatal("different streams gave identical draws")
	}
	u := RandUniform(rand.New(rand.NewPCG(5, 5)), Float64, -2, 3, 1000)
	for _, v := range u.Float64s() {
		if v < -2 || v >= 3 {
			t.Fatalf("RandUniform(-2, 3) drew %v", v)
		}
	}
}

func TestIsFinite(t *testing.T) {
	inf := 1.0
	for range 2000 {
		inf *= 10
	}
	nan := inf - inf
	for _, dt := range []DType{Float32, Float64} {
		for _, n := range []int{0, 1, 255, 256, 257, 1000} {
			x := Full(dt, 1.5, n)
			if !x.IsFinite() {
				t.Errorf("%v[%d] of 1.5: IsFinite() = false", dt, n)
			}
			for _, bad := range []float64{nan, inf, -inf} {
				for _, at := range []int{0, n / 2, n - 1} {
					if n == 0 {
						continue
					}
					y := x.Clone()
					y.Set(bad, at)
					if y.IsFinite() {
						t.Errorf("%v[%d] with %v at %d: IsFinite() = true", dt, n, bad, at)
					}
				}
			}
		}
	}
}
