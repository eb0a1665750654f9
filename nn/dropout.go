package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/tensor"
)

// Dropout zeroes each element with probability P while training and scales the
// rest by 1/(1-P) (inverted dropout); evaluation passes x through.
//
// The mask of a row is drawn from a PCG stream keyed by (Seed, Index, step,
// the row's index in the mini-batch: Pass.Row plus its index in x), so it
// depends neither on the order in which micro-batches arrive nor on how the
// mini-batch was cut: every trainer and every split draw the same masks.
type Dropout struct {
	P     float64
	Seed  uint64
	Index int // the layer's position in the model
	mask  cache[*tensor.Tensor]
	pcg   rand.PCG   // reseeded for each pass
	rng   *rand.Rand // draws from pcg
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

// stream returns the mask source of one row of one step, row counting from
// the mini-batch's first: the layer's one generator, reseeded.
func (d *Dropout) stream(step, row int) *rand.Rand {
	key := mix(mix(mix(uint64(d.Index))^uint64(step)) ^ uint64(row))
	d.pcg.Seed(d.Seed, key)
	if d.rng == nil {
		d.rng = rand.New(&d.pcg)
	}
	return d.rng
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
		return copyIn(p.Arena, x)
	}
	scale := 1 / (1 - d.P)
	mask := p.Arena.Like(x)
	rows := 1
	if x.Dims() > 0 {
		rows = x.Dim(0)
	}
	width := x.Size() / max(1, rows)
	// Each row's mask comes from its own stream, keyed by the row's index in
	// the mini-batch, so the masks do not depend on the micro-batch split.
	for r := range rows {
		rng := d.stream(p.Step, p.Row+r)
		if x.DType() == tensor.Float32 {
			dropMask(mask.Data32()[r*width:(r+1)*width], rng, d.P, float32(scale))
		} else {
			dropMask(mask.Data64()[r*width:(r+1)*width], rng, d.P, scale)
		}
	}
	d.mask.put(p, mask)
	return mulInto(p.Arena.Like(x), x, mask)
}

func (d *Dropout) Backward(p Pass, dy *tensor.Tensor, needDX bool) *tensor.Tensor {
	mask := d.mask.take("Dropout", p)
	if !needDX {
		return nil
	}
	if mask == nil {
		return copyIn(p.Arena, dy)
	}
	return mulInto(p.Arena.Like(dy), dy, mask)
}

func dropMask[T float32 | float64](m []T, rng *rand.Rand, p float64, scale T) {
	for i := range m {
		if rng.Float64() >= p {
			m[i] = scale
		} else {
			m[i] = 0 // m may hold an earlier step's mask
		}
	}
}

// copyIn returns a copy of x lent by a (new if a is nil).
func copyIn(a *Arena, x *tensor.Tensor) *tensor.Tensor {
	y := a.Like(x)
	y.CopyFrom(x)
	return y
}

// mulInto sets out = a*b element by element and returns out.
func mulInto(out, a, b *tensor.Tensor) *tensor.Tensor {
	if a.DType() == tensor.Float32 {
		o, x, m := out.Data32(), a.Data32(), b.Data32()
		for i := range o {
			o[i] = x[i] * m[i]
		}
		return out
	}
	o, x, m := out.Data64(), a.Data64(), b.Data64()
	for i := range o {
		o[i] = x[i] * m[i]
	}
	return out
}

func (d *Dropout) Reset() { clear(d.mask) }
