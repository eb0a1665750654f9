package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// buildModel makes the config's layers for inputs of the given width. Layer i
// draws its weights from the PCG stream (seed, i), so a layer's initial weights
// do not depend on the layers before it.
func buildModel(c *config.Config, features int) ([]nn.Layer, error) {
	const dt = tensor.Float32
	width := features
	layers := make([]nn.Layer, 0, len(c.Model.Layers))
	for i, lc := range c.Model.Layers {
		var l nn.Layer
		switch lc.Type {
		case "linear":
			lin, err := nn.NewLinear(dt, width, lc.Units, nn.Init(lc.Init), rand.New(rand.NewPCG(c.Seed, uint64(i))))
			if err != nil {
				return nil, badInputf("model.layers[%d]: %v", i, err)
			}
			l, width = lin, lc.Units
		case "relu":
			l = nn.NewReLU()
		case "leaky_relu":
			l = nn.NewLeakyReLU(lc.Alpha)
		case "prelu":
			l = nn.NewPReLU(dt)
		case "sigmoid":
			l = nn.NewSigmoid()
		case "tanh":
			l = nn.NewTanh()
		case "gelu":
			l = nn.NewGELU(lc.Approximate)
		case "softmax":
			l = nn.NewSoftmax()
		case "dropout":
			d, err := nn.NewDropout(lc.P, c.Seed, i)
			if err != nil {
				return nil, badInputf("model.layers[%d].p: %v", i, err)
			}
			l = d
		case "layernorm":
			l = nn.NewLayerNorm(dt, width)
		default:
			return nil, badInputf("model.layers[%d].type = %q: unknown layer type", i, lc.Type)
		}
		layers = append(layers, l)
	}
	return layers, nil
}

// describeModel gives the layer sizes for the log, e.g. "64-128-10".
func describeModel(c *config.Config, features int) string {
	s := fmt.Sprint(features)
	for _, l := range c.Model.Layers {
		if l.Type == "linear" {
			s += fmt.Sprintf("-%d", l.Units)
		}
	}
	return s
}
