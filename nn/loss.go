package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Target is what a loss compares a model's output with: class labels, or values
// of the output's shape. A loss that needs values and gets only labels uses
// their one-hot encoding.
type Target struct {
	Labels []int
	Values *tensor.Tensor
	// PerRow is how many labels each row has, row after row: a sequence
	// model's tokens, whose outputs the row holds one after another
	// (0 means 1).
	PerRow int
}

// per is the labels of a row.
func (t Target) per() int { return max(1, t.PerRow) }

// Rows returns the number of samples in the target.
func (t Target) Rows() int {
	if t.Values != nil {
		return t.Values.Shape()[0]
	}
	return len(t.Labels) / t.per()
}

// Slice returns the target of rows [lo, hi).
func (t Target) Slice(lo, hi int) Target {
	s := Target{PerRow: t.PerRow}
	if t.Labels != nil {
		s.Labels = t.Labels[lo*t.per() : hi*t.per()]
	}
	if t.Values != nil {
		s.Values = SliceRows(t.Values, lo, hi)
	}
	return s
}

// Loss names a loss function.
type Loss string

const (
	CrossEntropy  Loss = "cross_entropy"
	MSE           Loss = "mse"
	BCEWithLogits Loss = "bce_with_logits"
)

// Losses lists the valid loss names.
var Losses = []Loss{CrossEntropy, MSE, BCEWithLogits}

// Compute returns the mean loss of out against t and the gradient of that loss
// with respect to out, multiplied by scale. It is the loss of one batch seen
// whole, as evaluation needs; a training step uses a LossSum.
func (l Loss) Compute(out *tensor.Tensor, t Target, scale float64) (loss float64, grad *tensor.Tensor) {
	return l.ComputeIn(nil, out, t, scale)
}

// ComputeIn is Compute with cross_entropy's gradient lent by a (nil
// allocates): an evaluation, which throws it away, then allocates nothing.
func (l Loss) ComputeIn(a *Arena, out *tensor.Tensor, t Target, scale float64) (loss float64, grad *tensor.Tensor) {
	if l == CrossEntropy {
		if t.Labels == nil {
			panic(fmt.Errorf("nn: cross_entropy needs class labels"))
		}
		grad = a.Like(out) // every element written
		return ops.CrossEntropyInto(perLabel(grad, t), perLabel(out, t), t.Labels, scale), grad
	}
	g := tensor.Full(out.DType(), scale)
	switch l {
	case MSE:
		v := t.values(out)
		return ops.MSE(out, v).Item(), ops.MSEBackward(g, out, v)
	case BCEWithLogits:
		v := t.values(out)
		return ops.BCEWithLogits(out, v).Item(), ops.BCEWithLogitsBackward(g, out, v)
	}
	panic(fmt.Errorf("nn: unknown loss %q", string(l)))
}

// LossSum is the loss of one mini-batch of Total rows, fed to it in row
// order, one micro-batch after another. Every row's loss is added to one
// float64 sum in row order, and every gradient element is scaled by 1/Total
// (1/elements for mse and bce_with_logits) directly, so neither the mean loss
// nor the gradients depend on how the mini-batch was cut. The zero value with
// Loss and Total set is ready; set a new one for each mini-batch.
type LossSum struct {
	Loss    Loss
	Total   int // rows in the mini-batch
	Threads int // cross_entropy's goroutines, as Pass.Threads; the bits do not depend on it

	sum   float64
	terms int // the mean's divisor: Total, times the output's width for mse and bce_with_logits
	dt    tensor.DType
}

