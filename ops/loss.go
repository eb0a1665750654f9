package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// Losses reduce by the mean over all elements, as PyTorch's reduction="mean", and
// return a 0-D tensor; the mean over no elements is NaN. Sums run in float64.

// CrossEntropy returns the mean over rows of -log_softmax(logits)[label], for
// logits [N, C] and one label in [0, C) per row; the log-softmax is fused.
func CrossEntropy(logits *tensor.Tensor, labels []int) *tensor.Tensor {
	n, c := checkLabels("CrossEntropy", logits, labels)
	ls := values(LogSoftmax(logits.As(tensor.Float64), 1))
	s := 0.0
	for i, y := range labels {
		s -= ls[i*c+y]
	}
	return fromValues(logits.DType(), []float64{s / float64(n)})
}

// CrossEntropyBackward returns grad*(softmax(logits) - onehot(labels))/N.
func CrossEntropyBackward(grad, logits *tensor.Tensor, labels []int) *tensor.Tensor {
	dtypeOf("CrossEntropyBackward", grad, logits)
	checkScalarGrad("CrossEntropyBackward", grad, logits)
	n, c := checkLabels("CrossEntropyBackward", logits, labels)
	p := values(Softmax(logits.As(tensor.Float64), 1))
	scale := values(grad)[0] / float64(n)
	out := make([]float64, len(p))
	for i, y := range labels {
		for j := range c {
			v := p[i*c+j]
			if j == y {
				v--
			}
			out[i*c+j] = v * scale
		}
	}
	return fromValues(logits.DType(), out, n, c)
}

func checkLabels(op string, logits *tensor.Tensor, labels []int) (n, c int) {
	if logits.Dims() != 2 {
		fail(op, "logits shape %v is not [N, C]", logits.Shape())
	}
	n, c = logits.Dim(0), logits.Dim(1)
	if len(labels) != n {
		fail(op, "%d labels for logits shape %v", len(labels), logits.Shape())
	}
	for i, y := range labels {
		if y < 0 || y >= c {
			fail(op, "label %d at row %d is outside [0, %d) for logits shape %v", y, i, c, logits.Shape())
		}
	}
	return n, c
}

// CrossEntropyInto computes CrossEntropy and its backward in one pass, for a
// training step: it writes CrossEntropyBackward(g, logits, labels) into dst,
// where g is a 0-D tensor of logits' dtype holding scale, and returns
// CrossEntropy(logits, labels).Item(). The bits are those of the two ops; the
// softmax is computed once and nothing is allocated for up to 64 classes.
func CrossEntropyInto(dst, logits *tensor.Tensor, labels []int, scale float64) float64 {
	into("CrossEntropyInto", dst, logits)
	n, c := checkLabels("CrossEntropyInto", logits, labels)
	dt := logits.DType()
	if dt == tensor.Float32 {
		scale = float64(float32(scale)) // as a float32 loss gradient holds it
	}
	scale /= float64(n)
	var buf [64]float64
	row := buf[:0]
	if c > len(buf) {
		row = make([]float64, c)
	}
	row = row[:c]
	total := 0.0
	for i, y := range labels {
		if dt == tensor.Float32 {
			for j, v := range logits.Data32()[i*c : (i+1)*c] {
				row[j] = float64(v)
			}
		} else {
			copy(row, logits.Data64()[i*c:(i+1)*c])
		}
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		if math.IsInf(m, -1) {
			m = 0 // as softmax does
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - m)
		}
		total -= row[y] - m - math.Log(sum)
		for j, v := range row {
			p := math.Exp(v-m) / sum
			if j == y {
				p--
			}
			row[j] = p * scale
		}
		if dt == tensor.Float32 {
			d := dst.Data32()[i*c : (i+1)*c]
			for j, v := range row {
				d[j] = float32(v)
			}
		} else {
			copy(dst.Data64()[i*c:(i+1)*c], row)
		}
	}
	loss := total / float64(n)
	if dt == tensor.Float32 {
		loss = float64(float32(loss))
	}
	return loss
}

