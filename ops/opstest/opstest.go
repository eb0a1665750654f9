package opstest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/diff/fd"

	"github.com/pipetrain/pipetrain/tensor"
)

// Func is a forward computation: it maps inputs to one output tensor.
// It must not modify its inputs.
type Func func(in []*tensor.Tensor) *tensor.Tensor

// BackwardFunc returns the gradient of L with respect to each input, given
// gradOut = ∂L/∂out, the inputs and the forward output out. It returns one
// tensor per input; a nil entry marks an input that is not checked.
type BackwardFunc func(gradOut *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor

// DefaultStep is the central-difference step, as in gonum's
// optimize/functions/validate.go.
const DefaultStep = 1e-6

// DefaultSeed seeds the output weights when Checker.Seed is 0.
const DefaultSeed = 0x09e5_7e57

// Checker holds the settings of a finite-difference gradient check.
// The zero value uses DefaultStep, a tolerance of 1e-6 and DefaultSeed.
type Checker struct {
	Step float64 // central-difference step; 0 means DefaultStep
	Tol  float64 // combined tolerance: |a-n| <= Tol*max(1, |n|); 0 means 1e-6
	Seed uint64  // seed of the output weights w; 0 means DefaultSeed
}

// CheckGrad checks analytic input gradients of a function built from tensor
// inputs, reporting any mismatch through t.Errorf. f maps inputs to a tensor
// output; the checker forms L = sum(out * w) for a fixed, seeded random
// weight w, so grad-out = w is passed to backward, which returns one gradient
// per input. tol is the combined absolute/relative tolerance
// (|analytic - numeric| <= tol * max(1, |numeric|)). It reports whether the
// check passed.
func CheckGrad(t testing.TB, name string, inputs []*tensor.Tensor, f func(in []*tensor.Tensor) *tensor.Tensor, backward func(gradOut *tensor.Tensor, in []*tensor.Tensor, out *tensor.Tensor) []*tensor.Tensor, tol float64) bool {
	t.Helper()
	c := Checker{Tol: tol}
	if err := c.Check(name, inputs, f, backward); err != nil {
		t.Errorf("%v", err)
		return false
	}
	return true
}

// Check is CheckGrad without a testing.TB: it returns nil when the gradients
// agree and an error describing every mismatch otherwise.
func Check(name string, inputs []*tensor.Tensor, f Func, backward BackwardFunc, tol float64) error {
	c := Checker{Tol: tol}
	return c.Check(name, inputs, f, backward)
}

// CheckGrad is the method form of the package-level CheckGrad, with c's
// settings (c.Tol is used in place of a tol argument).
func (c Checker) CheckGrad(t testing.TB, name string, inputs []*tensor.Tensor, f Func, backward BackwardFunc) bool {
	t.Helper()
	if err := c.Check(name, inputs, f, backward); err != nil {
		t.Errorf("%v", err)
		return false
	}
	return true
}

// Check compares backward's gradients with central finite differences of
// L = sum(f(inputs) * w) and returns an error naming every problem found,
// or nil. A panic in f or backward is returned as an error.
func (c Checker) Check(name string, inputs []*tensor.Tensor, f Func, backward BackwardFunc) (err error) {
	step, tol, seed := c.Step, c.Tol, c.Seed
	if step == 0 {
		step = DefaultStep
	}
	if tol == 0 {
		tol = 1e-6
	}
	if seed == 0 {
		seed = DefaultSeed
	}
	shapes := make([][]int, len(inputs))
	for i, in := range inputs {
		if in == nil {
			return fmt.Errorf("opstest: %s: input %d is nil", name, i)
		}
		shapes[i] = in.Shape()
	}
	where := fmt.Sprintf("opstest: %s (input shapes %s)", name, formatShapes(shapes))

	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panic: %v", where, r)
		}
	}()

	snap := cloneAll(inputs)

	out := f(inputs)
	if out == nil {
		return fmt.Errorf("%s: forward returned nil", where)
	}
	outShape := out.Shape()
	w := weights(name, seed, outShape)
	gradOut := tensor.FromFloat64s(out.DType(), w, outShape...)
	grads := backward(gradOut, inputs, out)

	var errs []error
	for i := range inputs {
		if !SameBits(inputs[i], snap[i]) {
			errs = append(errs, fmt.Errorf("%s: forward or backward modified input %d", where, i))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(grads) != len(inputs) {
		return fmt.Errorf("%s: backward returned %d gradients for %d inputs", where, len(grads), len(inputs))
	}

	loss := func(in []*tensor.Tensor) float64 {
		o := f(in)
		if os := o.Shape(); !tensor.EqualShapes(os, outShape) {
			panic(fmt.Errorf("output shape changed from %v to %v under perturbation", outShape, os))
		}
		var s float64
		for j, v := range o.Float64s() {
			s += v * w[j]
		}
		return s
	}
	for i := range inputs {
		if err := compareGrad(where, i, inputs, shapes[i], grads[i], loss, step, tol); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// compareGrad compares g, the analytic gradient of input i, with central
// finite differences of loss, and returns an error naming the worst
// element, or nil. Inputs that are not float64, and nil gradients, are
// skipped.
func compareGrad(where string, i int, inputs []*tensor.Tensor, shape []int, g *tensor.Tensor, loss func([]*tensor.Tensor) float64, step, tol float64) error {
	in := inputs[i]
	if g == nil || in.DType() != tensor.Float64 {
		return nil
	}
	if gs := g.Shape(); !tensor.EqualShapes(gs, shape) {
		return fmt.Errorf("%s: gradient %d has shape %v, want the input's shape %v", where, i, gs, shape)
	}
	if g.DType() != tensor.Float64 {
		return fmt.Errorf("%s: gradient %d is %v, want float64", where, i, g.DType())
	}
	numeric := finiteDiff(inputs, i, loss, step)
	analytic := g.Float64s()

	worst, worstRatio, bad := -1, 0.0, 0
	for j := range numeric {
		r := mismatch(analytic[j], numeric[j])
		if r > tol {
			bad++
		}
		if worst < 0 || r > worstRatio || math.IsNaN(r) {
			worst, worstRatio = j, r
		}
	}
	if bad == 0 {
		return nil
	}
	return fmt.Errorf(
		"%s: gradient %d: %d of %d elements differ; worst at %v: analytic %v, numeric %v (|diff| %.3g > tol %g * max(1, |numeric|))",
		where, i, bad, len(numeric), coords(worst, shape), analytic[worst], numeric[worst],
		math.Abs(analytic[worst]-numeric[worst]), tol)
}

// NumericGrad returns central finite-difference estimates of ∂L/∂input for
// every float64 input (nil for the others), where L = sum(f(inputs) * gradOut).
// step 0 means DefaultStep. The inputs are not modified.
func NumericGrad(inputs []*tensor.Tensor, f Func, gradOut *tensor.Tensor, step float64) []*tensor.Tensor {
	if step == 0 {
		step = DefaultStep
	}
	w := gradOut.Float64s()
	loss := func(in []*tensor.Tensor) float64 {
		var s float64
		for j, v := range f(in).Float64s() {
			s += v * w[j]
		}
		return s
	}
	res := make([]*tensor.Tensor, len(inputs))
	for i, in := range inputs {
		if in.DType() != tensor.Float64 {
			continue
		}
		res[i] = tensor.FromFloat64s(tensor.Float64, finiteDiff(inputs, i, loss, step), in.Shape()...)
	}
	return res
}

// finiteDiff returns the central finite differences of loss in the elements
// of input i, a float64 tensor, varied on clones of the inputs: the inputs
// are not modified.
func finiteDiff(inputs []*tensor.Tensor, i int, loss func([]*tensor.Tensor) float64, step float64) []float64 {
	work := cloneAll(inputs)
	dst := work[i].Data64()
	return fd.Gradient(nil, func(x []float64) float64 {
		copy(dst, x)
		return loss(work)
	}, inputs[i].Float64s(), &fd.Settings{Formula: fd.Central, Step: step})
}

// cloneAll returns a clone of each input.
func cloneAll(inputs []*tensor.Tensor) []*tensor.Tensor {
	c := make([]*tensor.Tensor, len(inputs))
	for i, in := range inputs {
		c[i] = in.Clone()
	}
	return c
}

// mismatch returns |a-n| / max(1, |n|), +Inf when either is not finite.
func mismatch(a, n float64) float64 {
	if math.IsNaN(a) || math.IsNaN(n) || math.IsInf(a, 0) || math.IsInf(n, 0) {
		return math.Inf(1)
	}
	return math.Abs(a-n) / math.Max(1, math.Abs(n))
}

// weights draws the output weights: magnitudes in [0.5, 1.5) with random
// signs, so that no output element is weighted near zero. The stream is
// keyed by the op name so different checks use different weights.
func weights(name string, seed uint64, shape []int) []float64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	w := make([]float64, tensor.SizeOf(shape))
	for i := range w {
		v := 0.5 + rng.Float64()
		if rng.IntN(2) == 0 {
			v = -v
		}
		w[i] = v
	}
	return w
}

// SameBits reports whether a and b have one dtype, one shape and identical bits.
func SameBits(a, b *tensor.Tensor) bool {
	if a.DType() != b.DType() || !tensor.EqualShapes(a.Shape(), b.Shape()) {
		return false
	}
	av, bv := a.Float64s(), b.Float64s()
	for i := range av {
		if math.Float64bits(av[i]) != math.Float64bits(bv[i]) {
			return false
		}
	}
	return true
}

// coords turns a row-major flat index into per-axis coordinates.
func coords(flat int, shape []int) []int {
	c := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] > 0 {
			c[i] = flat % shape[i]
			flat /= shape[i]
		}
	}
	return c
}

func formatShapes(shapes [][]int) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ", ")
}
