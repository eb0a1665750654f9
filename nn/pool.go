package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// MaxPool2d is torch.nn.MaxPool2d(Kernel, Stride) without padding: the
// maximum over each Kernel×Kernel window of x [N, C, H, W], the windows
// stepping by Stride, gives [N, C, OH, OW] with OH = ⌊(H−Kernel)/Stride⌋+1.
// The gradient goes to each window's first maximum in row-major order, as
// PyTorch's on the CPU.
type MaxPool2d struct {
	Kernel, Stride int
	x              cache[maxPooled]
	arg            map[int][]uint8 // per micro-batch, reused from step to step
}

// maxPooled is what MaxPool2d's backward needs: its input and where in each
// window the maximum was, so that it does not search the windows again (nil
// for kernels too large for ops.MaxPool2dArg).
type maxPooled struct {
	x   *tensor.Tensor
	arg []uint8
}

// AvgPool2d is torch.nn.AvgPool2d(Kernel, Stride) without padding: the mean
// over each window, shaped as MaxPool2d's.
type AvgPool2d struct {
	Kernel, Stride int
	x              cache[*tensor.Tensor] // for its shape: the backward needs no values
}

// NewMaxPool2d returns a max pooling over kernel×kernel windows; stride 0
// means kernel, as PyTorch's default.
func NewMaxPool2d(kernel, stride int) (*MaxPool2d, error) {
	stride, err := poolArgs("NewMaxPool2d", kernel, stride)
	if err != nil {
		return nil, err
	}
	return &MaxPool2d{Kernel: kernel, Stride: stride, x: cache[maxPooled]{}, arg: map[int][]uint8{}}, nil
}

// NewAvgPool2d returns an average pooling over kernel×kernel windows; stride
// 0 means kernel, as PyTorch's default.
func NewAvgPool2d(kernel, stride int) (*AvgPool2d, error) {
	stride, err := poolArgs("NewAvgPool2d", kernel, stride)
	if err != nil {
		return nil, err
	}
	return &AvgPool2d{Kernel: kernel, Stride: stride, x: cache[*tensor.Tensor]{}}, nil
}

func poolArgs(fn string, kernel, stride int) (int, error) {
	if kernel < 1 || stride < 0 {
		return 0, fmt.Errorf("nn.%s: kernel %d must be at least 1 and stride %d not negative", fn, kernel, stride)
	}
	if stride == 0 {
		stride = kernel
	}
	return stride, nil
}

// poolOut returns the [C, OH, OW] output of a [C, H, W] sample, or why there
// is none.
func poolOut(in []int, kernel, stride int) ([]int, string) {
	if len(in) != 3 {
		return nil, "not [C H W]"
	}
	oh, ow, why := poolPlane(in[1], in[2], kernel, stride)
	if why != "" {
		return nil, why
	}
	return []int{in[0], oh, ow}, ""
}

// poolPlane returns the output plane of an h×w plane, or why there is none.
func poolPlane(h, w, kernel, stride int) (oh, ow int, why string) {
	if h < kernel || w < kernel {
		return 0, 0, fmt.Sprintf("kernel %d×%d is larger than the input %d×%d", kernel, kernel, h, w)
	}
	return (h-kernel)/stride + 1, (w-kernel)/stride + 1, ""
}

func poolOutShape(kind string, in []int, kernel, stride int) ([]int, error) {
	out, why := poolOut(in, kernel, stride)
	if why != "" {
		return nil, fmt.Errorf("nn.%s: sample shape %v does not fit kernel %d, stride %d: %s", kind, in, kernel, stride, why)
	}
	return out, nil
}

// checkPool panics unless x is [N, C, H, W] with planes the kernel fits, and
// returns the output plane.
func checkPool(kind string, x *tensor.Tensor, kernel, stride int) (oh, ow int) {
	why := "not [N C H W]"
	if x.Dims() == 4 {
		oh, ow, why = poolPlane(x.Dim(2), x.Dim(3), kernel, stride)
	}
	if why != "" {
		panic(fmt.Errorf("nn.%s: input %v does not fit kernel %d, stride %d: %s", kind, x.Shape(), kernel, stride, why))
	}
	return oh, ow
}

