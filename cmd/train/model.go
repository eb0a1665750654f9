package main

import (
	"fmt"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
)

// pipelineModel is what the pipeline builds the layers from: the
// [[model.layers]] table for samples of the given shape, layer i drawing its
// weights from the PCG stream (seed, i), so that a layer's first weights do
// not depend on the layers before it.
func pipelineModel(c *config.Config, sample []int) pipeline.Model {
	return pipeline.Model{Specs: modelSpecs(c), Sample: sample, Seed: c.Seed}
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
