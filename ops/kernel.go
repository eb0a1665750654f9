package ops

import (
	"fmt"
	"strings"

	"github.com/pipetrain/pipetrain/tensor"
)

type float interface{ float32 | float64 }

// fail panics with an error whose text starts with the op's qualified name.
func fail(op, format string, args ...any) {
	panic(fmt.Errorf("ops."+op+": "+format, args...))
}

// shapesOf formats the shapes of ts as "[2 3] and [4]" for messages.
func shapesOf(ts ...*tensor.Tensor) string {
	shapes := make([][]int, len(ts))
	for i, t := range ts {
		shapes[i] = t.Shape()
	}
	return fmtShapes(shapes)
}

// fmtShapes formats shapes as "[2 3], [1] and [4]".
func fmtShapes(shapes [][]int) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		parts[i] = fmt.Sprint(s)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// dtypeOf returns the common dtype of ts, panicking if they mix dtypes.
func dtypeOf(op string, ts ...*tensor.Tensor) tensor.DType {
	dt := ts[0].DType()
	for _, t := range ts[1:] {
		if t.DType() != dt {
			dts := make([]string, len(ts))
			for i, u := range ts {
				dts[i] = u.DType().String()
			}
			fail(op, "dtypes %s do not mix (shapes %s)", strings.Join(dts, ", "), shapesOf(ts...))
		}
	}
	return dt
}

// into panics unless dst and every input have one dtype and one shape, naming
// dst first.
func into(op string, dst *tensor.Tensor, ins ...*tensor.Tensor) {
	for _, t := range ins {
		if t.DType() != dst.DType() || !t.SameShape(dst) {
			all := append([]*tensor.Tensor{dst}, ins...)
			dts := make([]string, len(all))
			for i, u := range all {
				dts[i] = u.DType().String()
			}
			fail(op, "destination and inputs differ: dtypes %s, shapes %s", strings.Join(dts, ", "), shapesOf(all...))
		}
	}
}

// sameShape panics unless every tensor has the same shape and dtype.
func sameShape(op string, ts ...*tensor.Tensor) {
	dtypeOf(op, ts...)
	s := ts[0].Shape()
	for _, t := range ts[1:] {
		if !tensor.EqualShapes(s, t.Shape()) {
			fail(op, "shapes %s do not match", shapesOf(ts...))
		}
	}
}

// broadcast returns the broadcast shape of ts, panicking if they do not fit.
func broadcast(op string, ts ...*tensor.Tensor) []int {
	out := ts[0].Shape()
	for _, t := range ts[1:] {
		var ok bool
		out, ok = tensor.BroadcastShapes(out, t.Shape())
		if !ok {
			fail(op, "shapes %s do not broadcast", shapesOf(ts...))
		}
	}
	return out
}

// offsets returns, for each row-major index of shape, the dot product of the
// index with strides. Used to gather broadcast operands and scatter reductions.
func offsets(shape, strides []int) []int {
	n := tensor.SizeOf(shape)
	offs := make([]int, n)
	if n == 0 {
		return offs
	}
	idx := make([]int, len(shape))
	off := 0
	for i := range n {
		offs[i] = off
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= strides[d] * idx[d]
			idx[d] = 0
		}
	}
	return offs
}

// gatherIndex maps each element of out to an element of an operand of shape,
// or returns nil when shape is out itself (the identity map).
func gatherIndex(shape, out []int) []int {
	if tensor.EqualShapes(shape, out) {
		return nil
	}
	return offsets(out, tensor.BroadcastStrides(shape, out))
}

func at(idx []int, i int) int {
	if idx == nil {
		return i
	}
	return idx[i]
}

// map1 applies f to every element of x into a new tensor of x's shape.
func map1(x *tensor.Tensor, f func(float64) float64) *tensor.Tensor {
	out := tensor.Zeros(x.DType(), x.Shape()...)
	if x.DType() == tensor.Float32 {
		map1T(out.Data32(), x.Data32(), f)
	} else {
		map1T(out.Data64(), x.Data64(), f)
	}
	return out
}

func map1T[T float](dst, x []T, f func(float64) float64) {
	for i, v := range x {
		dst[i] = T(f(float64(v)))
	}
}

// map2 applies f elementwise over a and b broadcast together.
func map2(op string, a, b *tensor.Tensor, f func(x, y float64) float64) *tensor.Tensor {
	dtypeOf(op, a, b)
	shape := broadcast(op, a, b)
	out := tensor.Zeros(a.DType(), shape...)
	ia, ib := gatherIndex(a.Shape(), shape), gatherIndex(b.Shape(), shape)
	if a.DType() == tensor.Float32 {
		map2T(out.Data32(), a.Data32(), b.Data32(), ia, ib, f)
	} else {
		map2T(out.Data64(), a.Data64(), b.Data64(), ia, ib, f)
	}
	return out
}