// checkPoolGrad panics unless dy has the output shape and dtype of the
// input x.
func checkPoolGrad(kind string, dy, x *tensor.Tensor, kernel, stride int) {
	oh, ow, _ := poolPlane(x.Dim(2), x.Dim(3), kernel, stride)
	if !dy.HasShape(x.Dim(0), x.Dim(1), oh, ow) || dy.DType() != x.DType() {
		panic(fmt.Errorf("nn.%s: dy %v %v does not fit output %v %v of input %v",
			kind, dy.DType(), dy.Shape(), x.DType(), []int{x.Dim(0), x.Dim(1), oh, ow}, x.Shape()))
	}
}

func (l *MaxPool2d) Kind() string    { return "maxpool2d" }
func (l *MaxPool2d) Params() []Param { return nil }
func (l *MaxPool2d) ZeroGrad()       {}
func (l *MaxPool2d) InFlight() int   { return len(l.x) }
func (l *MaxPool2d) Reset()          { clear(l.x) }

// OutShape returns the [C, OH, OW] output of a [C, H, W] sample, or an error
// when the kernel is larger than the plane.
func (l *MaxPool2d) OutShape(in []int) ([]int, error) {
	return poolOutShape("MaxPool2d", in, l.Kernel, l.Stride)
}

func (l *MaxPool2d) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	oh, ow := checkPool("MaxPool2d", x, l.Kernel, l.Stride)
	y := p.Arena.Tensor(x.DType(), x.Dim(0), x.Dim(1), oh, ow) // every element written below
	if !p.Train || l.Kernel > ops.MaxArgKernel {
		ops.MaxPool2dInto(y, x, l.Kernel, l.Stride)
		if p.Train {
			l.x.put(p, maxPooled{x: x})
		}
		return y
	}
	arg := l.arg[p.Micro]
	if cap(arg) < y.Size() {
		arg = make([]uint8, y.Size())
		l.arg[p.Micro] = arg
	}
	arg = arg[:y.Size()]
	ops.MaxPool2dArgInto(y, arg, x, l.Kernel, l.Stride, p.Threads)
	l.x.put(p, maxPooled{x, arg})
	return y
}

func (l *MaxPool2d) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	x := l.x.take("MaxPool2d", p)
	checkPoolGrad("MaxPool2d", dy, x.x, l.Kernel, l.Stride)
	if !needDX {
		return nil
	}
	if x.arg == nil {
		return ops.MaxPool2dBackward(dy, x.x, l.Kernel, l.Stride)
	}
	return ops.MaxPool2dArgScatterInto(p.Arena.Like(x.x), dy, x.arg, l.Kernel, l.Stride, p.Threads)
}

func (l *AvgPool2d) Kind() string    { return "avgpool2d" }
func (l *AvgPool2d) Params() []Param { return nil }
func (l *AvgPool2d) ZeroGrad()       {}
func (l *AvgPool2d) InFlight() int   { return len(l.x) }
func (l *AvgPool2d) Reset()          { clear(l.x) }

// OutShape returns the [C, OH, OW] output of a [C, H, W] sample, or an error
// when the kernel is larger than the plane.
func (l *AvgPool2d) OutShape(in []int) ([]int, error) {
	return poolOutShape("AvgPool2d", in, l.Kernel, l.Stride)
}

func (l *AvgPool2d) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	oh, ow := checkPool("AvgPool2d", x, l.Kernel, l.Stride)
	y := ops.AvgPool2dInto(p.Arena.Tensor(x.DType(), x.Dim(0), x.Dim(1), oh, ow), x, l.Kernel, l.Stride)
	l.x.put(p, x)
	return y
}

func (l *AvgPool2d) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	x := l.x.take("AvgPool2d", p)
	checkPoolGrad("AvgPool2d", dy, x, l.Kernel, l.Stride)
	if !needDX {
		return nil
	}
	return ops.AvgPool2dBackwardInto(p.Arena.Like(x), dy, l.Kernel, l.Stride)
}
