package ops

import (
	"slices"

	"github.com/pipetrain/pipetrain/tensor"
)

// Reshape returns a copy of x with the given shape; one axis may be -1.
func Reshape(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	s, err := tensor.ResolveShape(x.Size(), shape)
	if err != nil {
		fail("Reshape", "cannot reshape %v to %v: %v", x.Shape(), shape, err)
	}
	return x.Clone().Reshape(s...)
}

// ReshapeBackward returns grad reshaped back to inputShape.
func ReshapeBackward(grad *tensor.Tensor, inputShape []int) *tensor.Tensor {
	if tensor.SizeOf(inputShape) != grad.Size() {
		fail("ReshapeBackward", "grad shape %v does not fit input shape %v", grad.Shape(), inputShape)
	}
	return grad.Clone().Reshape(inputShape...)
}

// Transpose returns x with all its axes reversed (a matrix transpose for 2-D).
func Transpose(x *tensor.Tensor) *tensor.Tensor {
	in := x.Shape()
	out := slices.Clone(in)
	slices.Reverse(out)
	st := tensor.Strides(in)
	slices.Reverse(st)
	idx := offsets(out, st)
	res := tensor.Zeros(x.DType(), out...)
	if x.DType() == tensor.Float32 {
		gather(res.Data32(), x.Data32(), idx)
	} else {
		gather(res.Data64(), x.Data64(), idx)
	}
	return res
}

// TransposeBackward returns grad with its axes reversed back.
func TransposeBackward(grad *tensor.Tensor) *tensor.Tensor { return Transpose(grad) }

func gather[T float](dst, src []T, idx []int) {
	for i, j := range idx {
		dst[i] = src[j]
	}
}

// Concat joins xs along axis (negative counts from the end). Every input has the
// same rank and the same lengths off the axis; as in torch.cat, 1-D empty inputs
// of shape [0] are skipped.
func Concat(axis int, xs ...*tensor.Tensor) *tensor.Tensor {
	if len(xs) == 0 {
		fail("Concat", "no tensors to concatenate")
	}
	dtypeOf("Concat", xs...)
	parts := make([]*tensor.Tensor, 0, len(xs))
	for _, x := range xs {
		if x.Dims() == 1 && x.Size() == 0 {
			continue
		}
		parts = append(parts, x)
	}
	if len(parts) == 0 {
		return tensor.Zeros(xs[0].DType(), 0)
	}
	shapes := make([][]int, len(parts))
	for i, p := range parts {
		shapes[i] = p.Shape()
	}
	ax, out := concatShape("Concat", axis, shapes, xs)
	res := tensor.Zeros(parts[0].DType(), out...)
	outer := tensor.SizeOf(out[:ax])
	inner := tensor.SizeOf(out[ax+1:])
	col := 0
	for _, p := range parts {
		w := p.Shape()[ax] * inner
		if p.DType() == tensor.Float32 {
			copyBlock(res.Data32(), p.Data32(), outer, out[ax]*inner, col, w)
		} else {
			copyBlock(res.Data64(), p.Data64(), outer, out[ax]*inner, col, w)
		}
		col += w
	}
	return res
}

// ConcatBackward splits grad along axis into pieces of the given input shapes.
func ConcatBackward(grad *tensor.Tensor, axis int, shapes ...[]int) []*tensor.Tensor {
	if len(shapes) == 0 {
		fail("ConcatBackward", "no input shapes (grad shape %v)", grad.Shape())
	}
	var kept [][]int
	for _, s := range shapes {
		if !(len(s) == 1 && s[0] == 0) {
			kept = append(kept, s)
		}
	}
	grads := make([]*tensor.Tensor, len(shapes))
	if len(kept) == 0 {
		for i, s := range shapes {
			grads[i] = tensor.Zeros(grad.DType(), s...)
		}
		return grads
	}
	ax, out := concatShape("ConcatBackward", axis, kept, nil)
	if !tensor.EqualShapes(out, grad.Shape()) {
		fail("ConcatBackward", "grad shape %v does not match the concatenation %v of %v", grad.Shape(), out, shapes)
	}
	outer := tensor.SizeOf(out[:ax])
	inner := tensor.SizeOf(out[ax+1:])
	col := 0
	for i, s := range shapes {
		g := tensor.Zeros(grad.DType(), s...)
		grads[i] = g
		if len(s) == 1 && s[0] == 0 {
			continue
		}
		w := s[ax] * inner
		if g.DType() == tensor.Float32 {
			takeBlock(g.Data32(), grad.Data32(), outer, out[ax]*inner, col, w)
		} else {
			takeBlock(g.Data64(), grad.Data64(), outer, out[ax]*inner, col, w)
		}
		col += w
	}
	return grads
}

// concatShape validates shapes for a concatenation along axis and returns the
// normalized axis and the result shape.
func concatShape(op string, axis int, shapes [][]int, xs []*tensor.Tensor) (int, []int) {
	describe := func() string {
		if xs != nil {
			return shapesOf(xs...)
		}
		return fmtShapes(shapes)
	}
	rank := len(shapes[0])
	if rank == 0 {
		fail(op, "cannot concatenate 0-D tensors (shapes %s)", describe())
	}
	ax, ok := tensor.NormalizeAxis(axis, rank)
	if !ok {
		fail(op, "axis %d out of range for shapes %s", axis, describe())
	}
	out := slices.Clone(shapes[0])
	for _, s := range shapes[1:] {
		if len(s) != rank {
			fail(op, "shapes %s differ in rank", describe())
		}
		for d := range s {
			if d != ax && s[d] != out[d] {
				fail(op, "shapes %s differ off axis %d", describe(), axis)
			}
		}
		out[ax] += s[ax]
	}
	return ax, out
}

// copyBlock writes each of outer rows of src (width w) into dst at column col of rows of width stride.
func copyBlock[T float](dst, src []T, outer, stride, col, w int) {
	for o := range outer {
		copy(dst[o*stride+col:o*stride+col+w], src[o*w:(o+1)*w])
	}
}

// takeBlock is copyBlock's inverse.
func takeBlock[T float](dst, src []T, outer, stride, col, w int) {
	for o := range outer {
		copy(dst[o*w:(o+1)*w], src[o*stride+col:o*stride+col+w])
	}
}
