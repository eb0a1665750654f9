package nn

import "fmt"

// Recompute is which activations a transformer block rebuilds in its
// backward instead of keeping them from its forward: memory for compute,
// with the same bits either way.
type Recompute string

const (
	// RecomputeNone keeps everything the backward reads.
	RecomputeNone Recompute = "none"
	// RecomputeAttention keeps everything but the core attention's
	// output [N, T, D] and its probabilities [N, heads, T, T] (above a
	// context of 256, their row statistics [N, heads, T, 2]), which the
	// backward recomputes from the kept q, k and v (the output for c_proj's
	// weight gradient): one attention forward more.
	RecomputeAttention Recompute = "attention"
	// RecomputeBlocks keeps only the block's input; the backward runs the
	// block's forward again, then its backward.
	RecomputeBlocks Recompute = "blocks"
)

// Recomputes lists the values of Recompute, as config files name them.
var Recomputes = []Recompute{RecomputeNone, RecomputeAttention, RecomputeBlocks}

// ParseRecompute returns the Recompute named s; "" is RecomputeNone.
func ParseRecompute(s string) (Recompute, error) {
	if s == "" {
		return RecomputeNone, nil
	}
	for _, r := range Recomputes {
		if string(r) == s {
			return r, nil
		}
	}
	return RecomputeNone, fmt.Errorf("nn: recompute %q is not one of %v", s, Recomputes)
}

// forgetter is a layer that can drop one micro-batch's cache: a block that
// recomputes its sub-layers' activations drops what their forward kept.
type forgetter interface {
	forget(micro int)
}

func (l *Linear) forget(micro int)     { delete(l.x, micro); delete(l.dy, micro) }
func (l *LayerNorm) forget(micro int)  { delete(l.saved, micro) }
func (a *Activation) forget(micro int) { delete(a.saved, micro) }
func (d *Dropout) forget(micro int)    { delete(d.mask, micro) }
