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
}

// maxPooled is what MaxPool2d's backward needs: where each window's maximum
// was, so that it does not search the windows again.
type maxPooled struct {
	idx   []int
	shape []int
	dt    tensor.DType
}

// AvgPool2d is torch.nn.AvgPool2d(Kernel, Stride) without padding: the mean
// over each window, shaped as MaxPool2d's.
type AvgPool2d struct {
	Kernel, Stride int
	in             cache[pooled] // the backward needs no values
}

// pooled is what AvgPool2d's backward needs of an input.
type pooled struct {
	dt    tensor.DType
	shape []int
}

// NewMaxPool2d returns a max pooling over kernel×kernel windows; stride 0
// means kernel, as PyTorch's default.
func NewMaxPool2d(kernel, stride int) (*MaxPool2d, error) {
	stride, err := poolArgs("NewMaxPool2d", kernel, stride)
	if err != nil {
		return nil, err
	}
	return &MaxPool2d{Kernel: kernel, Stride: stride, x: cache[maxPooled]{}}, nil
}

// NewAvgPool2d returns an average pooling over kernel×kernel windows; stride
// 0 means kernel, as PyTorch's default.
func NewAvgPool2d(kernel, stride int) (*AvgPool2d, error) {
	stride, err := poolArgs("NewAvgPool2d", kernel, stride)
	if err != nil {
		return nil, err
	}
	return &AvgPool2d{Kernel: kernel, Stride: stride, in: cache[pooled]{}}, nil
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
	if in[1] < kernel || in[2] < kernel {
		return nil, fmt.Sprintf("kernel %d×%d is larger than the input %d×%d", kernel, kernel, in[1], in[2])
	}
	return []int{in[0], (in[1]-kernel)/stride + 1, (in[2]-kernel)/stride + 1}, ""
}

func poolOutShape(kind string, in []int, kernel, stride int) ([]int, error) {
	out, why := poolOut(in, kernel, stride)
	if why != "" {
		return nil, fmt.Errorf("nn.%s: sample shape %v does not fit kernel %d, stride %d: %s", kind, in, kernel, stride, why)
	}
	return out, nil
}

// checkPool panics unless x is [N, C, H, W] with planes the kernel fits, and
// returns the output shape.
func checkPool(kind string, x *tensor.Tensor, kernel, stride int) []int {
	s := x.Shape()
	why := "not [N C H W]"
	var out []int
	if len(s) == 4 {
		out, why = poolOut(s[1:], kernel, stride)
	}
	if why != "" {
		panic(fmt.Errorf("nn.%s: input %v does not fit kernel %d, stride %d: %s", kind, s, kernel, stride, why))
	}
	return append(s[:1], out...)
}

// checkPoolGrad panics unless dy has the output shape and dtype of the
// input in.
func checkPoolGrad(kind string, dy *tensor.Tensor, dt tensor.DType, in []int, kernel, stride int) {
	out, _ := poolOut(in[1:], kernel, stride)
	out = append([]int{in[0]}, out...)
	if !dy.HasShape(out...) || dy.DType() != dt {
		panic(fmt.Errorf("nn.%s: dy %v %v does not fit output %v %v of input %v", kind, dy.DType(), dy.Shape(), dt, out, in))
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
	checkPool("MaxPool2d", x, l.Kernel, l.Stride)
	if !p.Train {
		return ops.MaxPool2d(x, l.Kernel, l.Stride)
	}
	y, idx := ops.MaxPool2dIndices(x, l.Kernel, l.Stride)
	l.x.put(p, maxPooled{idx, x.Shape(), x.DType()})
	return y
}

func (l *MaxPool2d) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	x := l.x.take("MaxPool2d", p)
	checkPoolGrad("MaxPool2d", dy, x.dt, x.shape, l.Kernel, l.Stride)
	if !needDX {
		return nil
	}
	return ops.MaxPool2dScatter(dy, x.idx, x.shape, l.Kernel, l.Stride)
}

func (l *AvgPool2d) Kind() string    { return "avgpool2d" }
func (l *AvgPool2d) Params() []Param { return nil }
func (l *AvgPool2d) ZeroGrad()       {}
func (l *AvgPool2d) InFlight() int   { return len(l.in) }
func (l *AvgPool2d) Reset()          { clear(l.in) }

// OutShape returns the [C, OH, OW] output of a [C, H, W] sample, or an error
// when the kernel is larger than the plane.
func (l *AvgPool2d) OutShape(in []int) ([]int, error) {
	return poolOutShape("AvgPool2d", in, l.Kernel, l.Stride)
}

func (l *AvgPool2d) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	checkPool("AvgPool2d", x, l.Kernel, l.Stride)
	y := ops.AvgPool2d(x, l.Kernel, l.Stride)
	l.in.put(p, pooled{x.DType(), x.Shape()})
	return y
}

func (l *AvgPool2d) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	in := l.in.take("AvgPool2d", p)
	checkPoolGrad("AvgPool2d", dy, in.dt, in.shape, l.Kernel, l.Stride)
	if !needDX {
		return nil
	}
	return ops.AvgPool2dBackward(dy, in.shape, l.Kernel, l.Stride)
}
