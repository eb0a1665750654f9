package nn

import "github.com/pipetrain/pipetrain/tensor"

// Arena lends the tensors that layers return during the passes of one
// micro-batch, so that a pipeline reuses them step after step instead of
// allocating. Its owner calls Reset once nothing lent since the previous
// Reset is read any more (in a pipeline: when the step's update arrives, as
// every backward of the step is done by then). After a Reset the same
// sequence of requests gets the same tensors back.
//
// A nil *Arena allocates, so a Pass without one behaves as before.
type Arena struct {
	bufs []*tensor.Tensor
	next int
}

// Tensor returns a tensor of dt and shape. From a non-nil Arena its contents
// are whatever its last use left: the caller must write every element. A nil
// Arena returns zeros.
func (a *Arena) Tensor(dt tensor.DType, shape ...int) *tensor.Tensor {
	if a == nil {
		return tensor.Zeros(dt, shape...)
	}
	if a.next < len(a.bufs) {
		t := a.bufs[a.next]
		if t.DType() == dt && t.HasShape(shape...) {
			a.next++
			return t
		}
		// The sequence changed (a smaller last batch, say): replace this one.
		a.bufs[a.next] = tensor.Zeros(dt, shape...)
	} else {
		a.bufs = append(a.bufs, tensor.Zeros(dt, shape...))
	}
	a.next++
	return a.bufs[a.next-1]
}

// Like returns a tensor of x's dtype and shape, as Tensor does.
func (a *Arena) Like(x *tensor.Tensor) *tensor.Tensor {
	if a != nil && a.next < len(a.bufs) {
		if t := a.bufs[a.next]; t.DType() == x.DType() && t.SameShape(x) {
			a.next++
			return t
		}
	}
	return a.Tensor(x.DType(), x.Shape()...)
}

// Reset makes every tensor lent so far available again.
func (a *Arena) Reset() {
	if a != nil {
		a.next = 0
	}
}
