package optim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

func TestSpecNew(t *testing.T) {
	cases := []struct {
		spec    Spec
		kind    string // State().Kind of the optimizer built
		wantErr string
	}{
		{Spec{Kind: "sgd", Momentum: 0.9, Nesterov: true}, "sgd", ""},
		{Spec{Kind: "adam", Betas: [2]float64{0.9, 0.999}, Eps: 1e-8}, "adam", ""},
		{Spec{Kind: "adamw", Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0.01}, "adamw", ""},
		{Spec{Kind: "rmsprop"}, "", `optimizer.type = "rmsprop"`},
		{Spec{Kind: "sgd", Nesterov: true}, "", "optimizer.nesterov"},
		{Spec{Kind: "adam", Betas: [2]float64{1, 0.999}, Eps: 1e-8}, "", "optimizer.betas[0]"},
	}
	for _, c := range cases {
		opt, err := c.spec.New()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%+v.New(): error %v, want one containing %q", c.spec, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v.New(): %v", c.spec, err)
			continue
		}
		if got := opt.State().Kind; got != c.kind {
			t.Errorf("%+v.New(): kind %q, want %q", c.spec, got, c.kind)
		}
	}
}

// TestGradNormOfPartials: the norm adds per-parameter sums of squares in
// order, which is not one running sum over every element; a pipeline that adds
// its stages' partial sums in the global order relies on it.
func TestGradNormOfPartials(t *testing.T) {
	// a = [1], b = eight times 2^-27: a running sum adds 2^-54 to 1 eight times
	// and stays 1; b's partial sum is 2^-51, and 1 + 2^-51 is exact.
	a := tensor.FromFloat64s(tensor.Float64, []float64{1}, 1)
	bv := make([]float64, 8)
	for i := range bv {
		bv[i] = 0x1p-27
	}
	b := tensor.FromFloat64s(tensor.Float64, bv, 8)
	ps := []Param{{Name: "a", Value: a, Grad: a}, {Name: "b", Value: b, Grad: b}}
	if got, want := SumSquares(ps[1]), 0x1p-51; got != want {
		t.Errorf("SumSquares(b) = %v, want %v", got, want)
	}
	if got, want := GradNorm(ps), math.Sqrt(1+0x1p-51); got != want || got == 1 {
		t.Errorf("GradNorm(a, b) = %v, want %v (a running sum would give 1)", got, want)
	}
}

// TestStateReuse: StateInto copies into the tensors of the state it is given,
// and LoadState into the optimizer's own buffers, when they fit: moving state
// back and forth allocates nothing new, and the copies stay independent.
func TestStateReuse(t *testing.T) {
	for _, spec := range []Spec{{Kind: "sgd", Momentum: 0.9}, {Kind: "adam", Betas: [2]float64{0.9, 0.999}, Eps: 1e-8}} {
		a, _ := spec.New()
		b, _ := spec.New()
		w := tensor.FromFloat64s(tensor.Float32, []float64{1, 2, 3}, 3)
		g := tensor.FromFloat64s(tensor.Float32, []float64{0.5, -1, 2}, 3)
		ps := []Param{{Name: "w", Value: w, Grad: g}}
		for range 2 {
			if err := a.Step(ps, 0.1); err != nil {
				t.Fatal(err)
			}
		}
		var st State
		a.StateInto(&st)
		held := map[string]*tensor.Tensor{}
		for name, x := range st.Tensors {
			held[name] = x
		}
		if err := a.Step(ps, 0.1); err != nil {
			t.Fatal(err)
		}
		a.StateInto(&st)
		for name, x := range st.Tensors {
			if held[name] != x {
				t.Errorf("%s: StateInto made a new %s instead of reusing the one given", spec.Kind, name)
			}
		}
		if err := b.LoadState(st); err != nil {
			t.Fatal(err)
		}
		before := b.State()
		if err := b.LoadState(st); err != nil { // again: into the same buffers
			t.Fatal(err)
		}
		for name, x := range st.Tensors {
			x.Data32()[0] = 99 // the loaded copies do not follow
			if got := b.State().Tensors[name].Float64s(); !slices.Equal(got, before.Tensors[name].Float64s()) {
				t.Errorf("%s: %s follows the state it was loaded from", spec.Kind, name)
			}
		}
	}
}

// TestStateView: StateView names what State names, with the same values,
// and its tensors are the optimizer's own: the next step shows in them.
func TestStateView(t *testing.T) {
	for _, spec := range []Spec{{Kind: "sgd", Momentum: 0.9}, {Kind: "adamw", Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0.1}} {
		o, _ := spec.New()
		w := tensor.FromFloat64s(tensor.Float32, []float64{1, 2, 3}, 3)
		g := tensor.FromFloat64s(tensor.Float32, []float64{0.5, -1, 2}, 3)
		ps := []Param{{Name: "w", Value: w, Grad: g}}
		if err := o.Step(ps, 0.1); err != nil {
			t.Fatal(err)
		}
		st, view := o.State(), o.StateView()
		if st.Kind != view.Kind || st.Step != view.Step || st.NumParams != view.NumParams || len(st.Tensors) != len(view.Tensors) || len(st.Tensors) == 0 {
			t.Fatalf("%s: StateView %+v differs from State %+v", spec.Kind, view, st)
		}
		for name, x := range st.Tensors {
			if v := view.Tensors[name]; v == nil || !slices.Equal(v.Float64s(), x.Float64s()) {
				t.Errorf("%s: StateView's %s differs from State's", spec.Kind, name)
			}
		}
		if err := o.Step(ps, 0.1); err != nil {
			t.Fatal(err)
		}
		for name, x := range o.State().Tensors {
			if !slices.Equal(view.Tensors[name].Float64s(), x.Float64s()) {
				t.Errorf("%s: StateView's %s is a copy: the next step does not show in it", spec.Kind, name)
			}
		}
	}
}
