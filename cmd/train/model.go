package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pipetrain/pipetrain/cmd/train/internal/config"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline"
	"github.com/pipetrain/pipetrain/tensor"
)

// pipelineModel is what the pipeline builds the layers from: the
// [[model.layers]] table for samples of the given shape, layer i drawing its
// weights from the PCG stream (seed, i), so that a layer's first weights do
// not depend on the layers before it.
func pipelineModel(c *config.Config, sample []int) pipeline.Model {
	return pipeline.Model{Specs: modelSpecs(c), Sample: sample, Seed: c.Seed}
}

// modelSpecs is the [[model.layers]] table as layer specs, each
// transformer block's with model.recompute: the spec carries it wherever
// the block is built, in this process or on a worker. "none" stays unset,
// so the specs of a run without recomputation read as before it existed.
func modelSpecs(c *config.Config) []nn.Spec {
	specs := make([]nn.Spec, len(c.Model.Layers))
	for i, l := range c.Model.Layers {
		specs[i] = l.Spec
		if l.Type == "transformer_block" && c.Model.Recompute != string(nn.RecomputeNone) {
			specs[i].Recompute = c.Model.Recompute
		}
	}
	return specs
}

// recomputeWarning returns the message of a warning that model.recompute
// asks for recomputation in a model with no transformer block, which has
// nothing to recompute, or "".
func recomputeWarning(c *config.Config) string {
	if c.Model.Recompute == string(nn.RecomputeNone) {
		return ""
	}
	for _, l := range c.Model.Layers {
		if l.Type == "transformer_block" {
			return ""
		}
	}
	return fmt.Sprintf("model.recompute = %q has no effect: the model has no transformer_block layer", c.Model.Recompute)
}

// describeModel gives the model's shapes for the log: the sample's (its
// size when the first layer takes it flat), then each one a layer changes
// it to, dimensions joined by "x": "64-128-10" for an MLP on 8×8 digits,
// "1x28x28-32x28x28-32x14x14-…-128-10" for a CNN.
func describeModel(sample []int, shapes [][]int) string {
	dims := func(s []int) string {
		parts := make([]string, len(s))
		for i, d := range s {
			parts[i] = strconv.Itoa(d)
		}
		return strings.Join(parts, "x")
	}
	first := sample
	if len(shapes) > 0 && len(shapes[0]) == 1 {
		first = []int{tensor.SizeOf(sample)}
	}
	out, prev := []string{dims(first)}, first
	for _, s := range shapes {
		if !slices.Equal(s, prev) {
			out = append(out, dims(s))
		}
		prev = s
	}
	return strings.Join(out, "-")
}
