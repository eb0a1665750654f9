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
}

// Rows returns the number of samples in the target.
func (t Target) Rows() int {
	if t.Values != nil {
		return t.Values.Shape()[0]
	}
	return len(t.Labels)
}

// Slice returns the target of rows [lo, hi).
func (t Target) Slice(lo, hi int) Target {
	var s Target
	if t.Labels != nil {
		s.Labels = t.Labels[lo:hi]
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
// with respect to out, multiplied by scale. A trainer passes scale = rows of this
// micro-batch / rows of the mini-batch, so summed gradients are the mini-batch mean.
func (l Loss) Compute(out *tensor.Tensor, t Target, scale float64) (loss float64, grad *tensor.Tensor) {
	return l.ComputeIn(nil, out, t, scale)
}

// ComputeIn is Compute with the gradient lent by a (nil allocates), as layers'
// outputs are: a training step's loss then allocates nothing.
func (l Loss) ComputeIn(a *Arena, out *tensor.Tensor, t Target, scale float64) (loss float64, grad *tensor.Tensor) {
	if l == CrossEntropy {
		if t.Labels == nil {
			panic(fmt.Errorf("nn: cross_entropy needs class labels"))
		}
		grad = a.Like(out)
		return ops.CrossEntropyInto(grad, out, t.Labels, scale), grad
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
	v := out.Float64s()
	pred := make([]int, s[0])
	for i := range pred {
		best := 0
		for j := 1; j < s[1]; j++ {
			if v[i*s[1]+j] > v[i*s[1]+best] {
				best = j
			}
		}
		pred[i] = best
	}
	return pred
}
