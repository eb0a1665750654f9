package optim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pipetrain/pipetrain/tensor"
)

// Param is one trainable tensor and the gradient accumulated for it, the
// type layers hand out (nn.Param is the same). Value and Grad must have the
// same dtype (Float32 or Float64) and the same shape.
type Param = tensor.Param

// decays reports whether weight decay applies to p: to every parameter, or
// with matricesOnly to those of 2 or more axes.
func decays(matricesOnly bool, p Param) bool { return !matricesOnly || p.Value.Dims() >= 2 }

// ZeroGrad sets every gradient in params to zero. Gradients accumulate (backward adds
// into Grad), so a trainer zeroes them explicitly after each update. Params whose Grad
// is nil are skipped.
func ZeroGrad(params []Param) {
	for _, p := range params {
		if p.Grad != nil {
			p.Grad.Zero()
		}
	}
}

// Optimizer updates parameters in place from their gradients.
//
// An Optimizer binds its per-parameter state to positions in the params slice: the
// i-th Param of every call must be the same tensor, with the same dtype and shape, as
// the i-th Param of the first call. Step returns an error when the number of
// parameters, a dtype or a shape changes between steps.
type Optimizer interface {
	// Step applies one update with learning rate lr (lr >= 0, finite; schedules
	// change it from step to step). It reads Grad and writes Value; Grad is left
	// unchanged. On error nothing is modified.
	Step(params []Param, lr float64) error
	// StepCount returns the number of successful steps taken (or loaded).
	StepCount() int
	// State returns a deep copy of the optimizer state, for checkpoints.
	State() State
	// LoadState replaces the optimizer state with a deep copy of st, after checking
	// that it fits this optimizer. A run resumed from State continues bit for bit.
	LoadState(st State) error
	// StateInto is State into st, reusing st's tensors where they fit.
	StateInto(st *State)
	// StateView is State with the optimizer's own tensors, not copies,
	// for a caller that reads them before the next Step or LoadState.
	StateView() State
}

// ScaledStepper is an Optimizer that can take gradient clipping's scale and
// clear the gradients in its update's pass, reading each gradient once
// where ScaleGrads, Step and ZeroGrad read it three times.
type ScaledStepper interface {
	Optimizer
	// StepScaled is, bit for bit,
	//
	//	if scale != 1 {
	//		ScaleGrads(params, scale)
	//	}
	//	Step(params, lr)
	//	if zero {
	//		ZeroGrad(params)
	//	}
	//
	// but on error nothing is modified, the gradients neither.
	StepScaled(params []Param, lr, scale float64, zero bool) error
}

// gradOp is what an update's pass does to a gradient besides reading it,
// in place of ScaleGrads before it and ZeroGrad after.
type gradOp[T float32 | float64] struct {
	scale        T
	scaled, zero bool // multiply by scale (and keep the product); clear
}

// take returns g[i], scaled when op is, and leaves in g[i] what ScaleGrads
// and ZeroGrad would.
func (op gradOp[T]) take(g []T, i int) T {
	gi := g[i]
	if op.scaled {
		gi = gi * op.scale
	}
	if op.zero {
		g[i] = 0
	} else if op.scaled {
		g[i] = gi
	}
	return gi
}

// State is an optimizer's state as plain data, for checkpoints.
//
// Tensors are named "<index>.<slot>", where index is the parameter's position in the
// params slice and slot is "momentum" (SGD with momentum) or "exp_avg" and
// "exp_avg_sq" (Adam, AdamW). Before the first step there are no tensors.
type State struct {
	Kind      string                    // "sgd", "adam" or "adamw"
	Step      int                       // steps taken
	NumParams int                       // number of parameters the state is for (0 before the first step)
	Tensors   map[string]*tensor.Tensor // per-parameter state, deep copies
}

// layout remembers, per parameter position, the dtype and shape the optimizer is bound
// to. A nil layout means the optimizer has not seen any parameters yet; an entry with a
// nil shape is bound by count only (loaded from a state without tensors) and adopts the
// dtype and shape of the next Step.
type layout []slot

type slot struct {
	dtype tensor.DType
	shape []int // nil: not known yet
}

