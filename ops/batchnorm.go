package ops

import (
	"math"

	"github.com/pipetrain/pipetrain/tensor"
)

// channels checks that x is [N C ...] and that every per-channel tensor is
// [C], and returns N, C and the number of elements per sample and channel.
// Messages are formatted only on failure: steady calls allocate nothing.
func channels(op string, x *tensor.Tensor, perChannel ...*tensor.Tensor) (n, c, inner int) {
	all := func() string { return shapesOf(append([]*tensor.Tensor{x}, perChannel...)...) }
	for _, t := range perChannel {
		if t.DType() != x.DType() {
			dtypeOf(op, append([]*tensor.Tensor{x}, perChannel...)...)
		}
	}
	if x.Dims() < 2 {
		fail(op, "input shape %v is not [N C ...] (shapes %s)", x.Shape(), all())
	}
	n, c, inner = x.Dim(0), x.Dim(1), 1
	for i := 2; i < x.Dims(); i++ {
		inner *= x.Dim(i)
	}
	for _, t := range perChannel {
		if !t.HasShape(c) {
			fail(op, "per-channel shapes do not match the %d channels of input shape %v (shapes %s)", c, x.Shape(), all())
		}
	}
	return n, c, inner
}

// BatchNorm normalises x, [N C] or [N C H W] (any [N C ...]), in training
// mode: per channel, over every other axis, mean and biased variance;
// invstd = 1/sqrt(var+eps); out = (x−mean)·invstd·gamma + beta. gamma and beta
// are [C]; mean and invstd are returned as [C] for BatchNormBackward.
//
// The statistics are accumulated in float64 in a fixed order and rounded to
// x's dtype, and out is computed from the rounded values, so that forward and
// backward see the same x̂. As in PyTorch, invstd is 0 when var and eps are
// both 0, and a channel of no elements (N·H·W = 0) has NaN statistics and an
// empty output.
func BatchNorm(x, gamma, beta *tensor.Tensor, eps float64) (out, mean, invstd *tensor.Tensor) {
	_, c, _ := channels("BatchNorm", x, gamma, beta)
	dt := x.DType()
	out, mean, invstd = tensor.Zeros(dt, x.Shape()...), tensor.Zeros(dt, c), tensor.Zeros(dt, c)
	batchNormInto(out, mean, invstd, x, gamma, beta, eps)
	return out, mean, invstd
}

// BatchNormInto is BatchNorm into out, of x's dtype and shape, and mean and
// invstd, [C]; it returns out.
func BatchNormInto(out, mean, invstd, x, gamma, beta *tensor.Tensor, eps float64) *tensor.Tensor {
	const op = "BatchNormInto"
	channels(op, x, gamma, beta, mean, invstd)
	into(op, out, x)
	batchNormInto(out, mean, invstd, x, gamma, beta, eps)
	return out
}

func batchNormInto(out, mean, invstd, x, gamma, beta *tensor.Tensor, eps float64) {
	n, c, inner := x.Dim(0), x.Dim(1), x.Size()/max(1, x.Dim(0)*x.Dim(1))
	if x.DType() == tensor.Float32 {
		batchNorm(out.Data32(), mean.Data32(), invstd.Data32(), x.Data32(), gamma.Data32(), beta.Data32(), n, c, inner, eps)
	} else {
		batchNorm(out.Data64(), mean.Data64(), invstd.Data64(), x.Data64(), gamma.Data64(), beta.Data64(), n, c, inner, eps)
	}
}

func batchNorm[T float](out, mean, invstd, xs, gamma, beta []T, n, c, inner int, eps float64) {
	m := float64(n * inner)
	for ch := range c {
		var s float64
		for i := range n {
			for _, v := range xs[(i*c+ch)*inner : (i*c+ch+1)*inner] {
				s += float64(v)
			}
		}
		mu := s / m
		var ss float64
		for i := range n {
			for _, v := range xs[(i*c+ch)*inner : (i*c+ch+1)*inner] {
				ss += (float64(v) - mu) * (float64(v) - mu)
			}
		}
		v := ss / m
		is := 0.0
		if v != 0 || eps != 0 {
			is = 1 / math.Sqrt(v+eps)
		}
		mean[ch], invstd[ch] = T(mu), T(is)
	}
	for i := range n {
		for ch := range c {
			mu, inv := float64(mean[ch]), float64(invstd[ch])
			g, b := float64(gamma[ch]), float64(beta[ch])
			base := (i*c + ch) * inner
			for j, v := range xs[base : base+inner] {
				out[base+j] = T((float64(v)-mu)*inv*g + b)
			}
		}
	}
}