func map2T[T float](dst, a, b []T, ia, ib []int, f func(x, y float64) float64) {
	for i := range dst {
		dst[i] = T(f(float64(a[at(ia, i)]), float64(b[at(ib, i)])))
	}
}

// map3 applies f elementwise over a, b and c broadcast together.
func map3(op string, a, b, c *tensor.Tensor, f func(x, y, z float64) float64) *tensor.Tensor {
	dtypeOf(op, a, b, c)
	shape := broadcast(op, a, b, c)
	out := tensor.Zeros(a.DType(), shape...)
	ia, ib, ic := gatherIndex(a.Shape(), shape), gatherIndex(b.Shape(), shape), gatherIndex(c.Shape(), shape)
	if a.DType() == tensor.Float32 {
		map3T(out.Data32(), a.Data32(), b.Data32(), c.Data32(), ia, ib, ic, f)
	} else {
		map3T(out.Data64(), a.Data64(), b.Data64(), c.Data64(), ia, ib, ic, f)
	}
	return out
}

func map3T[T float](dst, a, b, c []T, ia, ib, ic []int, f func(x, y, z float64) float64) {
	for i := range dst {
		dst[i] = T(f(float64(a[at(ia, i)]), float64(b[at(ib, i)]), float64(c[at(ic, i)])))
	}
}

// gradMap applies f(grad, x) elementwise for a backward whose grad has x's shape.
func gradMap(op string, grad, x *tensor.Tensor, f func(g, x float64) float64) *tensor.Tensor {
	sameShape(op, grad, x)
	return map2(op, grad, x, f)
}

// sumTo sums g over the axes along which an operand of shape was broadcast to
// g's shape, giving a tensor of shape: the gradient of a broadcast input.
func sumTo(op string, g *tensor.Tensor, shape []int) *tensor.Tensor {
	gs := g.Shape()
	if tensor.EqualShapes(gs, shape) {
		return g
	}
	if b, ok := tensor.BroadcastShapes(shape, gs); !ok || !tensor.EqualShapes(b, gs) {
		fail(op, "gradient of shape %v does not reduce to shape %v", gs, shape)
	}
	return scatterAdd(g, shape, offsets(gs, tensor.BroadcastStrides(shape, gs)))
}

// scatterAdd returns a tensor of shape whose element j is the sum of the elements
// i of g with idx[i] == j, accumulated in float64 in row-major order.
func scatterAdd(g *tensor.Tensor, shape []int, idx []int) *tensor.Tensor {
	acc := make([]float64, tensor.SizeOf(shape))
	if g.DType() == tensor.Float32 {
		for i, v := range g.Data32() {
			acc[idx[i]] += float64(v)
		}
	} else {
		for i, v := range g.Data64() {
			acc[idx[i]] += v
		}
	}
	return tensor.Wrap64(acc, shape...).As(g.DType())
}

// reduction describes a reduction of an input shape over some axes.
type reduction struct {
	in      []int  // input shape
	out     []int  // output shape, reduced axes dropped
	reduced []bool // per input axis
	count   int    // input elements per output element
	idx     []int  // output offset of each input element
}

// reduceAxes resolves axes (negative counts from the end; none means all) for an
// input of shape. As in PyTorch, a 0-D input accepts axis 0 or -1.
func reduceAxes(op string, shape []int, axes []int) *reduction {
	r := &reduction{in: shape, reduced: make([]bool, len(shape)), count: 1}
	if len(axes) == 0 {
		for i := range r.reduced {
			r.reduced[i] = true
		}
	}
	for _, a := range axes {
		if len(shape) == 0 {
			if a != 0 && a != -1 {
				fail(op, "axis %d out of range for shape %v", a, shape)
			}
			continue
		}
		ax, ok := tensor.NormalizeAxis(a, len(shape))
		if !ok {
			fail(op, "axis %d out of range for shape %v", a, shape)
		}
		if r.reduced[ax] {
			fail(op, "axis %d appears more than once in %v for shape %v", a, axes, shape)
		}
		r.reduced[ax] = true
	}
	strides := make([]int, len(shape))
	r.out = []int{}
	for i, d := range shape {
		if r.reduced[i] {
			r.count *= d
		} else {
			r.out = append(r.out, d)
		}
	}
	outStrides := tensor.Strides(r.out)
	j := 0
	for i := range shape {
		if !r.reduced[i] {
			strides[i] = outStrides[j]
			j++
		}
	}
	r.idx = offsets(shape, strides)
	return r
}

// values returns x's elements as float64 without copying a float64 tensor.
func values(x *tensor.Tensor) []float64 {
	if x.DType() == tensor.Float64 {
		return x.Data64()
	}
	return x.Float64s()
}

// fromValues returns a tensor of dtype dt and shape holding v, converting once.
func fromValues(dt tensor.DType, v []float64, shape ...int) *tensor.Tensor {
	if dt == tensor.Float64 {
		return tensor.Wrap64(v, shape...)
	}
	return tensor.FromFloat64s(dt, v, shape...)
}