// checkLR validates a learning rate passed to Step.
func checkLR(kind string, lr float64) error {
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return fmt.Errorf("optim: %s: learning rate %v must be finite and >= 0", kind, lr)
	}
	return nil
}

// check validates params on their own and against the layout bound by earlier steps.
func (l layout) check(kind string, params []Param) error {
	for i, p := range params {
		if p.Value == nil || p.Grad == nil {
			return fmt.Errorf("optim: %s: parameter %d (%q) has a nil Value or Grad", kind, i, p.Name)
		}
		dt := p.Value.DType()
		if dt != tensor.Float32 && dt != tensor.Float64 {
			return fmt.Errorf("optim: %s: parameter %d (%q) has unsupported dtype %v", kind, i, p.Name, dt)
		}
		if p.Grad.DType() != dt {
			return fmt.Errorf("optim: %s: parameter %d (%q) is %v but its gradient is %v", kind, i, p.Name, dt, p.Grad.DType())
		}
		if !p.Value.SameShape(p.Grad) {
			return fmt.Errorf("optim: %s: parameter %d (%q) has shape %v but its gradient has shape %v", kind, i, p.Name, p.Value.Shape(), p.Grad.Shape())
		}
	}
	if l == nil {
		return nil
	}
	if len(params) != len(l) {
		return fmt.Errorf("optim: %s: got %d parameters, want %d as in earlier steps (the params slice must keep its order and length)", kind, len(params), len(l))
	}
	for i, p := range params {
		s := l[i]
		if s.shape == nil {
			continue
		}
		if p.Value.DType() != s.dtype || !p.Value.HasShape(s.shape...) {
			return fmt.Errorf("optim: %s: parameter %d (%q) is %v%v, want %v%v as in earlier steps (the params slice must keep its order)", kind, i, p.Name, p.Value.DType(), p.Value.Shape(), s.dtype, s.shape)
		}
	}
	return nil
}

// bind returns the layout of params after a step that checked them against
// l: l itself once every slot is known, so steady steps do not allocate.
func (l layout) bind(params []Param) layout {
	for _, s := range l {
		if s.shape == nil {
			return layoutOf(params)
		}
	}
	if l == nil {
		return layoutOf(params)
	}
	return l
}

// layoutOf returns the layout of params.
func layoutOf(params []Param) layout {
	l := make(layout, len(params))
	for i, p := range params {
		l[i] = slot{dtype: p.Value.DType(), shape: p.Value.Shape()}
	}
	return l
}

// StateName is the name of an optimizer's state tensor: slot (such as
// "momentum_buffer" or "exp_avg") of parameter i, "<i>.<slot>".
func StateName(i int, slot string) string { return strconv.Itoa(i) + "." + slot }

// SplitStateName parses a StateName, for a state of params parameters.
func SplitStateName(name string, params int) (int, string, error) {
	idx, slot, ok := strings.Cut(name, ".")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= params {
		return 0, "", fmt.Errorf("optim: state tensor %q names no parameter of the %d", name, params)
	}
	return i, slot, nil
}

