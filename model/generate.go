package model

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pipetrain/pipetrain/nn"
)

// GenerateOptions say how Generate draws each token.
type GenerateOptions struct {
	// Temperature divides the outputs before the softmax: below 1 sharpens
	// the distribution, above 1 flattens it; 0 takes the most likely token.
	Temperature float64
	// TopK keeps only the k most likely tokens (ties at the k-th kept too);
	// 0 keeps them all.
	TopK int
	// TopP keeps the fewest most likely tokens whose probabilities, after
	// the temperature and TopK, add up to at least TopP (nucleus sampling,
	// as Hugging Face's top_p); 0 or 1 keeps them all.
	TopP float64
	// Each, when set, is called with each token as it is drawn, so that a
	// caller can show it at once; an error it returns ends Generate with
	// that error.
	Each func(id int) error
	// Seed keys the draws: the same seed, prompt and options give the same
	// tokens.
	Seed uint64
}

// Generate continues prompt, a text model's token ids, by n tokens drawn
// from the model one at a time, and returns the new ones. Each token costs
// one position: the blocks keep the keys and values of the tokens before
// it. When the context is full, the model reads its last half again (a
// sliding window of between half and all of the context), so past the
// first context a token costs two positions on average.
func (m *Model) Generate(prompt []int, n int, opt GenerateOptions) ([]int, error) {
	switch {
	case len(prompt) == 0:
		return nil, errors.New("model: generation needs a prompt of at least one token")
	case n < 0:
		return nil, fmt.Errorf("model: %d tokens to generate", n)
	case !(opt.Temperature >= 0) || math.IsInf(opt.Temperature, 0):
		return nil, fmt.Errorf("model: temperature %v must be a finite number >= 0", opt.Temperature)
	case opt.TopK < 0:
		return nil, fmt.Errorf("model: top_k %d must be >= 0", opt.TopK)
	case !(opt.TopP >= 0 && opt.TopP <= 1):
		return nil, fmt.Errorf("model: top_p %v must be in [0, 1]", opt.TopP)
	}
	r, err := m.get()
	if err != nil {
		return nil, err
	}
	d, err := nn.NewDecoder(r.layers, 1)
	if err != nil {
		m.put(r)
		return nil, fmt.Errorf("model: %w", err)
	}
	defer m.put(r)
	ctx := d.Tokens()
	history := slices.Clone(prompt)
	if len(history) > ctx {
		history = history[len(history)-ctx:]
	}
	feed := func(ids []int) ([]float64, error) {
		var last []float64
		for _, id := range ids {
			out, err := d.Next([]int{id})
			if err != nil {
				return nil, fmt.Errorf("model: %w", err)
			}
			last = out.Float64s()
		}
		return last, nil
	}
	logits, err := feed(history)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x67656e)) // "gen"
	out := make([]int, 0, n)
	for range n {
		id := draw(logits, opt, rng)
		out = append(out, id)
		if opt.Each != nil {
			if err := opt.Each(id); err != nil {
				return out, err
			}
		}
		history = append(history, id)
		if d.Pos() == ctx {
			// the context is full: read the last half again
			d.Reset()
			keep := history[len(history)-ctx/2-1 : len(history)-1]
			if _, err := feed(keep); err != nil {
				return nil, err
			}
		}
		if logits, err = feed([]int{id}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// draw picks a token from logits as opt says: the largest at temperature 0,
// else from the softmax of logits/temperature over the top k, cut to the
// nucleus of mass top p.
func draw(logits []float64, opt GenerateOptions, rng *rand.Rand) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	if opt.Temperature == 0 {
		return best
	}
	cut := math.Inf(-1)
	if k := opt.TopK; k > 0 && k < len(logits) {
		sorted := slices.Clone(logits)
		slices.Sort(sorted)
		cut = sorted[len(sorted)-k]
	}
	p := make([]float64, len(logits))
	sum := 0.0
	for i, v := range logits {
		if v >= cut {
			p[i] = math.Exp((v - logits[best]) / opt.Temperature)
			sum += p[i]
		}
	}
	if opt.TopP > 0 && opt.TopP < 1 {
		sum = nucleus(p, sum, opt.TopP)
	}
	u := rng.Float64() * sum
	for i, w := range p {
		if u < w {
			return i
		}
		u -= w
	}
	return best // rounding left u past the last weight
}

// nucleus zeroes the weights outside the fewest largest ones whose share
// of sum reaches top (the first in id order kept among equal weights) and
// returns the sum of those kept.
func nucleus(p []float64, sum, top float64) float64 {
	order := make([]int, 0, len(p))
	for i, w := range p {
		if w > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p[b], p[a]) })
	kept, n := 0.0, 0
	for n < len(order) && (n == 0 || kept < top*sum) {
		kept += p[order[n]]
		n++
	}
	for _, i := range order[n:] {
		p[i] = 0
	}
	return kept
}
