package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNucleus(t *testing.T) {
	for _, c := range []struct {
		name string
		p    []float64
		top  float64
		want []float64
	}{
		{"two reach half", []float64{1, 2, 3, 4}, 0.5, []float64{0, 0, 3, 4}},
		{"the largest alone reaches it exactly", []float64{1, 2, 3, 4}, 0.4, []float64{0, 0, 0, 4}},
		{"at least one kept", []float64{1, 2, 3, 4}, 0.01, []float64{0, 0, 0, 4}},
		{"all needed", []float64{1, 2, 3, 4}, 0.95, []float64{1, 2, 3, 4}},
		{"ties go to the lower id", []float64{2, 2, 1}, 0.3, []float64{2, 0, 0}},
		{"zeros (cut by top k) stay out", []float64{0, 5, 0, 5}, 0.99, []float64{0, 5, 0, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := slices.Clone(c.p)
			sum := 0.0
			for _, w := range p {
				sum += w
			}
			got := nucleus(p, sum, c.top)
			if !slices.Equal(p, c.want) {
				t.Fatalf("nucleus(%v, top %v) left %v, want %v", c.p, c.top, p, c.want)
			}
			wantSum := 0.0
			for _, w := range c.want {
				wantSum += w
			}
			if got != wantSum {
				t.Fatalf("nucleus returned the sum %v, want %v", got, wantSum)
			}
		})
	}
}

// TestDrawTopP draws often from logits whose nucleus at 0.75 holds the
// three most likely tokens of five: only they come out, each about as
// often as its renormalised probability.
func TestDrawTopP(t *testing.T) {
	probs := []float64{0.05, 0.4, 0.2, 0.3, 0.05}
	logits := make([]float64, len(probs))
	for i, p := range probs {
		logits[i] = math.Log(p)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, len(probs))
	const n = 90000
	for range n {
		counts[draw(logits, GenerateOptions{Temperature: 1, TopP: 0.75}, rng)]++
	}
	if counts[0] != 0 || counts[4] != 0 {
		t.Fatalf("tokens outside the nucleus drawn: %v", counts)
	}
	for _, i := range []int{1, 2, 3} {
		want := probs[i] / 0.9
		if got := float64(counts[i]) / n; math.Abs(got-want) > 0.01 {
			t.Errorf("token %d drawn at %.4f, want %.4f (counts %v)", i, got, want, counts)
		}
	}
	// top_p of 1 keeps every token
	clear(counts)
	for range n {
		counts[draw(logits, GenerateOptions{Temperature: 1, TopP: 1}, rng)]++
	}
	if counts[0] == 0 || counts[4] == 0 {
		t.Fatalf("top_p = 1 left tokens out: %v", counts)
	}
}
