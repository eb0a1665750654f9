// Package deepmlp holds what the benchmarks of the deep MLP share: its
// config and the median they report.
package deepmlp

import (
	"math"
	"slices"
)

// Model is the deep MLP's config file, 784-1024-1024-1024-10 on MNIST at
// batch 256; everything a benchmark varies is a --set.
const Model = `
seed = 3
[data]
name = "mnist"
download = false
batch_size = 256
[[model.layers]]
type = "linear"
units = 1024
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
units = 1024
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
units = 1024
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
units = 10
[optimizer]
type = "sgd"
lr = 0.05
momentum = 0.9
[train]
epochs = 1
checkpoint_every = 100000
eval_every = 100000
[log]
every = 5
`

// Median returns the median of xs, NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