func checkScalarGrad(op string, grad, input *tensor.Tensor) {
	if grad.Size() != 1 || grad.Dims() != 0 {
		fail(op, "grad shape %v is not a 0-D loss gradient (input shape %v)", grad.Shape(), input.Shape())
	}
}

// MSE returns mean((pred - target)²), pred and target broadcast as in PyTorch.
func MSE(pred, target *tensor.Tensor) *tensor.Tensor {
	dtypeOf("MSE", pred, target)
	d := values(map2("MSE", pred.As(tensor.Float64), target.As(tensor.Float64), func(p, t float64) float64 { return p - t }))
	s := 0.0
	for _, v := range d {
		s += v * v
	}
	return fromValues(pred.DType(), []float64{s / float64(len(d))})
}

// MSEBackward returns grad*2*(pred - target)/N, summed to pred's shape.
func MSEBackward(grad, pred, target *tensor.Tensor) *tensor.Tensor {
	dtypeOf("MSEBackward", grad, pred, target)
	checkScalarGrad("MSEBackward", grad, pred)
	shape := broadcast("MSEBackward", pred, target)
	scale := 2 * values(grad)[0] / float64(tensor.SizeOf(shape))
	g := map2("MSEBackward", pred.As(tensor.Float64), target.As(tensor.Float64), func(p, t float64) float64 { return (p - t) * scale })
	return sumTo("MSEBackward", g, pred.Shape()).As(pred.DType())
}

// BCE returns the mean binary cross-entropy of probabilities prob against target,
// each log clamped below at -100 as PyTorch does. Shapes must match.
func BCE(prob, target *tensor.Tensor) *tensor.Tensor {
	sameShape("BCE", prob, target)
	p, t := values(prob), values(target)
	s := 0.0
	for i := range p {
		s -= t[i]*math.Max(math.Log(p[i]), -100) + (1-t[i])*math.Max(math.Log(1-p[i]), -100)
	}
	return fromValues(prob.DType(), []float64{s / float64(len(p))})
}

// BCEBackward returns the true derivative grad*(p - y)/max(p(1-p), 1e-12)/N, as
// PyTorch computes it (not p - y, which is the gradient with respect to logits).
func BCEBackward(grad, prob, target *tensor.Tensor) *tensor.Tensor {
	sameShape("BCEBackward", prob, target)
	dtypeOf("BCEBackward", grad, prob)
	checkScalarGrad("BCEBackward", grad, prob)
	p, t := values(prob), values(target)
	scale := values(grad)[0] / float64(len(p))
	out := make([]float64, len(p))
	for i := range p {
		out[i] = (p[i] - t[i]) / math.Max((1-p[i])*p[i], 1e-12) * scale
	}
	return fromValues(prob.DType(), out, prob.Shape()...)
}

// BCEWithLogits returns the mean binary cross-entropy of sigmoid(logits) against
// target in the stable form (1-y)x + log(1+e^-|x|) + max(-x, 0). Shapes must match.
func BCEWithLogits(logits, target *tensor.Tensor) *tensor.Tensor {
	sameShape("BCEWithLogits", logits, target)
	x, t := values(logits), values(target)
	s := 0.0
	for i := range x {
		s += (1-t[i])*x[i] + math.Log1p(math.Exp(-math.Abs(x[i]))) + math.Max(-x[i], 0)
	}
	return fromValues(logits.DType(), []float64{s / float64(len(x))})
}

// BCEWithLogitsBackward returns grad*(sigmoid(logits) - target)/N.
func BCEWithLogitsBackward(grad, logits, target *tensor.Tensor) *tensor.Tensor {
	sameShape("BCEWithLogitsBackward", logits, target)
	dtypeOf("BCEWithLogitsBackward", grad, logits)
	checkScalarGrad("BCEWithLogitsBackward", grad, logits)
	x, t := values(logits), values(target)
	scale := values(grad)[0] / float64(len(x))
	out := make([]float64, len(x))
	for i := range x {
		out[i] = (sigmoid(x[i]) - t[i]) * scale
	}
	return fromValues(logits.DType(), out, logits.Shape()...)
}
