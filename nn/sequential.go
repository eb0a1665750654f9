package nn

import (
	"cmp"
	"fmt"
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// Sequential is a stack of layers and a loss, trained on one goroutine. It is
// the reference the actor pipeline must reproduce bit for bit: same micro-batch
// split, same order of gradient accumulation, same loss arithmetic.
type Sequential struct {
	Layers  []Layer
	Loss    Loss
	Threads int // goroutines each kernel may use (Pass.Threads); 0: all the Go runtime has
	// Precision is that of the layers' products (Pass.Precision).
	Precision Precision
	// Granule is the rows of a mini-batch's chunks (nn.Granule); 0 means
	// ChunkRows, for models of one token a sample.
	Granule int

	weights uint64 // Pass.Weights: the weights may change between any two calls
}

// Params returns every layer's parameters in layer order, named "<layer>.<param>".
func (s *Sequential) Params() []Param {
	var ps []Param
	for i, l := range s.Layers {
		for _, p := range l.Params() {
			p.Name = ParamName(i, p.Name)
			ps = append(ps, p)
		}
	}
	return ps
}

// ZeroGrad clears every layer's gradients.
func (s *Sequential) ZeroGrad() {
	for _, l := range s.Layers {
		l.ZeroGrad()
	}
}

// Forward runs x through every layer.
func (s *Sequential) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	for _, l := range s.Layers {
		x = l.Forward(p, x)
	}
	return x
}

// NonFiniteError reports the first layer whose output or input gradient was
// NaN or infinite.
type NonFiniteError struct {
	Layer int
	Kind  string
	Step  int
	Where string // "forward", "backward" or "loss"
}

func (e *NonFiniteError) Error() string {
	if e.Where == "loss" {
		return fmt.Sprintf("nn: non-finite loss at step %d", e.Step)
	}
	return fmt.Sprintf("nn: layer %d (%s) gave a non-finite %s at step %d", e.Layer, e.Kind, e.Where, e.Step)
}

// TrainStep runs one mini-batch as micro micro-batches, forward then backward
// each in turn, adding every parameter's gradient of the mini-batch mean loss
// to its Grad. It returns the mini-batch mean loss. The caller zeroes gradients
// and applies the optimizer.
func (s *Sequential) TrainStep(step int, x *tensor.Tensor, t Target, micro int) (float64, error) {
	n := x.Shape()[0]
	if t.Rows() != n {
		return math.NaN(), fmt.Errorf("nn: target has %d rows for a batch of %d", t.Rows(), n)
	}
	sum := LossSum{Loss: s.Loss, Total: n, Threads: s.Threads}
	s.weights++
	spans := SplitRowsBy(n, micro, cmp.Or(s.Granule, ChunkRows))
	for m, sp := range spans {
		p := Pass{Step: step, Micro: m, Row: sp.Lo, Train: true, Weights: s.weights, Micros: len(spans), Threads: s.Threads, Precision: s.Precision}
		h := Rows(x, sp.Lo, sp.Hi)
		for i, l := range s.Layers {
			h = l.Forward(p, h)
			if !h.IsFinite() {
				s.drop()
				return math.NaN(), &NonFiniteError{i, l.Kind(), step, "forward"}
			}
		}
		g := sum.Add(nil, h, t.Slice(sp.Lo, sp.Hi))
		for i := len(s.Layers) - 1; i >= 0; i-- {
			g = s.Layers[i].Backward(p, g, i > 0)
			if i > 0 && !g.IsFinite() {
				s.drop()
				return math.NaN(), &NonFiniteError{i, s.Layers[i].Kind(), step, "backward"}
			}
		}
	}
	total := sum.Mean()
	if math.IsNaN(total) || math.IsInf(total, 0) {
		return total, &NonFiniteError{Step: step, Where: "loss"}
	}
	return total, nil
}

// drop discards the caches a failed step left behind.
func (s *Sequential) drop() {
	for _, l := range s.Layers {
		l.Reset()
	}
}

// Evaluate returns the mean loss of the model on x against t and, when t has
// labels, the fraction of rows whose largest output is the label. Rows are
// processed in chunks of batch rows; batch <= 0 means all rows at once.
func (s *Sequential) Evaluate(x *tensor.Tensor, t Target, batch int) (loss, accuracy float64) {
	n := x.Shape()[0]
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	if batch <= 0 {
		batch = n // a step of 0 rows would never end
	}
	correct := 0
	s.weights++
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		out := s.Forward(Pass{Weights: s.weights, Micros: (n + batch - 1) / batch, Threads: s.Threads, Precision: s.Precision}, Rows(x, lo, hi))
		tt := t.Slice(lo, hi)
		l, _ := s.Loss.Compute(out, tt, 0)
		loss += l * float64(hi-lo) / float64(n)
		if tt.Labels != nil {
			correct += tt.Correct(out)
		}
	}
	if t.Labels == nil {
		return loss, math.NaN()
	}
	return loss, float64(correct) / float64(t.Labeled())
}
