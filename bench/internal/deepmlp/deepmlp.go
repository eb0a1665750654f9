// Package deepmlp holds what the benchmarks of the deep MLP share: its
// config, the step rates of a run's log and the median they report.
package deepmlp

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
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

// ScanLog calls each with every line of the JSON log at path, in order.
func ScanLog(path string, each func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if err := each(sc.Bytes()); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	return sc.Err()
}

// StepRates returns the samples_per_sec of every step event of the JSON
// log at path, in order.
func StepRates(path string) ([]float64, error) {
	var rates []float64
	err := ScanLog(path, func(line []byte) error {
		var ev struct {
			Event string  `json:"event"`
			Rate  float64 `json:"samples_per_sec"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		if ev.Event == "step" {
			rates = append(rates, ev.Rate)
		}
		return nil
	})
	return rates, err
}
