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
)

// Inits lists the valid initializer names.
var Inits = []Init{XavierUniform, XavierNormal, HeUniform, HeNormal}

// Fill draws w, a weight of shape [fan_out, fan_in], from the initializer with
// PyTorch's formulas (gain 1 for Xavier, sqrt(2) for He), using rng.
func (in Init) Fill(w *tensor.Tensor, rng *rand.Rand) error {
	s := w.Shape()
	if len(s) != 2 {
		return fmt.Errorf("nn: init %s needs a 2-D weight, got shape %v", in, s)
	}
	fanOut, fanIn := float64(s[0]), float64(s[1])
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
	default:
		return fmt.Errorf("nn: unknown init %q (want one of %v)", string(in), Inits)
	}
	return nil
}
