package nn

import "github.com/pipetrain/pipetrain/tensor"

// Sharder is a layer whose output splits into blocks of whole units (a
// linear layer's output features, a convolution's filters), so that a
// pipeline can run each block in an actor of its own. A block of units
// [lo, hi) is the output columns [lo·cols, hi·cols) of each row, and its
// parameters are rows [lo, hi) of the layer's parameters.
type Sharder interface {
	Layer
	// ShardUnits returns how many units the output has and how many
	// columns of a row each unit gives; units 0 means it cannot be split.
	ShardUnits() (units, cols int)
	// Shard returns a layer computing units [lo, hi), with copies of their
	// parameters.
	Shard(lo, hi int) Layer
}

func (l *Linear) ShardUnits() (units, cols int) { return l.Out, 1 }

func (l *Linear) Shard(lo, hi int) Layer {
	var b *tensor.Tensor
	if l.B != nil {
		b = SliceRows(l.B, lo, hi)
	}
	return LinearFrom(SliceRows(l.W, lo, hi), b)
}

// ShardUnits gives a convolution's filters; other image layers do not split.
func (l *imageLayer) ShardUnits() (units, cols int) {
	if _, ok := l.Layer.(*Conv2d); !ok {
		return 0, 0
	}
	return l.out[0], l.out[1] * l.out[2]
}

func (l *imageLayer) Shard(lo, hi int) Layer {
	c := l.Layer.(*Conv2d)
	w, b := SliceRows(c.W, lo, hi), SliceRows(c.B, lo, hi)
	part := &Conv2d{C: c.C, F: hi - lo, KH: c.KH, KW: c.KW, Stride: c.Stride, Padding: c.Padding,
		W: w, B: b, GW: tensor.Zeros(w.DType(), w.Shape()...), GB: tensor.Zeros(b.DType(), hi-lo),
		x: cache[*tensor.Tensor]{}}
	out := []int{hi - lo, l.out[1], l.out[2]}
	return &imageLayer{Layer: part, in: l.in, out: out, inSize: l.inSize, outSize: tensor.SizeOf(out)}
}
