package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/internal/par"
	"github.com/pipetrain/pipetrain/internal/vec"
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
// softmax is computed once and nothing is allocated for up to 128 classes.
func CrossEntropyInto(dst, logits *tensor.Tensor, labels []int, scale float64) float64 {
	into("CrossEntropyInto", dst, logits)
	n, _ := checkLabels("CrossEntropyInto", logits, labels)
	if logits.DType() == tensor.Float32 {
		scale = float64(float32(scale)) // as a float32 loss gradient holds it
	}
	loss := crossEntropySum(dst, logits, labels, scale/float64(n), 0, 1) / float64(n)
	if logits.DType() == tensor.Float32 {
		loss = float64(float32(loss))
	}
	return loss
}

// CrossEntropySumInto is the cross-entropy of a part of a mini-batch, for
// trainers that cut one into micro-batches: it returns sum plus each row's
// -log_softmax(logits)[label], added one row at a time in row order in
// float64, and writes (softmax(logits) - onehot(labels))*scale into dst,
// computed in float64 and rounded once to dst's dtype. With scale = 1/N for a
// mini-batch of N rows, and sum carried from one part to the next, the
// gradients are CrossEntropyBackward's of the whole mini-batch and sum/N is its
// loss, whatever the cut. The rows run on up to par.Budget(threads)
// goroutines (0: GOMAXPROCS), each row's loss kept apart and added in row
// order after, so the result does not depend on threads. Nothing is
// allocated for up to 128 classes.
func CrossEntropySumInto(dst, logits *tensor.Tensor, labels []int, scale, sum float64, threads int) float64 {
	into("CrossEntropySumInto", dst, logits)
	checkLabels("CrossEntropySumInto", logits, labels)
	return crossEntropySum(dst, logits, labels, scale, sum, threads)
}

// ceBlock is the rows whose losses one pass keeps before adding them.
const ceBlock = 256

// ceGrain is the fewest logits worth a goroutine of their own (a few
// microseconds of exponentials).
const ceGrain = 512

// ceTask computes the softmax gradients and losses of a block of rows, for
// par.For.
type ceTask struct {
	dst, logits *tensor.Tensor
	labels      []int // the block's
	first       int   // the block's first row
	scale       float64
	losses      [ceBlock]float64 // row first+i's at i
}

var ceTasks par.FreeList[ceTask]

func crossEntropySum(dst, logits *tensor.Tensor, labels []int, scale, total float64, threads int) float64 {
	t := ceTasks.Get()
	t.dst, t.logits, t.scale = dst, logits, scale
	grain := max(1, ceGrain/max(1, logits.Dim(1)))
	for lo := 0; lo < len(labels); lo += ceBlock {
		hi := min(len(labels), lo+ceBlock)
		t.labels, t.first = labels[lo:hi], lo
		par.For(threads, hi-lo, grain, t)
		for _, l := range t.losses[:hi-lo] {
			total -= l
		}
	}
	t.dst, t.logits, t.labels = nil, nil, nil
	ceTasks.Put(t)
	return total
}

// Run computes rows [lo, hi) of the block: their gradients into dst, and
// each row's log_softmax(logits)[label] into losses.
func (t *ceTask) Run(lo, hi int) {
	c := t.logits.Dim(1)
	if t.logits.DType() == tensor.Float32 {
		t.run32(lo, hi, c)
		return
	}
	var buf, exps [128]float64
	row, ex := buf[:0], exps[:0]
	if c > len(buf) {
		row, ex = make([]float64, c), make([]float64, c)
	}
	row, ex = row[:c], ex[:c]
	for b := lo; b < hi; b++ {
		i, y := t.first+b, t.labels[b]
		copy(row, t.logits.Data64()[i*c:(i+1)*c])
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		if math.IsInf(m, -1) {
			m = 0 // as softmax does
		}
		sum := 0.0
		for j, v := range row {
			ex[j] = math.Exp(v - m)
			sum += ex[j]
		}
		t.losses[b] = row[y] - m - math.Log(sum)
		d := t.dst.Data64()[i*c : (i+1)*c]
		for j := range row {
			p := ex[j] / sum
			if j == y {
				p--
			}
			d[j] = p * t.scale
		}
	}
}

// run32 is Run for float32 logits, in float64 as Run: the same bits, with
// the row's exponentials 8 at a time (vec.ExpShifted64 is math.Exp's).
func (t *ceTask) run32(lo, hi, c int) {
	var exps [128]float64
	ex := exps[:0]
	if c > len(exps) {
		ex = make([]float64, c)
	}
	ex = ex[:c]
	for b := lo; b < hi; b++ {
		i, y := t.first+b, t.labels[b]
		row := t.logits.Data32()[i*c : (i+1)*c]
		m := max32(row)
		if math.IsInf(m, -1) {
			m = 0 // as softmax does
		}
		vec.ExpShifted64(ex, row, m)
		sum := 0.0
		for _, e := range ex {
			sum += e
		}
		t.losses[b] = float64(row[y]) - m - math.Log(sum)
		d := t.dst.Data32()[i*c : (i+1)*c]
		for j, e := range ex {
			p := e / sum
			if j == y {
				p--
			}
			d[j] = float32(p * t.scale)
		}
	}
}

