package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Conv2d is torch.nn.Conv2d with one stride and one padding for both axes:
// the cross-correlation of x [N, C, H, W] with F filters W [F, C, KH, KW],
// plus the bias B [F], gives [N, F, OH, OW] with OH = ⌊(H+2·Padding−KH)/Stride⌋+1,
// and likewise OW. W and B have PyTorch's layouts, so checkpoints read the
// same in other tools.
type Conv2d struct {
	C, F, KH, KW    int
	Stride, Padding int
	W, B            *tensor.Tensor
	GW, GB          *tensor.Tensor
	x               cache[*tensor.Tensor]
	work            ops.ConvWork // the kernels' scratch, kept from step to step
}

// NewConv2d returns a layer with c input channels and f filters of kh×kw,
// weights drawn by init from rng with fan_in = c·kh·kw and fan_out = f·kh·kw,
// as torch.nn.init computes them for a convolution, and biases drawn after
// them for TorchDefault (U(±1/sqrt(fan_in)), as torch.nn.Conv2d), zero for the
// other inits.
func NewConv2d(dt tensor.DType, c, f, kh, kw, stride, padding int, init Init, rng *rand.Rand) (*Conv2d, error) {
	if c <= 0 || f <= 0 || kh <= 0 || kw <= 0 {
		return nil, fmt.Errorf("nn.NewConv2d: needs positive sizes, got c=%d f=%d kernel %d×%d", c, f, kh, kw)
	}
	if stride < 1 || padding < 0 {
		return nil, fmt.Errorf("nn.NewConv2d: stride %d must be at least 1 and padding %d not negative", stride, padding)
	}
	l := &Conv2d{
		C: c, F: f, KH: kh, KW: kw, Stride: stride, Padding: padding,
		W: tensor.Zeros(dt, f, c, kh, kw), B: tensor.Zeros(dt, f),
		GW: tensor.Zeros(dt, f, c, kh, kw), GB: tensor.Zeros(dt, f),
		x: cache[*tensor.Tensor]{},
	}
	if err := init.fill(l.W, c*kh*kw, f*kh*kw, rng); err != nil {
		return nil, err
	}
	init.FillBias(l.B, c*kh*kw, rng) // after W, from the same stream, as PyTorch draws them
	return l, nil
}

func (l *Conv2d) Kind() string { return "conv2d" }

func (l *Conv2d) Params() []Param {
	return []Param{{Name: "weight", Value: l.W, Grad: l.GW}, {Name: "bias", Value: l.B, Grad: l.GB}}
}

func (l *Conv2d) ZeroGrad()     { zeroGrads(l.Params()) }
func (l *Conv2d) InFlight() int { return len(l.x) }
func (l *Conv2d) Reset()        { clear(l.x) }

// OutShape returns the [F, OH, OW] output of a [C, H, W] sample, or an error
// when the sample does not fit: another channel count, or a kernel larger than
// the padded input.
func (l *Conv2d) OutShape(in []int) ([]int, error) {
	out, why := l.geometry(in)
	if why != "" {
		return nil, fmt.Errorf("nn.Conv2d: sample shape %v does not fit weight %v (stride %d, padding %d): %s",
			in, l.W.Shape(), l.Stride, l.Padding, why)
	}
	return out, nil
}

// geometry returns the output of a [C, H, W] sample, or why there is none.
func (l *Conv2d) geometry(in []int) ([]int, string) {
	if len(in) != 3 {
		return nil, "not [C H W]"
	}
	oh, ow, why := l.plane(in[0], in[1], in[2])
	if why != "" {
		return nil, why
	}
	return []int{l.F, oh, ow}, ""
}

// plane returns the output plane of a sample of c channels of h×w, or why
// there is none.
func (l *Conv2d) plane(c, h, w int) (oh, ow int, why string) {
	if c != l.C {
		return 0, 0, fmt.Sprintf("%d channels, want %d", c, l.C)
	}
	ph, pw := h+2*l.Padding, w+2*l.Padding
	if h < 0 || w < 0 || ph < l.KH || pw < l.KW {
		return 0, 0, fmt.Sprintf("kernel %d×%d is larger than the padded input %d×%d", l.KH, l.KW, ph, pw)
	}
	return (ph-l.KH)/l.Stride + 1, (pw-l.KW)/l.Stride + 1, ""
}

// check panics unless x is [N, C, H, W] of the layer's dtype with a plane the
// kernel fits, and returns the output plane.
func (l *Conv2d) check(x *tensor.Tensor) (oh, ow int) {
	why := ""
	if x.Dims() != 4 {
		why = "not [N C H W]"
	} else if x.DType() != l.W.DType() {
		why = "another dtype"
	} else {
		oh, ow, why = l.plane(x.Dim(1), x.Dim(2), x.Dim(3))
	}
	if why != "" {
		panic(fmt.Errorf("nn.Conv2d: input %v %v does not fit weight %v %v (stride %d, padding %d): %s",
			x.DType(), x.Shape(), l.W.DType(), l.W.Shape(), l.Stride, l.Padding, why))
	}
	return oh, ow
}

func (l *Conv2d) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	oh, ow := l.check(x)
	y := p.Arena.Tensor(x.DType(), x.Dim(0), l.F, oh, ow) // every element written below
	l.work.BF16, l.work.Arithmetic = p.Precision.IsBF16(), p.Precision.Arithmetic()
	ops.Conv2dInto(y, x, l.W, l.B, l.Stride, l.Padding, &l.work)
	l.x.put(p, x)
	return y
}

// Backward adds the weight and bias gradients of each chunk of ChunkRows
// samples, summed from zero, into GW and GB chunk after chunk, so that they
// do not depend on how the mini-batch was cut into micro-batches (cut at
// chunk bounds); each sample's dX is its own.
func (l *Conv2d) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	x := l.x.take("Conv2d", p)
	n := x.Dim(0)
	if oh, ow := l.check(x); !dy.HasShape(n, l.F, oh, ow) || dy.DType() != x.DType() {
		panic(fmt.Errorf("nn.Conv2d: dy %v %v does not fit output %v of input %v", dy.DType(), dy.Shape(), []int{n, l.F, oh, ow}, x.Shape()))
	}
	var dx *tensor.Tensor
	if needDX {
		dx = p.Arena.Like(x) // every row written below
	}
	l.work.BF16, l.work.Arithmetic = p.Precision.IsBF16(), p.Precision.Arithmetic()
	for lo := 0; lo < max(n, 1); lo += ChunkRows {
		hi := min(n, lo+ChunkRows)
		var gx *tensor.Tensor
		if needDX {
			gx = p.Arena.viewRows(dx, lo, hi)
		}
		ops.Conv2dBackwardInto(gx, l.GW, l.GB, p.Arena.viewRows(dy, lo, hi), p.Arena.viewRows(x, lo, hi), l.W, l.Stride, l.Padding, &l.work)
	}
	return dx
}
