// Package tensor provides the dense N-dimensional array that every other package
// of pipetrain computes with.
//
// # Overview
//
// A Tensor is a row-major array of float32 or float64 elements with a shape. The
// shape may be [] (a 0-D scalar, one element) and may contain 0 (an empty tensor);
// every operation accepts both. Float32 is the training default; Float64 serves
// gradient checks and reference math.
//
//	x := tensor.FromFloat64s(tensor.Float32, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
//	y := x.Reshape(3, -1) // shares x's storage: no copy
//
// # Storage and ownership
//
// Data32 and Data64 return the storage itself, for kernels that write in place
// (destination first). Float64s, Float32s and Shape return copies. Reshape returns
// a view that shares storage; SetView points a header the caller keeps at part
// of another tensor's storage, so that a view made every step allocates
// nothing; Clone makes a deep copy. A tensor has one owner at a
// time: code that hands a tensor to another goroutine gives it up.
//
// # Broadcasting
//
// BroadcastShapes implements NumPy's rules, shared by every element-wise op of the
// ops package: shapes are aligned at their last axes, missing leading axes count
// as 1, and two lengths fit when they are equal or one of them is 1.
// BroadcastStrides gives an operand's strides in the broadcast index space, 0
// along stretched axes.
//
// # Randomness
//
// There is no global random source. FillUniform, FillNormal, RandUniform and
// RandNormal take an explicit *rand.Rand (math/rand/v2), so a seeded PCG stream
// gives the same tensor on every machine.
//
// # Panics and errors
//
// Misuse that is a programming error, such as a data slice whose length does not
// fill the shape, panics with an error value whose text names the function and the
// shapes involved (gonum's convention). Functions that validate user input, such
// as ResolveShape, return errors instead.
package tensor
