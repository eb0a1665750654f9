package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/tensor"
)

// Dropout zeroes each element with probability P while training and scales the
// rest by 1/(1-P) (inverted dropout); evaluation passes x through.
//
// The mask of a micro-batch is drawn from a PCG stream keyed by (Seed, Index,
// step, micro-batch), so it does not depend on the order in which micro-batches
// arrive: the pipeline and the sequential trainer draw the same masks.
type Dropout struct {
	P     float64
	Seed  uint64
	Index int // the layer's position in the model
	mask  cache[*tensor.Tensor]
}

// NewDropout returns a dropout layer; p must lie in [0, 1).
func NewDropout(p float64, seed uint64, index int) (*Dropout, error) {
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("nn: dropout p = %v is outside [0, 1)", p)
	}
	return &Dropout{P: p, Seed: seed, Index: index, mask: cache[*tensor.Tensor]{}}, nil
}

func (d *Dropout) Kind() string    { return "dropout" }
func (d *Dropout) Params() []Param { return nil }
func (d *Dropout) ZeroGrad()       {}
func (d *Dropout) InFlight() int   { return len(d.mask) }

// stream returns the mask source of one micro-batch of one step.
func (d *Dropout) stream(p Pass) *rand.Rand {
	key := mix(mix(mix(uint64(d.Index))^uint64(p.Step)) ^ uint64(p.Micro))
	return rand.New(rand.NewPCG(d.Seed, key))
}

// mix is splitmix64's finalizer: nearby keys give unrelated streams.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (d *Dropout) Forward(p Pass, x *tensor.Tensor) *tensor.Tensor {
	if !p.Train || d.P == 0 {
		if p.Train {
			d.mask.put(p, nil)
		}
		return x.Clone()
	}
	rng := d.stream(p)
	scale := 1 / (1 - d.P)
	mask := tensor.Zeros(x.DType(), x.Shape()...)
	if x.DType() == tensor.Float32 {
		dropMask(mask.Data32(), rng, d.P, float32(scale))
	} else {
		dropMask(mask.Data64(), rng, d.P, scale)
	}
	d.mask.put(p, mask)
	return mulTensors(x, mask)
}

func (d *Dropout) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	mask := d.mask.take("Dropout", p)
	if !needDX {
		return nil
	}
	if mask == nil {
		return dy.Clone()
	}
	return mulTensors(dy, mask)
}

func dropMask[T float32 | float64](m []T, rng *rand.Rand, p float64, scale T) {
	for i := range m {
		if rng.Float64() >= p {
			m[i] = scale
		}
	}
}

func mulTensors(a, b *tensor.Tensor) *tensor.Tensor {
	out := a.Clone()
	if a.DType() == tensor.Float32 {
		o, m := out.Data32(), b.Data32()
		for i := range o {
			o[i] *= m[i]
		}
		return out
	}
	o, m := out.Data64(), b.Data64()
	for i := range o {
		o[i] *= m[i]
	}
	return out
}

func (d *Dropout) Reset() { clear(d.mask) }
