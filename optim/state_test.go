package optim

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

type optCase struct {
	name  string
	new   func() (Optimizer, error)
	slots []string
}

var optCases = []optCase{
	{"sgd", func() (Optimizer, error) { return NewSGD(SGDConfig{}) }, nil},
	{"sgd momentum", func() (Optimizer, error) { return NewSGD(SGDConfig{Momentum: 0.9}) }, []string{"momentum"}},
	{"sgd nesterov weight_decay", func() (Optimizer, error) {
		return NewSGD(SGDConfig{Momentum: 0.8, Nesterov: true, WeightDecay: 0.01})
	}, []string{"momentum"}},
	{"adam", func() (Optimizer, error) { return NewAdam(DefaultAdamConfig()) }, []string{"exp_avg", "exp_avg_sq"}},
	{"adam weight_decay", func() (Optimizer, error) {
		return NewAdam(AdamConfig{Betas: [2]float64{0.8, 0.99}, Eps: 1e-8, WeightDecay: 0.05})
	}, []string{"exp_avg", "exp_avg_sq"}},
	{"adamw weight_decay", func() (Optimizer, error) {
		return NewAdamW(AdamConfig{Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0.1})
	}, []string{"exp_avg", "exp_avg_sq"}},
}

func mustNew(t *testing.T, c optCase) Optimizer {
	t.Helper()
	o, err := c.new()
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return o
}

// twoParams returns a 2x3 parameter of dtype dt0 and a 4-vector of dtype dt1.
func twoParams(dt0, dt1 tensor.DType) []Param {
	a := Param{Name: "a", Value: tensor.FromFloat64s(dt0, []float64{0.5, -1, 0.25, 2, -0.75, 1.5}, 2, 3), Grad: tensor.Zeros(dt0, 2, 3)}
	b := newParam("b", dt1, 0.1, -0.2, 0.3, -0.4)
	return []Param{a, b}
}

// setGrads fills gradients with values that depend on the step k.
func setGrads(params []Param, k int) {
	for j, p := range params {
		n := p.Grad.Size()
		g := make([]float64, n)
		for i := range g {
			g[i] = float64((i*7+k*13+j*5)%17-8) / 10
		}
		p.Grad.CopyFrom(tensor.FromFloat64s(p.Grad.DType(), g, p.Grad.Shape()...))
	}
}

func lrAt(k int) float64 { return 0.05 / float64(1+k%3) }

func steps(t *testing.T, o Optimizer, params []Param, from, to int) {
	t.Helper()
	for k := from; k <= to; k++ {
		setGrads(params, k)
		if err := o.Step(params, lrAt(k)); err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
	}
}

func sameBits(a, b *tensor.Tensor) bool {
	if a.DType() != b.DType() || !tensor.EqualShapes(a.Shape(), b.Shape()) {
		return false
	}
	x, y := a.Float64s(), b.Float64s()
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return false
		}
	}
	return true
}

func cloneParams(ps []Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: p.Name, Value: p.Value.Clone(), Grad: p.Grad.Clone()}
	}
	return out
}

