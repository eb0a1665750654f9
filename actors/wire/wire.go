package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// Int64s and Ints convert the int slices of the wire's messages.
func Int64s(xs []int) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

func Ints(xs []int64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

// FromTensor returns t as a wire Tensor; the bytes are a copy.
func FromTensor(t *tensor.Tensor) *Tensor {
	shape := t.Shape()
	w := &Tensor{Shape: make([]int64, len(shape))}
	for i, d := range shape {
		w.Shape[i] = int64(d)
	}
	if t.DType() == tensor.Float32 {
		src := t.Data32()
		w.Data = make([]byte, 4*len(src))
		if littleEndian && len(src) > 0 { // the bytes are already in wire order
			copy(w.Data, unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), len(w.Data)))
			return w
		}
		for i, v := range src {
			binary.LittleEndian.PutUint32(w.Data[4*i:], math.Float32bits(v))
		}
		return w
	}
	w.Dtype = DType_FLOAT64
	src := t.Data64()
	w.Data = make([]byte, 8*len(src))
	if littleEndian && len(src) > 0 {
		copy(w.Data, unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), len(w.Data)))
		return w
	}
	for i, v := range src {
		binary.LittleEndian.PutUint64(w.Data[8*i:], math.Float64bits(v))
	}
	return w
}

// littleEndian is whether this machine stores floats in wire order, so
// that a tensor's bytes can be copied as they are.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// maxElements bounds a tensor read from the wire: a shape whose product
// overflows, or asks for more than this, is refused before any allocation.
const maxElements = 1 << 34

// ToTensor returns the tensor w holds, after checking that its shape, type
// and bytes agree. On a little-endian machine it shares w's bytes when they
// are aligned for the dtype (a decoded message owns fresh ones), saving a
// copy of every activation that crosses: w must not change afterwards.
func (w *Tensor) ToTensor() (*tensor.Tensor, error) {
	if w == nil {
		return nil, errors.New("wire: no tensor")
	}
	var size int
	switch w.Dtype {
	case DType_FLOAT32:
		size = 4
	case DType_FLOAT64:
		size = 8
	default:
		return nil, fmt.Errorf("wire: tensor of unknown dtype %d", w.Dtype)
	}
	shape := make([]int, len(w.Shape))
	n := int64(1)
	for i, d := range w.Shape {
		if d < 0 || d > maxElements || (d > 0 && n > maxElements/d) {
			return nil, fmt.Errorf("wire: tensor shape %v: dimension %d is %d", w.Shape, i, d)
		}
		n *= d
		shape[i] = int(d)
	}
	if int64(len(w.Data)) != n*int64(size) {
		return nil, fmt.Errorf("wire: tensor of shape %v and %v holds %d bytes, want %d", w.Shape, w.Dtype, len(w.Data), n*int64(size))
	}
	if littleEndian && n > 0 && uintptr(unsafe.Pointer(&w.Data[0]))%uintptr(size) == 0 {
		if size == 4 {
			return tensor.Wrap32(unsafe.Slice((*float32)(unsafe.Pointer(&w.Data[0])), n), shape...), nil
		}
		return tensor.Wrap64(unsafe.Slice((*float64)(unsafe.Pointer(&w.Data[0])), n), shape...), nil
	}
	if w.Dtype == DType_FLOAT32 {
		t := tensor.Zeros(tensor.Float32, shape...)
		copyLE(t.Data32(), w.Data, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
		return t, nil
	}
	t := tensor.Zeros(tensor.Float64, shape...)
	copyLE(t.Data64(), w.Data, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	return t, nil
}

// copyLE fills dst from the little-endian bytes src, size bytes an element:
// a copy of the bytes on a little-endian machine, else read by get.
func copyLE[T float32 | float64](dst []T, src []byte, size int, get func([]byte) T) {
	if littleEndian && len(dst) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(src)), src)
		return
	}
	for i := range dst {
		dst[i] = get(src[size*i:])
	}
}

// FromError returns err as a wire Error: a non-finite value keeps its
// layer, type, step and pass; anything else keeps its text.
func FromError(err error) *Error {
	var nf *nn.NonFiniteError
	if errors.As(err, &nf) {
		return &Error{Code: Code_NON_FINITE, Layer: int64(nf.Layer), Kind: nf.Kind, Step: int64(nf.Step), Where: nf.Where, Text: err.Error()}
	}
	return &Error{Code: Code_INTERNAL, Text: err.Error()}
}

// Err returns the error w describes: an *nn.NonFiniteError for NON_FINITE,
// else an error with w's text.
func (w *Error) Err() error {
	if w == nil {
		return errors.New("wire: no error")
	}
	if w.Code == Code_NON_FINITE {
		return &nn.NonFiniteError{Layer: int(w.Layer), Kind: w.Kind, Step: int(w.Step), Where: w.Where}
	}
	return errors.New(w.Text)
}
