// Package deepmlp holds what the benchmarks of the deep MLP share: its
// config and the median they report.
package deepmlp

import (
	_ "embed"
	"math"
	"slices"
)

// Model is the deep MLP's config file, model.toml.
//
//go:embed model.toml
var Model string

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
