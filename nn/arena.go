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

	// with Share: requests of the micro-batch's rows are rows [lo, hi) of
	// the step-wide tensors of rows
	rows   *StepRows
	lo, hi int
	total  int
	viewOf []*tensor.Tensor // per request, the step-wide tensor bufs[i] views, or nil

	// headers lent by view, in the order of the requests
	views    []*tensor.Tensor
	nextView int

	lent int64 // bytes of the tensors lent since Reset
}

// StepRows holds step-wide tensors shared by the arenas of one step's
// micro-batches: the i-th request of every micro-batch gets its rows of the
// i-th tensor. A layer's inputs and gradients for the whole step then lie
// in one block of memory, micro-batch after micro-batch, so that work over
// the whole step (a weight gradient) can run as one call.
type StepRows struct {
	bufs []*tensor.Tensor
}

// Share makes the arena lend rows [lo, hi) of a's step-wide tensors of
// total rows for requests whose first dimension is hi-lo; others are the
// arena's own. Call it before the micro-batch's first request of a step.
func (a *Arena) Share(s *StepRows, lo, hi, total int) {
	a.rows, a.lo, a.hi, a.total = s, lo, hi, total
}

// Tensor returns a tensor of dt and shape. From a non-nil Arena its contents
// are whatever its last use left: the caller must write every element. A nil
// Arena returns zeros.
func (a *Arena) Tensor(dt tensor.DType, shape ...int) *tensor.Tensor {
	if a == nil {
		return tensor.Zeros(dt, shape...)
	}
	if a.rows != nil && len(shape) > 0 && shape[0] == a.hi-a.lo {
		return a.count(a.shared(dt, shape))
	}
	if a.next < len(a.bufs) {
		t := a.bufs[a.next]
		if t.DType() == dt && t.HasShape(shape...) {
			a.next++
			return a.count(t)
		}
		// The sequence changed (a smaller last batch, say): replace this one.
		a.bufs[a.next] = tensor.Zeros(dt, shape...)
	} else {
		a.bufs = append(a.bufs, tensor.Zeros(dt, shape...))
	}
	a.next++
	return a.count(a.bufs[a.next-1])
}

// count adds t's bytes to those lent and returns t.
func (a *Arena) count(t *tensor.Tensor) *tensor.Tensor {
	a.lent += tensorBytes(t)
	return t
}

// Lent returns the bytes of the tensors lent since the last Reset (views
// of other tensors not counted): after a micro-batch's forward pass, the
// activations its layers keep for the backward and hand on.
func (a *Arena) Lent() int64 {
	if a == nil {
		return 0
	}
	return a.lent
}

// Held returns the bytes of the tensors the arena keeps for lending, its
// own and its rows of step-wide ones (views of other tensors not counted):
// what it takes in memory, lent or not.
func (a *Arena) Held() int64 {
	if a == nil {
		return 0
	}
	var n int64
	for _, t := range a.bufs {
		if t != nil {
			n += tensorBytes(t)
		}
	}
	return n
}

// tensorBytes returns the bytes t's elements take.
func tensorBytes(t *tensor.Tensor) int64 {
	if t.DType() == tensor.Float64 {
		return 8 * int64(t.Size())
	}
	return 4 * int64(t.Size())
}

// shared lends rows [lo, hi) of step-wide tensor number a.next, made or
// replaced to fit, through a view the arena keeps (no allocation when the
// same requests come again).
func (a *Arena) shared(dt tensor.DType, shape []int) *tensor.Tensor {
	i := a.next
	a.next++
	s := a.rows
	for len(s.bufs) <= i {
		s.bufs = append(s.bufs, nil)
	}
	whole := s.bufs[i]
	if whole == nil || whole.DType() != dt || whole.Dim(0) != a.total || !tensor.EqualShapes(whole.Shape()[1:], shape[1:]) {
		full := append([]int{a.total}, shape[1:]...)
		whole = tensor.Zeros(dt, full...)
		s.bufs[i] = whole
	}
	for len(a.bufs) <= i {
		a.bufs = append(a.bufs, nil)
	}
	for len(a.viewOf) <= i {
		a.viewOf = append(a.viewOf, nil)
	}
	if v := a.bufs[i]; v != nil && a.viewOf[i] == whole && v.HasShape(shape...) && sameStart(v, whole, a.lo) {
		return v
	}
	v := Rows(whole, a.lo, a.hi)
	a.bufs[i], a.viewOf[i] = v, whole
	return v
}

// sameStart reports whether view v begins at row lo of whole.
func sameStart(v, whole *tensor.Tensor, lo int) bool {
	row := whole.Size() / max(1, whole.Dim(0))
	if v.DType() == tensor.Float32 {
		d, w := v.Data32(), whole.Data32()
		return len(d) > 0 && lo*row < len(w) && &d[0] == &w[lo*row]
	}
	d, w := v.Data64(), whole.Data64()
	return len(d) > 0 && lo*row < len(w) && &d[0] == &w[lo*row]
}

// Like returns a tensor of x's dtype and shape, as Tensor does.
func (a *Arena) Like(x *tensor.Tensor) *tensor.Tensor {
	if a != nil && a.rows != nil {
		return a.Tensor(x.DType(), x.Shape()...)
	}
	if a != nil && a.next < len(a.bufs) {
		if t := a.bufs[a.next]; t.DType() == x.DType() && t.SameShape(x) {
			a.next++
			return a.count(t)
		}
	}
	return a.Tensor(x.DType(), x.Shape()...)
}

// view returns x's elements from off on, with the given shape, through a
// header the arena lends as it lends tensors: valid until Reset, so a layer
// may cache it or return it. A nil Arena makes a new header.
func (a *Arena) view(x *tensor.Tensor, off int, shape ...int) *tensor.Tensor {
	if a == nil {
		return new(tensor.Tensor).SetView(x, off, shape...)
	}
	if a.nextView == len(a.views) {
		a.views = append(a.views, new(tensor.Tensor))
	}
	a.nextView++
	return a.views[a.nextView-1].SetView(x, off, shape...)
}

// viewRows returns Rows(x, lo, hi) through a header lent by a.
func (a *Arena) viewRows(x *tensor.Tensor, lo, hi int) *tensor.Tensor {
	if x.Dims() == 0 || lo < 0 || hi > x.Dim(0) || lo > hi {
		return Rows(x, lo, hi) // panics naming the rows
	}
	if lo == 0 && hi == x.Dim(0) {
		return x
	}
	var buf [8]int
	s := append(buf[:0], hi-lo)
	for i := 1; i < x.Dims(); i++ {
		s = append(s, x.Dim(i))
	}
	row := x.Size() / max(1, x.Dim(0))
	return a.view(x, lo*row, s...)
}

// Reset makes every tensor lent so far available again.
func (a *Arena) Reset() {
	if a != nil {
		a.next, a.nextView, a.lent = 0, 0, 0
	}
}
