// Package opstest checks the backward kernels of package ops against
// central finite differences, in float64.
//
// A kernel under test is described by two functions: a forward function f
// that maps a list of input tensors to one output tensor, and a backward
// function that, given the gradient of a scalar loss with respect to the
// output, returns one gradient per input. The checker fixes a seeded random
// weight w shaped like the output and forms the scalar
//
//	L(inputs) = sum(f(inputs) * w)
//
// so that ∂L/∂out = w is the gradient handed to backward. It then estimates
// ∂L/∂input for every element of every float64 input with gonum's
// diff/fd.Gradient using the fd.Central formula (the way gonum's
// optimize/functions/validate.go checks its test functions) and compares the
// two elementwise under the combined absolute/relative tolerance
//
//	|analytic - numeric| <= tol * max(1, |numeric|).
//
// A mismatch is reported with the op name, every input shape, the worst
// element's coordinates and both values. The gradients' shapes must equal the
// inputs' shapes. A backward may return nil for an input that is not
// differentiable (an index, a target), and float32 inputs are held constant.
//
// The checker also verifies that neither f nor backward wrote to the inputs.
//
// Keep inputs away from kinks (ReLU at 0, ties in Max, the ends of Clip): a
// central difference straddling a kink measures the average of the two
// one-sided slopes, which is not what a backward kernel computes.
//
// Typical use, in a test of package ops:
//
//	opstest.CheckGrad(t, "Mul", []*tensor.Tensor{a, b},
//		func(in []*tensor.Tensor) *tensor.Tensor { return ops.Mul(in[0], in[1]) },
//		func(g *tensor.Tensor, in []*tensor.Tensor, _ *tensor.Tensor) []*tensor.Tensor {
//			ga, gb := ops.MulBackward(g, in[0], in[1])
//			return []*tensor.Tensor{ga, gb}
//		}, 1e-6)
//
// Package opstest imports only tensor and gonum, never ops, so that it can be
// trusted independently of the kernels it checks.
package opstest