// BatchNormBackward returns the gradients of BatchNorm in training mode with
// respect to x, gamma and beta, given the mean and invstd it returned; with
// x̂ = (x−mean)·invstd and M elements per channel:
// gbeta = Σ grad, ggamma = Σ grad·x̂, gx = gamma·invstd/M·(M·grad − gbeta − x̂·ggamma).
func BatchNormBackward(grad, x, gamma, mean, invstd *tensor.Tensor) (gx, ggamma, gbeta *tensor.Tensor) {
	const op = "BatchNormBackward"
	c := checkBatchNormBackward(op, grad, x, gamma, mean, invstd)
	dt := x.DType()
	gx, ggamma, gbeta = tensor.Zeros(dt, x.Shape()...), tensor.Zeros(dt, c), tensor.Zeros(dt, c)
	batchNormBackwardInto(gx, ggamma, gbeta, grad, x, gamma, mean, invstd)
	return gx, ggamma, gbeta
}

// BatchNormBackwardInto is BatchNormBackward into given tensors: it writes
// the input gradient into gx (nil: not computed) and adds the gamma and beta
// gradients into ggamma and gbeta, as a layer accumulates its gradients.
func BatchNormBackwardInto(gx, ggamma, gbeta, grad, x, gamma, mean, invstd *tensor.Tensor) {
	const op = "BatchNormBackwardInto"
	checkBatchNormBackward(op, grad, x, gamma, mean, invstd)
	if gx != nil {
		into(op, gx, x)
	}
	channels(op, x, ggamma, gbeta)
	batchNormBackwardInto(gx, ggamma, gbeta, grad, x, gamma, mean, invstd)
}

// checkBatchNormBackward panics unless a backward's arguments fit, and
// returns the channel count.
func checkBatchNormBackward(op string, grad, x, gamma, mean, invstd *tensor.Tensor) int {
	dtypeOf(op, grad, x, gamma, mean, invstd)
	if !grad.SameShape(x) {
		fail(op, "grad shape %v does not match input shape %v (gamma, mean, invstd %s)", grad.Shape(), x.Shape(), shapesOf(gamma, mean, invstd))
	}
	_, c, _ := channels(op, x, gamma, mean, invstd)
	return c
}

// batchNormBackwardInto writes gx unless it is nil and adds the gamma and
// beta gradients into ggamma and gbeta. The sums start from zero in
// float64, so that adding them into zeros writes them.
func batchNormBackwardInto(gx, ggamma, gbeta, grad, x, gamma, mean, invstd *tensor.Tensor) {
	n, c, inner := x.Dim(0), x.Dim(1), x.Size()/max(1, x.Dim(0)*x.Dim(1))
	if x.DType() == tensor.Float32 {
		batchNormBackward(data32(gx), ggamma.Data32(), gbeta.Data32(), grad.Data32(), x.Data32(), gamma.Data32(), mean.Data32(), invstd.Data32(), n, c, inner)
	} else {
		batchNormBackward(data64(gx), ggamma.Data64(), gbeta.Data64(), grad.Data64(), x.Data64(), gamma.Data64(), mean.Data64(), invstd.Data64(), n, c, inner)
	}
}

func batchNormBackward[T float](gx, ggamma, gbeta, g, xs, gamma, mean, invstd []T, n, c, inner int) {
	m := float64(n * inner)
	for ch := range c {
		mu, inv := float64(mean[ch]), float64(invstd[ch])
		var sg, sgx float64
		for i := range n {
			base := (i*c + ch) * inner
			for j, v := range xs[base : base+inner] {
				sg += float64(g[base+j])
				sgx += float64(g[base+j]) * (float64(v) - mu) * inv
			}
		}
		gbeta[ch] += T(sg)
		ggamma[ch] += T(sgx)
		if gx == nil {
			continue
		}
		k := float64(gamma[ch]) * inv / m
		for i := range n {
			base := (i*c + ch) * inner
			for j, v := range xs[base : base+inner] {
				xh := (float64(v) - mu) * inv
				gx[base+j] = T(k * (m*float64(g[base+j]) - sg - xh*sgx))
			}
		}
	}
}
