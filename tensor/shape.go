package tensor

import (
	"fmt"
	"math"
)

// SizeOf returns the number of elements of a shape: 1 for [], 0 if any axis is 0.
// It panics on a negative axis length.
func SizeOf(shape []int) int { return mustSize("tensor.SizeOf", shape) }

func checkedSize(shape []int) (int, error) {
	// The messages format a copy, so that shape does not escape: a variadic
	// shape then costs no allocation.
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative axis length in shape %v", cloneInts(shape))
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v is too large", cloneInts(shape))
		}
		n *= d
	}
	return n, nil
}

// Strides returns the row-major strides of shape, in elements.
func Strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// EqualShapes reports whether a and b are the same shape.
func EqualShapes(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BroadcastShapes returns the shape that a and b broadcast to under NumPy's rules:
// shapes are aligned at their last axes, and each pair of lengths must be equal or
// contain a 1. ok is false if they do not fit.
func BroadcastShapes(a, b []int) (out []int, ok bool) {
	n := max(len(a), len(b))
	out = make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, false
		}
	}
	return out, true
}

// BroadcastStrides returns, for an operand of shape in broadcast to out, the stride
// of each of out's axes in the operand's storage: 0 on prepended and stretched axes.
// shape must broadcast to out.
func BroadcastStrides(shape, out []int) []int {
	st := Strides(shape)
	r := make([]int, len(out))
	off := len(out) - len(shape)
	for i := range out {
		j := i - off
		if j < 0 || shape[j] == 1 && out[i] != 1 {
			continue
		}
		r[i] = st[j]
	}
	return r
}

// ResolveShape checks that shape holds exactly size elements, inferring a single
// -1 axis from the others, and returns the resolved shape.
func ResolveShape(size int, shape []int) ([]int, error) {
	s := cloneInts(shape)
	infer := -1
	known := 1
	for i, d := range s {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d == -1:
			return nil, fmt.Errorf("shape %v has more than one -1", shape)
		case d < 0:
			return nil, fmt.Errorf("shape %v has a negative axis", shape)
		default:
			known *= d
		}
	}
	if infer >= 0 {
		if known == 0 || size%known != 0 {
			return nil, fmt.Errorf("shape %v does not fit %d elements", shape, size)
		}
		s[infer] = size / known
		return s, nil
	}
	if known != size {
		return nil, fmt.Errorf("shape %v does not fit %d elements", shape, size)
	}
	return s, nil
}

// NormalizeAxis maps a possibly negative axis onto [0, rank). ok is false when it is
// out of range.
func NormalizeAxis(axis, rank int) (int, bool) {
	if axis < 0 {
		axis += rank
	}
	return axis, axis >= 0 && axis < rank
}

func cloneInts(s []int) []int {
	if s == nil {
		return []int{}
	}
	return append(make([]int, 0, len(s)), s...)
}
