package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/ops"
	"github.com/pipetrain/pipetrain/tensor"
)

// Pass identifies one forward or backward computation: which optimizer step,
// which micro-batch of it, and whether the model is training.
type Pass struct {
	Step  int  // optimizer step, counted from 1
	Micro int  // micro-batch index within the step
	Row   int  // index of the micro-batch's first row in its mini-batch
	Train bool // false for evaluation: no caching, dropout off
	// Arena, when set, lends the tensors the layers return; nil allocates.
	Arena *Arena
	// Scratch, when set, lends tensors read only during one layer's call
	// (a recomputing transformer block's rebuilt activations). The driver
	// shares one among the layers it runs one after another, so they hold
	// one layer's worth, and may reset it between calls. nil: such a layer
	// keeps an arena of its own.
	Scratch *Arena
	// Attention, when set, is the attention kernels' working memory (a
	// [T, T] block per part), shared by the transformer blocks the driver
	// runs one after another; nil: each block keeps its own.
	Attention *ops.AttentionWork
	// Weights names the version of the parameters: the driver changes it
	// whenever they may have changed (an update, a restore). Layers may keep
	// work derived from their weights, such as GEMM-packed panels, while it
	// stays the same; 0 keeps nothing.
	Weights uint64
	// Micros is how many passes share this weights version (the step's
	// micro-batches, an evaluation's chunks); 0 or 1: none to share with.
	Micros int
	// Threads is how many goroutines a layer's kernels may use for this
	// pass, the caller's included; 0 means runtime.GOMAXPROCS(0). Results do
	// not depend on it.
	Threads int
	// Precision is that of the float32 products of linear, conv2d and
	// attention layers; float64 ignores it.
	Precision Precision
}

// Precision is how float32 layers compute their GEMM products: FP32, or
// with bf16 products (operands rounded to bfloat16 where the GEMM packs
// them, sums in float32) in one of two arithmetics, each the same bits on
// every CPU: BF16 sums in AMX's steps (TDPBF16PS's), BF16Pairs in
// VDPBF16PS's (ops.Arithmetic). Everything else (weights, gradients,
// norms, losses) is float32 either way.
type Precision uint8

const (
	FP32 Precision = iota
	BF16
	BF16Pairs
)

// IsBF16 reports whether p's products are bf16 ones.
func (p Precision) IsBF16() bool { return p != FP32 }

// Arithmetic is the kind of steps p's bf16 sums take.
func (p Precision) Arithmetic() ops.Arithmetic {
	if p == BF16Pairs {
		return ops.Pairs
	}
	return ops.AMX
}

// BF16With returns the bf16 Precision whose sums take ar's steps.
func BF16With(ar ops.Arithmetic) Precision {
	if ar == ops.Pairs {
		return BF16Pairs
	}
	return BF16
}

// String returns the config's name of p: "fp32" or "bf16" (either
// arithmetic).
func (p Precision) String() string {
	if p.IsBF16() {
		return "bf16"
	}
	return "fp32"
}

// ParsePrecision returns the Precision named s; "" is FP32, "bf16" is BF16.
func ParsePrecision(s string) (Precision, error) {
	switch s {
	case "", "fp32":
		return FP32, nil
	case "bf16":
		return BF16, nil
	}
	return FP32, fmt.Errorf("nn: precision %q is not fp32 or bf16", s)
}

// Param is a parameter and its accumulated gradient, of the same dtype and
// shape: the type optimizers update (optim.Param is the same).
type Param = tensor.Param

// Layer is a differentiable function that owns its parameters and gradients.
//
// Forward with p.Train set caches what Backward needs under p.Micro, so several
// micro-batches may be in flight at once; Backward for the same micro-batch
// consumes that cache, adds the parameter gradients to Grad (gradients
// accumulate; ZeroGrad clears them) and returns dX, or nil when needDX is false.
// A Layer never writes its input, nor its output once returned: tensors passed
// between layers are read-only, so a layer may keep either for its backward
// without a copy. Tensors returned under a Pass with an Arena are valid until
// that Arena's Reset. A Layer is not safe for concurrent use: one goroutine
// (one actor) drives it.
type Layer interface {
	Kind() string
	Forward(p Pass, x *tensor.Tensor) *tensor.Tensor
	Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor
	// Params returns the parameters; the same tensors for the layer's life.
	Params() []Param
	ZeroGrad()
	// InFlight reports how many micro-batches hold cached activations.
	InFlight() int
	// Reset discards every cached micro-batch, as after a failed step.
	Reset()
}

// cache holds what backward needs, per micro-batch.
type cache[T any] map[int]T

func (c cache[T]) put(p Pass, v T) {
	if p.Train {
		c[p.Micro] = v
	}
}

func (c cache[T]) take(kind string, p Pass) T {
	v, ok := c[p.Micro]
	if !ok {
		panic(fmt.Errorf("nn.%s: backward for micro-batch %d of step %d without its forward", kind, p.Micro, p.Step))
	}
	delete(c, p.Micro)
	return v
}

func zeroGrads(ps []Param) {
	for _, p := range ps {
		p.Grad.Zero()
	}
}

// SplitBackward is a Layer whose backward can run in two halves: the input
// gradient first, so a pipeline can send it upstream at once, and the parameter
// gradients after. BackwardInput followed by BackwardParams for the same Pass
// does exactly what Backward with needDX does.
type SplitBackward interface {
	Layer
	BackwardInput(p Pass, dy *tensor.Tensor) *tensor.Tensor
	BackwardParams(p Pass)
}

// BatchParams is a SplitBackward layer that can run the parameter gradients
// of several micro-batches of a step at once: BackwardParamsAll(ps) does what
// BackwardParams(p) for each p in order does, with the same bits. KeepGrad
// is BackwardInput for a layer whose input gradient nobody needs (the
// model's first): it keeps dy for BackwardParams and computes nothing.
type BatchParams interface {
	SplitBackward
	KeepGrad(p Pass, dy *tensor.Tensor)
	BackwardParamsAll(ps []Pass)
}
