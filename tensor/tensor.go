package tensor

import (
	"fmt"
	"github.com/pipetrain/pipetrain/internal/vec"
	"slices"
	"strings"
)

// DType is the element type of a Tensor.
type DType uint8

const (
	Float32 DType = iota // training default
	Float64              // gradient checks, reference math
)

// String returns "float32" or "float64".
func (dt DType) String() string {
	switch dt {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("DType(%d)", uint8(dt))
}

// Tensor is a dense, row-major N-d array of float32 or float64.
// Exactly one of f32 and f64 backs the elements, according to dtype.
type Tensor struct {
	dtype DType
	shape []int
	f32   []float32
	f64   []float64
}

// Zeros returns a zero-filled tensor of the given dtype and shape.
// No shape arguments give a 0-D scalar.
func Zeros(dt DType, shape ...int) *Tensor {
	n := mustSize("tensor.Zeros", shape)
	t := &Tensor{dtype: dt, shape: cloneInts(shape)}
	switch dt {
	case Float32:
		t.f32 = make([]float32, n)
	case Float64:
		t.f64 = make([]float64, n)
	default:
		panic(fmt.Errorf("tensor.Zeros: unknown dtype %v", dt))
	}
	return t
}

// Full returns a tensor of the given dtype and shape with every element v.
func Full(dt DType, v float64, shape ...int) *Tensor {
	t := Zeros(dt, shape...)
	t.Fill(v)
	return t
}

// FromFloat64s returns a tensor holding a copy of data, converted to dt.
// It panics if len(data) != product(shape).
func FromFloat64s(dt DType, data []float64, shape ...int) *Tensor {
	n := mustSize("tensor.FromFloat64s", shape)
	if len(data) != n {
		panic(fmt.Errorf("tensor.FromFloat64s: %d values do not fill shape %v (%d elements)", len(data), shape, n))
	}
	t := Zeros(dt, shape...)
	switch dt {
	case Float32:
		for i, v := range data {
			t.f32[i] = float32(v)
		}
	case Float64:
		copy(t.f64, data)
	}
	return t
}

// FromFloat32s returns a float32 tensor holding a copy of data.
// It panics if len(data) != product(shape).
func FromFloat32s(data []float32, shape ...int) *Tensor {
	n := mustSize("tensor.FromFloat32s", shape)
	if len(data) != n {
		panic(fmt.Errorf("tensor.FromFloat32s: %d values do not fill shape %v (%d elements)", len(data), shape, n))
	}
	return &Tensor{dtype: Float32, shape: cloneInts(shape), f32: append([]float32(nil), data...)}
}

// Wrap32 returns a float32 tensor that uses data as its storage, without copying.
// The caller gives up ownership of data.
func Wrap32(data []float32, shape ...int) *Tensor {
	n := mustSize("tensor.Wrap32", shape)
	if len(data) != n {
		panic(fmt.Errorf("tensor.Wrap32: %d values do not fill shape %v (%d elements)", len(data), shape, n))
	}
	return &Tensor{dtype: Float32, shape: cloneInts(shape), f32: data}
}

// Wrap64 returns a float64 tensor that uses data as its storage, without copying.
// The caller gives up ownership of data.
func Wrap64(data []float64, shape ...int) *Tensor {
	n := mustSize("tensor.Wrap64", shape)
	if len(data) != n {
		panic(fmt.Errorf("tensor.Wrap64: %d values do not fill shape %v (%d elements)", len(data), shape, n))
	}
	return &Tensor{dtype: Float64, shape: cloneInts(shape), f64: data}
}

// Shape returns a copy of the shape; a scalar has shape [].
func (t *Tensor) Shape() []int { return cloneInts(t.shape) }

// HasShape reports whether t's shape is shape, without copying either.
func (t *Tensor) HasShape(shape ...int) bool { return slices.Equal(t.shape, shape) }

// SameShape reports whether t and u have the same shape.
func (t *Tensor) SameShape(u *Tensor) bool { return slices.Equal(t.shape, u.shape) }

// Dims returns the number of axes (0 for a scalar).
func (t *Tensor) Dims() int { return len(t.shape) }

// Dim returns the length of axis i; negative i counts from the end.
func (t *Tensor) Dim(i int) int {
	if i < 0 {
		i += len(t.shape)
	}
	if i < 0 || i >= len(t.shape) {
		panic(fmt.Errorf("tensor.Dim: axis %d out of range for shape %v", i, t.shape))
	}
	return t.shape[i]
}

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Size returns the number of elements: 1 for a scalar, 0 for an empty tensor.
func (t *Tensor) Size() int {
	if t.dtype == Float32 {
		return len(t.f32)
	}
	return len(t.f64)
}

// Float64s returns a copy of the elements in row-major order, as float64.
func (t *Tensor) Float64s() []float64 {
	if t.dtype == Float64 {
		return convert[float64](t.f64)
	}
	return convert[float64](t.f32)
}

// Float32s returns a copy of the elements in row-major order, as float32.
func (t *Tensor) Float32s() []float32 {
	if t.dtype == Float32 {
		return convert[float32](t.f32)
	}
	return convert[float32](t.f64)
}

// convert returns a copy of src converted element by element.
func convert[D, S float32 | float64](src []S) []D {
	out := make([]D, len(src))
	for i, v := range src {
		out[i] = D(v)
	}
	return out
}

// Data32 returns the float32 storage itself, not a copy; writes change the tensor.
// It panics if t is not Float32.
func (t *Tensor) Data32() []float32 {
	if t.dtype != Float32 {
		panic(fmt.Errorf("tensor.Data32: tensor is %v", t.dtype))
	}
	return t.f32
}

// Data64 returns the float64 storage itself, not a copy; writes change the tensor.
// It panics if t is not Float64.
func (t *Tensor) Data64() []float64 {
	if t.dtype != Float64 {
		panic(fmt.Errorf("tensor.Data64: tensor is %v", t.dtype))
	}
	return t.f64
}

// At returns the element at the given index (one coordinate per axis).
func (t *Tensor) At(idx ...int) float64 {
	i := t.offset("tensor.At", idx)
	if t.dtype == Float32 {
		return float64(t.f32[i])
	}
	return t.f64[i]
}

// Set stores v at the given index (one coordinate per axis).
func (t *Tensor) Set(v float64, idx ...int) {
	i := t.offset("tensor.Set", idx)
	if t.dtype == Float32 {
		t.f32[i] = float32(v)
		return
	}
	t.f64[i] = v
}

// Item returns the only element of a one-element tensor, such as a loss.
func (t *Tensor) Item() float64 {
	if t.Size() != 1 {
		panic(fmt.Errorf("tensor.Item: shape %v holds %d elements, not 1", t.shape, t.Size()))
	}
	if t.dtype == Float32 {
		return float64(t.f32[0])
	}
	return t.f64[0]
}

// Fill sets every element to v.
func (t *Tensor) Fill(v float64) {
	if t.dtype == Float32 {
		f := float32(v)
		for i := range t.f32 {
			t.f32[i] = f
		}
		return
	}
	for i := range t.f64 {
		t.f64[i] = v
	}
}

// Zero sets every element to 0.
func (t *Tensor) Zero() {
	if t.dtype == Float32 {
		clear(t.f32)
		return
	}
	clear(t.f64)
}

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	c := &Tensor{dtype: t.dtype, shape: cloneInts(t.shape)}
	if t.dtype == Float32 {
		c.f32 = append(make([]float32, 0, len(t.f32)), t.f32...)
	} else {
		c.f64 = append(make([]float64, 0, len(t.f64)), t.f64...)
	}
	return c
}

