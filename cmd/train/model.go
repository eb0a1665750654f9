package main

import (
	"fmt"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// buildModel makes the config's layers for samples of the given shape, from
// their specs (nn.Build): layer i draws its weights from the PCG stream
// (seed, i), so a layer's initial weights do not depend on the layers before it.
func buildModel(c *config.Config, sample []int) ([]nn.Layer, error) {
	layers, err := nn.BuildShape(modelSpecs(c), sample, c.Seed, tensor.Float32, 0, len(c.Model.Layers))
	if err != nil {
		return nil, badInputf("model.layers: %v", err)
	}
	return layers, nil
}

// modelSpecs is the [[model.layers]] table as layer specs.
func modelSpecs(c *config.Config) []nn.Spec {
	specs := make([]nn.Spec, len(c.Model.Layers))
	for i, l := range c.Model.Layers {
		specs[i] = l.Spec
	}
	return specs
}

// describeModel gives the layer sizes for the log, e.g. "64-128-10".
func describeModel(c *config.Config, features int) string {
	s := fmt.Sprint(features)
	for _, l := range c.Model.Layers {
		if w, ok := l.Spec.Width(); ok {
			s += fmt.Sprintf("-%d", w)
		}
	}
	return s
}