// max32 is the fold of math.Max over the row from -Inf, in float64: +Inf
// if the row has one, else NaN if it has one, else the largest, +0 rather
// than -0.
func max32(row []float32) float64 {
	m := float32(math.Inf(-1))
	nan := false
	for _, v := range row {
		switch {
		case v > m:
			m = v
		case v != v:
			nan = true
		case v == 0 && m == 0 && !math.Signbit(float64(v)):
			m = v
		}
	}
	if nan && !math.IsInf(float64(m), 1) {
		return math.NaN()
	}
	return float64(m)
}

// MSESumInto is MSE for a part of a mini-batch, as CrossEntropySumInto: it
// returns sum plus every (pred - target)², added in row-major order in float64,
// and writes 2*(pred - target)*scale into dst, rounded once. pred, target and
// dst have one shape. With scale = 1/(elements of the mini-batch) the
// gradients are MSEBackward's of the whole and sum/elements its loss.
func MSESumInto(dst, pred, target *tensor.Tensor, scale, sum float64) float64 {
	into("MSESumInto", dst, pred, target)
	return sumInto(dst, pred, target, sum, func(p, t float64) (float64, float64) {
		d := p - t
		return d * d, d * (2 * scale)
	})
}

// BCEWithLogitsSumInto is BCEWithLogits for a part of a mini-batch, as
// MSESumInto: it returns sum plus every element's loss in the stable form, and
// writes (sigmoid(logits) - target)*scale into dst, rounded once.
func BCEWithLogitsSumInto(dst, logits, target *tensor.Tensor, scale, sum float64) float64 {
	into("BCEWithLogitsSumInto", dst, logits, target)
	return sumInto(dst, logits, target, sum, func(x, t float64) (float64, float64) {
		return (1-t)*x + math.Log1p(math.Exp(-math.Abs(x))) + math.Max(-x, 0), (sigmoid(x) - t) * scale
	})
}

// sumInto adds f's loss of each element pair of x and t to sum, in order, and
// writes f's gradient into dst.
func sumInto(dst, x, t *tensor.Tensor, sum float64, f func(x, t float64) (loss, grad float64)) float64 {
	if dst.DType() == tensor.Float32 {
		d, xs, ts := dst.Data32(), x.Data32(), t.Data32()
		for i, v := range xs {
			l, g := f(float64(v), float64(ts[i]))
			sum += l
			d[i] = float32(g)
		}
		return sum
	}
	d, xs, ts := dst.Data64(), x.Data64(), t.Data64()
	for i, v := range xs {
		l, g := f(v, ts[i])
		sum += l
		d[i] = g
	}
	return sum
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
	return meanLoss("BCE", prob, target, func(p, t float64) float64 {
		return -(t*math.Max(math.Log(p), -100) + (1-t)*math.Max(math.Log(1-p), -100))
	})
}

// BCEBackward returns the true derivative grad*(p - y)/max(p(1-p), 1e-12)/N, as
// PyTorch computes it (not p - y, which is the gradient with respect to logits).
func BCEBackward(grad, prob, target *tensor.Tensor) *tensor.Tensor {
	return meanLossBackward("BCEBackward", grad, prob, target, func(p, t float64) float64 {
		return (p - t) / math.Max((1-p)*p, 1e-12)
	})
}

// BCEWithLogits returns the mean binary cross-entropy of sigmoid(logits) against
// target in the stable form (1-y)x + log(1+e^-|x|) + max(-x, 0). Shapes must match.
func BCEWithLogits(logits, target *tensor.Tensor) *tensor.Tensor {
	return meanLoss("BCEWithLogits", logits, target, func(x, t float64) float64 {
		return (1-t)*x + math.Log1p(math.Exp(-math.Abs(x))) + math.Max(-x, 0)
	})
}

// BCEWithLogitsBackward returns grad*(sigmoid(logits) - target)/N.
func BCEWithLogitsBackward(grad, logits, target *tensor.Tensor) *tensor.Tensor {
	return meanLossBackward("BCEWithLogitsBackward", grad, logits, target, func(x, t float64) float64 {
		return sigmoid(x) - t
	})
}

// meanLoss returns the mean of loss(x, t) over x and target of one shape,
// summed in order.
func meanLoss(op string, x, target *tensor.Tensor, loss func(x, t float64) float64) *tensor.Tensor {
	sameShape(op, x, target)
	v, t := values(x), values(target)
	s := 0.0
	for i := range v {
		s += loss(v[i], t[i])
	}
	return fromValues(x.DType(), []float64{s / float64(len(v))})
}

// meanLossBackward returns grad*d(x, t)/N elementwise, the gradient of a
// meanLoss whose loss has the derivative d in x.
func meanLossBackward(op string, grad, x, target *tensor.Tensor, d func(x, t float64) float64) *tensor.Tensor {
	sameShape(op, x, target)
	dtypeOf(op, grad, x)
	checkScalarGrad(op, grad, x)
	v, t := values(x), values(target)
	scale := values(grad)[0] / float64(len(v))
	out := make([]float64, len(v))
	for i := range v {
		out[i] = d(v[i], t[i]) * scale
	}
	return fromValues(x.DType(), out, x.Shape()...)
}