// CopyFrom copies src's elements into t. The dtypes and sizes must match.
func (t *Tensor) CopyFrom(src *Tensor) {
	if t.dtype != src.dtype || t.Size() != src.Size() {
		panic(fmt.Errorf("tensor.CopyFrom: %v %v from %v %v", t.dtype, t.shape, src.dtype, src.shape))
	}
	if t.dtype == Float32 {
		copy(t.f32, src.f32)
		return
	}
	copy(t.f64, src.f64)
}

// Reshape returns a tensor with the given shape that shares t's storage.
// One axis may be -1, inferred from the others.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	s, err := ResolveShape(t.Size(), shape)
	if err != nil {
		panic(fmt.Errorf("tensor.Reshape: %v", err))
	}
	return &Tensor{dtype: t.dtype, shape: s, f32: t.f32, f64: t.f64}
}

// SetView makes t a view of src's elements [off, off+SizeOf(shape)) with the
// given shape, sharing src's storage as Reshape's result does, and returns
// t. t keeps its shape slice when it has room, so a header kept for views
// costs no allocation per view. t must be a header no one else reads: its
// old shape and storage are let go.
func (t *Tensor) SetView(src *Tensor, off int, shape ...int) *Tensor {
	n := mustSize("tensor.SetView", shape)
	if off < 0 || off > src.Size()-n {
		panic(fmt.Errorf("tensor.SetView: %d elements from %d of %v %v", n, off, src.dtype, src.shape))
	}
	t.dtype, t.shape, t.f32, t.f64 = src.dtype, append(t.shape[:0], shape...), nil, nil
	if src.dtype == Float32 {
		t.f32 = src.f32[off : off+n]
	} else {
		t.f64 = src.f64[off : off+n]
	}
	return t
}

// As returns a copy of t converted to dt (t itself is never modified).
func (t *Tensor) As(dt DType) *Tensor {
	if dt == t.dtype {
		return t.Clone()
	}
	return FromFloat64s(dt, t.Float64s(), t.shape...)
}

// IsFinite reports whether no element is NaN or infinite.
func (t *Tensor) IsFinite() bool {
	if t.dtype == Float32 {
		return vec.AllFinite(t.f32)
	}
	return finite(t.f64)
}

// finite uses x-x, which is 0 for finite x and NaN for NaN and ±Inf; summing
// in blocks keeps the loop free of branches.
func finite(xs []float64) bool {
	for len(xs) > 0 {
		n := min(len(xs), 256)
		var acc float64
		for _, v := range xs[:n] {
			acc += v - v
		}
		if acc != 0 {
			return false
		}
		xs = xs[n:]
	}
	return true
}

// String formats the tensor as its dtype, shape and values, for examples and tests.
func (t *Tensor) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v%v", t.dtype, t.shape)
	vals := t.Float64s()
	b.WriteString(" [")
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == 32 {
			fmt.Fprintf(&b, "... (%d more)", len(vals)-32)
			break
		}
		fmt.Fprintf(&b, "%.4g", v)
	}
	b.WriteByte(']')
	return b.String()
}

func (t *Tensor) offset(op string, idx []int) int {
	if len(idx) != len(t.shape) {
		panic(fmt.Errorf("%s: index %v has %d coordinates for shape %v", op, idx, len(idx), t.shape))
	}
	off := 0
	for i, v := range idx {
		if v < 0 || v >= t.shape[i] {
			panic(fmt.Errorf("%s: index %v out of range for shape %v", op, idx, t.shape))
		}
		off = off*t.shape[i] + v
	}
	return off
}

func mustSize(op string, shape []int) int {
	n, err := checkedSize(shape)
	if err != nil {
		panic(fmt.Errorf("%s: %v", op, err))
	}
	return n
}
