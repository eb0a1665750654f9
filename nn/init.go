package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/tensor"
)

// Init names a weight initializer.
type Init string

const (
	XavierUniform Init = "xavier_uniform" // U(-a, a), a = sqrt(6/(fan_in+fan_out))
	XavierNormal  Init = "xavier_normal"  // N(0, 2/(fan_in+fan_out))
	HeUniform     Init = "he_uniform"     // U(-a, a), a = sqrt(6/fan_in): kaiming_uniform_ for ReLU
	HeNormal      Init = "he_normal"      // N(0, 2/fan_in): kaiming_normal_ for ReLU
	// TorchDefault is what torch.nn.Linear does by itself: kaiming_uniform_
	// with a = √5, U(-a, a) with a = 1/sqrt(fan_in), and the bias from the
	// same range (FillBias); the other inits leave biases at zero.
	TorchDefault Init = "torch_default"
	// GPT is GPT-2's and nanoGPT's: N(0, 0.02) weights and embeddings, zero
	// biases; a transformer block's residual projections draw from
	// N(0, 0.02/√(2·blocks)).
	GPT Init = "gpt"
)

// Inits lists the valid initializer names.
var Inits = []Init{XavierUniform, XavierNormal, HeUniform, HeNormal, TorchDefault, GPT}

// gptStd is GPT-2's weight standard deviation.
const gptStd = 0.02

// Fill draws w, a weight of shape [fan_out, fan_in], from the initializer with
// PyTorch's formulas (gain 1 for Xavier, sqrt(2) for He), using rng.
func (in Init) Fill(w *tensor.Tensor, rng *rand.Rand) error {
	s := w.Shape()
	if len(s) != 2 {
		return fmt.Errorf("nn: init %s needs a 2-D weight, got shape %v", in, s)
	}
	return in.fill(w, s[1], s[0], rng)
}

// fill draws w, of any shape, from the initializer for the given fans: a
// convolution's weight [F, C, KH, KW] has fan_in C·KH·KW and fan_out F·KH·KW,
// as torch.nn.init computes them.
func (in Init) fill(w *tensor.Tensor, fanInN, fanOutN int, rng *rand.Rand) error {
	fanOut, fanIn := float64(fanOutN), float64(fanInN)
	switch in {
	case XavierUniform:
		a := math.Sqrt(6 / (fanIn + fanOut))
		w.FillUniform(rng, -a, a)
	case XavierNormal:
		w.FillNormal(rng, 0, math.Sqrt(2/(fanIn+fanOut)))
	case HeUniform:
		a := math.Sqrt(6 / fanIn)
		w.FillUniform(rng, -a, a)
	case HeNormal:
		w.FillNormal(rng, 0, math.Sqrt(2/fanIn))
	case TorchDefault:
		// gain sqrt(2/(1+a²)) = sqrt(1/3) at a = √5, bound sqrt(3)·gain/sqrt(fan_in)
		a := 1 / math.Sqrt(fanIn)
		w.FillUniform(rng, -a, a)
	case GPT:
		w.FillNormal(rng, 0, gptStd)
	default:
		return fmt.Errorf("nn: unknown init %q (want one of %v)", string(in), Inits)
	}
	return nil
}

// FillBias draws b, the bias of a layer with fan_in inputs, as the
// initializer does: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for TorchDefault, as
// torch.nn.Linear does, and zeros for the others.
func (in Init) FillBias(b *tensor.Tensor, fanIn int, rng *rand.Rand) {
	if in != TorchDefault || fanIn <= 0 {
		b.Zero()
		return
	}
	a := 1 / math.Sqrt(float64(fanIn))
	b.FillUniform(rng, -a, a)
}