// checkState validates st against an optimizer of the given kind whose per-parameter
// state has the given slot names (all of one dtype and shape per parameter), and
// against the layout it is already bound to, if any. It returns the per-parameter
// tensors, indexed [param][slot], still st's own: the caller copies them
// (adopt), and the layout st implies.
func checkState(kind string, slots []string, bound layout, st State) ([][]*tensor.Tensor, layout, error) {
	if st.Kind != kind {
		return nil, nil, fmt.Errorf("optim: state is for optimizer %q, not %q", st.Kind, kind)
	}
	if st.Step < 0 || st.NumParams < 0 {
		return nil, nil, fmt.Errorf("optim: %s: state has negative step %d or parameter count %d", kind, st.Step, st.NumParams)
	}
	if bound != nil && st.NumParams != len(bound) && (st.Step > 0 || st.NumParams > 0) {
		return nil, nil, fmt.Errorf("optim: %s: state is for %d parameters, the optimizer is bound to %d", kind, st.NumParams, len(bound))
	}
	want := 0
	if st.Step > 0 {
		want = st.NumParams * len(slots)
	}
	for _, name := range slices.Sorted(maps.Keys(st.Tensors)) {
		if !expectedName(name, st, slots) {
			return nil, nil, fmt.Errorf("optim: %s: unexpected state tensor %q (step %d, %d parameters)", kind, name, st.Step, st.NumParams)
		}
	}
	if want == 0 {
		l := bound
		if l == nil && st.Step > 0 {
			l = make(layout, st.NumParams) // bound by count only
		}
		return nil, l, nil
	}
	out := make([][]*tensor.Tensor, st.NumParams)
	l := make(layout, st.NumParams)
	for i := range st.NumParams {
		out[i] = make([]*tensor.Tensor, len(slots))
		for j, s := range slots {
			name := StateName(i, s)
			t, ok := st.Tensors[name]
			if !ok || t == nil {
				return nil, nil, fmt.Errorf("optim: %s: state tensor %q is missing", kind, name)
			}
			if dt := t.DType(); dt != tensor.Float32 && dt != tensor.Float64 {
				return nil, nil, fmt.Errorf("optim: %s: state tensor %q has unsupported dtype %v", kind, name, dt)
			}
			if j == 0 {
				l[i] = slot{dtype: t.DType(), shape: t.Shape()}
			} else if t.DType() != l[i].dtype || !tensor.EqualShapes(t.Shape(), l[i].shape) {
				return nil, nil, fmt.Errorf("optim: %s: state tensor %q is %v%v, want %v%v like %q", kind, name, t.DType(), t.Shape(), l[i].dtype, l[i].shape, StateName(i, slots[0]))
			}
			out[i][j] = t // the caller copies it (adopt)
		}
		if bound != nil && bound[i].shape != nil && (bound[i].dtype != l[i].dtype || !tensor.EqualShapes(bound[i].shape, l[i].shape)) {
			return nil, nil, fmt.Errorf("optim: %s: state for parameter %d is %v%v, the optimizer is bound to %v%v", kind, i, l[i].dtype, l[i].shape, bound[i].dtype, bound[i].shape)
		}
	}
	return out, l, nil
}

// expectedName reports whether name is "<i>.<slot>" for a parameter index i in
// [0, st.NumParams), written without leading zeros, and one of slots, at a step > 0.
func expectedName(name string, st State, slots []string) bool {
	idx, slot, ok := strings.Cut(name, ".")
	if !ok || st.Step == 0 || !slices.Contains(slots, slot) {
		return false
	}
	i, err := strconv.Atoi(idx)
	return err == nil && i >= 0 && i < st.NumParams && strconv.Itoa(i) == idx
}

// exportState builds a State from per-parameter tensors indexed [param][slot].
func exportState(kind string, step int, l layout, slots []string, ts [][]*tensor.Tensor) State {
	var st State
	exportStateInto(&st, kind, step, l, slots, ts)
	return st
}

// exportStateInto is exportState into st, copying into st's tensors where
// they fit: a caller that exports often (a pipeline moving its state between
// layouts) reuses its memory instead of faulting in new pages each time.
func exportStateInto(st *State, kind string, step int, l layout, slots []string, ts [][]*tensor.Tensor) {
	old := st.Tensors
	st.Kind, st.Step, st.NumParams, st.Tensors = kind, step, len(l), make(map[string]*tensor.Tensor, len(ts)*len(slots))
	for i, row := range ts {
		for j, t := range row {
			name := StateName(i, slots[j])
			st.Tensors[name] = adopt(old[name], t)
		}
	}
}

// viewState is exportState with ts themselves, not copies.
func viewState(kind string, step int, l layout, slots []string, ts [][]*tensor.Tensor) State {
	st := State{Kind: kind, Step: step, NumParams: len(l), Tensors: make(map[string]*tensor.Tensor, len(ts)*len(slots))}
	for i, row := range ts {
		for j, t := range row {
			st.Tensors[StateName(i, slots[j])] = t
		}
	}
	return st
}

// adopt returns a copy of src: dst with src copied in when it has src's
// dtype and shape, else a new clone.
func adopt(dst, src *tensor.Tensor) *tensor.Tensor {
	if dst != nil && dst != src && dst.DType() == src.DType() && dst.SameShape(src) {
		dst.CopyFrom(src)
		return dst
	}
	return src.Clone()
}

// at returns ts[i], or nil past its end.
func at(ts []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(ts) {
		return ts[i]
	}
	return nil
}