// Add adds the losses of out, the mini-batch's next rows, against their
// target t, and returns the gradient of the mini-batch mean loss with respect
// to out, lent by a (nil allocates), as layers' outputs are: a training
// step's loss then allocates nothing for cross_entropy.
func (s *LossSum) Add(a *Arena, out *tensor.Tensor, t Target) *tensor.Tensor {
	grad := a.Like(out) // every element written below
	s.dt = out.DType()
	if s.Loss == CrossEntropy {
		if t.Labels == nil {
			panic(fmt.Errorf("nn: cross_entropy needs class labels"))
		}
		s.terms = s.Total * t.per()
		s.sum = ops.CrossEntropySumInto(perLabel(grad, t), perLabel(out, t), t.Labels, 1/float64(s.terms), s.sum, s.Threads)
		return grad
	}
	s.terms = s.Total * (out.Size() / max(1, out.Dim(0)))
	v := t.values(out)
	switch s.Loss {
	case MSE:
		s.sum = ops.MSESumInto(grad, out, v, 1/float64(s.terms), s.sum)
	case BCEWithLogits:
		s.sum = ops.BCEWithLogitsSumInto(grad, out, v, 1/float64(s.terms), s.sum)
	default:
		panic(fmt.Errorf("nn: unknown loss %q", string(s.Loss)))
	}
	return grad
}

// Mean returns the mini-batch mean loss once every row has been added, in
// the dtype of the outputs (a float32 model's loss is rounded to float32, as
// PyTorch's is).
func (s *LossSum) Mean() float64 {
	m := s.sum / float64(s.terms)
	if s.dt == tensor.Float32 {
		m = float64(float32(m))
	}
	return m
}

// perLabel views out [rows, per·C] as the rows of its labels [rows·per, C],
// without a copy.
func perLabel(out *tensor.Tensor, t Target) *tensor.Tensor {
	per := t.per()
	if per == 1 {
		return out
	}
	rows, cols := out.Dim(0), out.Size()/max(1, out.Dim(0))
	if cols%per != 0 {
		panic(fmt.Errorf("nn: outputs of %d values a row do not split into %d labels", cols, per))
	}
	if out.DType() == tensor.Float32 {
		return tensor.Wrap32(out.Data32(), rows*per, cols/per)
	}
	return tensor.Wrap64(out.Data64(), rows*per, cols/per)
}

// Labeled returns how many labels t has: a label a row, or PerRow.
func (t Target) Labeled() int { return len(t.Labels) }

// Correct counts the labels of t that are the largest of their outputs
// in out.
func (t Target) Correct(out *tensor.Tensor) int {
	n := 0
	for i, p := range Predict(perLabel(out, t)) {
		if p == t.Labels[i] {
			n++
		}
	}
	return n
}

// Valid reports whether l names a loss.
func (l Loss) Valid() bool {
	for _, v := range Losses {
		if l == v {
			return true
		}
	}
	return false
}

func (t Target) values(out *tensor.Tensor) *tensor.Tensor {
	if t.Values != nil {
		if t.Values.DType() != out.DType() {
			return t.Values.As(out.DType())
		}
		return t.Values
	}
	s := out.Shape()
	oh := tensor.Zeros(out.DType(), s...)
	for i, y := range t.Labels {
		if y < 0 || y >= s[1] {
			panic(fmt.Errorf("nn: label %d at row %d is outside [0, %d)", y, i, s[1]))
		}
		oh.Set(1, i, y)
	}
	return oh
}

// Predict returns the index of the largest output of each row.
func Predict(out *tensor.Tensor) []int {
	s := out.Shape()
	pred := make([]int, s[0])
	if out.DType() == tensor.Float32 {
		argmaxRows(pred, out.Data32(), s[1]) // no float64 copy: a chunk of GPT-2's logits is 206 MB
	} else {
		argmaxRows(pred, out.Float64s(), s[1])
	}
	return pred
}

// argmaxRows writes into pred the index of each row's first largest value.
func argmaxRows[T float32 | float64](pred []int, v []T, cols int) {
	for i := range pred {
		row := v[i*cols : (i+1)*cols]
		best := 0
		for j := 1; j < cols; j++ {
			if row[j] > row[best] {
				best = j
			}
		}
		pred[i] = best
	}
}