func sortedNames(st State) []string {
	var names []string
	for n := range st.Tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestStateRoundTrip checks that a run stopped after 3 steps, exported with State,
// loaded with LoadState into a new optimizer and continued for 3 more steps ends bit
// for bit where an uninterrupted 6-step run ends, for every optimizer and dtype mix.
func TestStateRoundTrip(t *testing.T) {
	mixes := [][2]tensor.DType{{tensor.Float32, tensor.Float32}, {tensor.Float64, tensor.Float64}, {tensor.Float32, tensor.Float64}}
	for _, c := range optCases {
		for _, mix := range mixes {
			inputs := fmt.Sprintf("%s params %v, %v", c.name, mix[0], mix[1])

			full := mustNew(t, c)
			pFull := twoParams(mix[0], mix[1])
			if st := full.State(); st.Step != 0 || st.NumParams != 0 || len(st.Tensors) != 0 {
				t.Errorf("%s: State before the first step: got %+v, want step 0, no params, no tensors", inputs, st)
			}
			steps(t, full, pFull, 1, 6)

			first := mustNew(t, c)
			pFirst := twoParams(mix[0], mix[1])
			steps(t, first, pFirst, 1, 3)
			st := first.State()
			if st.Step != 3 || st.NumParams != 2 {
				t.Errorf("%s: State: got step %d, params %d, want 3, 2", inputs, st.Step, st.NumParams)
			}
			var wantNames []string
			for i := range 2 {
				for _, s := range c.slots {
					wantNames = append(wantNames, fmt.Sprintf("%d.%s", i, s))
				}
			}
			slices.Sort(wantNames)
			if got := sortedNames(st); !slices.Equal(got, wantNames) {
				t.Errorf("%s: State names: got %v, want %v", inputs, got, wantNames)
			}

			// A checkpoint holds copies of the weights and the state.
			pResumed := cloneParams(pFirst)
			resumed := mustNew(t, c)
			if err := resumed.LoadState(st); err != nil {
				t.Fatalf("%s: LoadState: %v", inputs, err)
			}
			// Neither the exported nor the loaded state may alias live tensors.
			for _, ts := range st.Tensors {
				ts.Fill(999)
			}
			steps(t, first, pFirst, 4, 6)
			steps(t, resumed, pResumed, 4, 6)

			for i := range pFull {
				if !sameBits(pResumed[i].Value, pFull[i].Value) {
					t.Errorf("%s: resumed %s: got %v, want %v (bit for bit)", inputs, pFull[i].Name, pResumed[i].Value, pFull[i].Value)
				}
				if !sameBits(pFirst[i].Value, pFull[i].Value) {
					t.Errorf("%s: %s after exporting State: got %v, want %v (bit for bit)", inputs, pFull[i].Name, pFirst[i].Value, pFull[i].Value)
				}
			}
			if resumed.StepCount() != 6 {
				t.Errorf("%s: resumed StepCount: got %d, want 6", inputs, resumed.StepCount())
			}
			a, b := full.State(), resumed.State()
			if a.Kind != b.Kind || a.Step != b.Step || a.NumParams != b.NumParams || !slices.Equal(sortedNames(a), sortedNames(b)) {
				t.Errorf("%s: resumed State: got %v %d %d %v, want %v %d %d %v", inputs, b.Kind, b.Step, b.NumParams, sortedNames(b), a.Kind, a.Step, a.NumParams, sortedNames(a))
			}
			for name, ta := range a.Tensors {
				if tb := b.Tensors[name]; tb == nil || !sameBits(ta, tb) {
					t.Errorf("%s: resumed state %s: got %v, want %v", inputs, name, tb, ta)
				}
			}
		}
	}
}

// TestLoadStateByCountOnly checks a state without tensors (plain SGD): the count of
// parameters is enforced, and the shapes are adopted from the next step.
func TestLoadStateByCountOnly(t *testing.T) {
	o, _ := NewSGD(SGDConfig{})
	st := State{Kind: "sgd", Step: 3, NumParams: 2, Tensors: map[string]*tensor.Tensor{}}
	if err := o.LoadState(st); err != nil {
		t.Fatalf("LoadState(%+v): %v", st, err)
	}
	three := append(twoParams(tensor.Float32, tensor.Float32), newParam("c", tensor.Float32, 1))
	wantErr(t, o.Step(three, 0.1), "got 3 parameters, want 2", "Step with 3 params after loading a 2-param state")
	ps := twoParams(tensor.Float32, tensor.Float32)
	if err := o.Step(ps, 0.1); err != nil {
		t.Fatalf("Step: %v", err)
	}
	if o.StepCount() != 4 {
		t.Errorf("StepCount: got %d, want 4", o.StepCount())
	}
	ps[1] = newParam("b", tensor.Float32, 1, 2, 3)
	wantErr(t, o.Step(ps, 0.1), "want float32[4]", "Step with a changed shape")
}

func TestLoadStateErrors(t *testing.T) {
	adamState := func() State {
		o, _ := NewAdam(DefaultAdamConfig())
		steps(t, o, twoParams(tensor.Float32, tensor.Float64), 1, 1)
		return o.State()
	}
	sgdMomState := func() State {
		o, _ := NewSGD(SGDConfig{Momentum: 0.9})
		steps(t, o, twoParams(tensor.Float32, tensor.Float32), 1, 2)
		return o.State()
	}
	sgdPlainState := func() State {
		o, _ := NewSGD(SGDConfig{})
		steps(t, o, twoParams(tensor.Float32, tensor.Float32), 1, 2)
		return o.State()
	}
	newAdam := func() Optimizer { o, _ := NewAdam(DefaultAdamConfig()); return o }
	newAdamW := func() Optimizer { o, _ := NewAdamW(DefaultAdamConfig()); return o }
	newSGD := func() Optimizer { o, _ := NewSGD(SGDConfig{}); return o }
	newSGDMom := func() Optimizer { o, _ := NewSGD(SGDConfig{Momentum: 0.9}); return o }
	// stepped returns an optimizer already bound to params.
	stepped := func(o Optimizer, params []Param) func() Optimizer {
		return func() Optimizer { steps(t, o, params, 1, 1); return o }
	}
	cases := []struct {
		name string
		opt  func() Optimizer
		st   func() State
		want string
	}{
		{"sgd state into adam", newAdam, sgdMomState, `state is for optimizer "sgd", not "adam"`},
		{"adam state into adamw", newAdamW, adamState, `not "adamw"`},
		{"negative step", newAdam, func() State { s := adamState(); s.Step = -1; return s }, "negative step"},
		{"negative params", newAdam, func() State { s := adamState(); s.NumParams = -1; return s }, "negative step"},
		{"missing tensor", newAdam, func() State { s := adamState(); delete(s.Tensors, "1.exp_avg_sq"); return s }, `"1.exp_avg_sq" is missing`},
		{"nil tensor", newAdam, func() State { s := adamState(); s.Tensors["0.exp_avg"] = nil; return s }, `"0.exp_avg" is missing`},
		{"unexpected tensor", newAdam, func() State {
			s := adamState()
			s.Tensors["2.exp_avg"] = tensor.Zeros(tensor.Float32, 1)
			return s
		}, `unexpected state tensor "2.exp_avg"`},
		{"renamed tensor", newAdam, func() State {
			s := adamState()
			s.Tensors["0.momentum"] = s.Tensors["0.exp_avg"]
			delete(s.Tensors, "0.exp_avg")
			return s
		}, `unexpected state tensor "0.momentum"`},
		{"moments disagree in shape", newAdam, func() State {
			s := adamState()
			s.Tensors["0.exp_avg_sq"] = tensor.Zeros(tensor.Float32, 6)
			return s
		}, `"0.exp_avg_sq" is float32[6], want float32[2 3]`},
		{"moments disagree in dtype", newAdam, func() State {
			s := adamState()
			s.Tensors["1.exp_avg"] = tensor.Zeros(tensor.Float32, 4)
			return s
		}, `"1.exp_avg_sq" is float64[4], want float32[4]`},
		{"tensors at step 0", newAdam, func() State { s := adamState(); s.Step = 0; return s }, "unexpected state tensor"},
		{"momentum state into plain sgd", newSGD, sgdMomState, `unexpected state tensor "0.momentum"`},
		{"plain state into momentum sgd", newSGDMom, sgdPlainState, `"0.momentum" is missing`},
		{"param count differs from bound", stepped(newAdam(), append(twoParams(tensor.Float32, tensor.Float64), newParam("c", tensor.Float32, 1))), adamState, "bound to 3"},
		{"shape differs from bound", stepped(newAdam(), []Param{newParam("a", tensor.Float32, 1, 2, 3, 4, 5, 6), newParam("b", tensor.Float64, 1, 2, 3, 4)}), adamState, "bound to float32[6]"},
		{"dtype differs from bound", stepped(newSGDMom(), twoParams(tensor.Float64, tensor.Float32)), sgdMomState, "bound to float64[2 3]"},
	}
	for _, c := range cases {
		o := c.opt()
		before := o.State()
		wantErr(t, o.LoadState(c.st()), c.want, "LoadState: "+c.name)
		after := o.State()
		if after.Step != before.Step || after.NumParams != before.NumParams || len(after.Tensors) != len(before.Tensors) {
			t.Errorf("LoadState: %s: failed load changed the state: got step %d params %d, want %d %d", c.name, after.Step, after.NumParams, before.Step, before.NumParams)
		}
	}
}

// TestStepErrors checks every validation of Step and that a failed Step changes
// nothing.
func TestStepErrors(t *testing.T) {
	type mut func(ps []Param) ([]Param, float64)
	cases := []struct {
		name string
		f    mut
		want string
	}{
		{"negative lr", func(ps []Param) ([]Param, float64) { return ps, -0.1 }, "learning rate -0.1"},
		{"NaN lr", func(ps []Param) ([]Param, float64) { return ps, math.NaN() }, "learning rate NaN"},
		{"Inf lr", func(ps []Param) ([]Param, float64) { return ps, math.Inf(1) }, "learning rate +Inf"},
		{"nil grad", func(ps []Param) ([]Param, float64) { ps[1].Grad = nil; return ps, 0.1 }, `parameter 1 ("b") has a nil Value or Grad`},
		{"nil value", func(ps []Param) ([]Param, float64) { ps[0].Value = nil; return ps, 0.1 }, `parameter 0 ("a") has a nil Value or Grad`},
		{"grad dtype", func(ps []Param) ([]Param, float64) { ps[1].Grad = tensor.Zeros(tensor.Float64, 4); return ps, 0.1 }, "its gradient is float64"},
		{"grad shape", func(ps []Param) ([]Param, float64) { ps[0].Grad = tensor.Zeros(tensor.Float32, 3, 2); return ps, 0.1 }, "its gradient has shape [3 2]"},
		{"fewer params", func(ps []Param) ([]Param, float64) { return ps[:1], 0.1 }, "got 1 parameters, want 2"},
		{"more params", func(ps []Param) ([]Param, float64) {
			return append(ps, newParam("c", tensor.Float32, 1)), 0.1
		}, "got 3 parameters, want 2"},
		{"swapped order", func(ps []Param) ([]Param, float64) { return []Param{ps[1], ps[0]}, 0.1 }, `parameter 0 ("b") is float32[4], want float32[2 3]`},
		{"reshaped", func(ps []Param) ([]Param, float64) {
			ps[0] = Param{Name: "a", Value: ps[0].Value.Reshape(3, 2), Grad: ps[0].Grad.Reshape(3, 2)}
			return ps, 0.1
		}, "is float32[3 2], want float32[2 3]"},
		{"dtype changed", func(ps []Param) ([]Param, float64) { ps[1] = newParam("b", tensor.Float64, 1, 2, 3, 4); return ps, 0.1 }, "is float64[4], want float32[4]"},
	}
	for _, oc := range optCases {
		for _, c := range cases {
			o := mustNew(t, oc)
			ps := twoParams(tensor.Float32, tensor.Float32)
			steps(t, o, ps, 1, 1)
			snapshot := cloneParams(ps)
			stBefore := o.State()
			bad, lr := c.f(slices.Clone(ps))
			wantErr(t, o.Step(bad, lr), c.want, fmt.Sprintf("%s: Step with %s", oc.name, c.name))
			if o.StepCount() != 1 {
				t.Errorf("%s: %s: StepCount after a failed Step: got %d, want 1", oc.name, c.name, o.StepCount())
			}
			for i := range ps {
				if !sameBits(ps[i].Value, snapshot[i].Value) {
					t.Errorf("%s: %s: failed Step changed %s: got %v, want %v", oc.name, c.name, ps[i].Name, ps[i].Value, snapshot[i].Value)
				}
			}
			for name, ts := range o.State().Tensors {
				if !sameBits(ts, stBefore.Tensors[name]) {
					t.Errorf("%s: %s: failed Step changed state %s", oc.name, c.name, name)
				}
			}
		}
		// The very first step is validated too.
		o := mustNew(t, oc)
		ps := twoParams(tensor.Float32, tensor.Float32)
		ps[0].Grad = nil
		wantErr(t, o.Step(ps, 0.1), "nil Value or Grad", oc.name+": first Step with a nil grad")
		if o.StepCount() != 0 {
			t.Errorf("%s: StepCount after a failed first Step: got %d, want 0", oc.name, o.StepCount())
		}
	}
}

// TestStepLeavesGradUnchanged checks that weight decay and Nesterov momentum, which
// modify the gradient in the formulas, work on a copy (as PyTorch's grad.add does).
func TestStepLeavesGradUnchanged(t *testing.T) {
	for _, oc := range optCases {
		for _, dt := range dtypes {
			o := mustNew(t, oc)
			ps := twoParams(dt, dt)
			for k := 1; k <= 3; k++ {
				setGrads(ps, k)
				before := cloneParams(ps)
				if err := o.Step(ps, 0.1); err != nil {
					t.Fatal(err)
				}
				for i := range ps {
					if !sameBits(ps[i].Grad, before[i].Grad) {
						t.Errorf("%s %v step %d: Grad of %s: got %v, want %v", oc.name, dt, k, ps[i].Name, ps[i].Grad, before[i].Grad)
					}
				}
			}
		}
	}
}

// TestEmptyParams checks that an optimizer over no parameters still counts steps.
func TestEmptyParams(t *testing.T) {
	for _, oc := range optCases {
		o := mustNew(t, oc)
		if err := o.Step(nil, 0.1); err != nil {
			t.Fatalf("%s: Step(nil): %v", oc.name, err)
		}
		if o.StepCount() != 1 {
			t.Errorf("%s: StepCount: got %d, want 1", oc.name, o.StepCount())
		}
		wantErr(t, o.Step([]Param{newParam("a", tensor.Float32, 1)}, 0.1), "got 1 parameters, want 0", oc.name+": Step after an empty one")
	}
}
