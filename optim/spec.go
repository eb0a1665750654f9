package optim

import "fmt"

// Spec names an optimizer and its hyperparameters as plain data: every owner of
// parameters (each pipeline stage) builds its own optimizer from it, so the
// optimizer's state lives beside the weights it updates. Its fields are the
// keys of the [optimizer] table; the learning rate is passed to each Step.
type Spec struct {
	Kind        string     // "sgd", "adam" or "adamw"
	Momentum    float64    // sgd
	Nesterov    bool       // sgd
	WeightDecay float64    // all: L2 added to the gradient (sgd, adam), decoupled (adamw)
	Decay       string     // which parameters weight decay applies to: "all" (or "") or "matrices" (2 or more axes)
	Betas       [2]float64 // adam, adamw
	Eps         float64    // adam, adamw
	// Threads is how many goroutines an update may use (0: all the Go
	// runtime has); not a hyperparameter: results do not depend on it.
	Threads int
}

// Kinds lists the optimizer names a Spec may have.
var Kinds = []string{"sgd", "adam", "adamw"}

// New returns a fresh optimizer (no state) for the spec, or an error naming the
// key that is out of range.
func (s Spec) New() (Optimizer, error) {
	matrices := s.Decay == "matrices"
	if s.Decay != "" && s.Decay != "all" && !matrices {
		return nil, fmt.Errorf("optim: optimizer.decay = %q: want \"all\" or \"matrices\"", s.Decay)
	}
	switch s.Kind {
	case "sgd":
		return NewSGD(SGDConfig{Momentum: s.Momentum, Nesterov: s.Nesterov, WeightDecay: s.WeightDecay, MatricesOnly: matrices, Threads: s.Threads})
	case "adam", "adamw":
		c := AdamConfig{Betas: s.Betas, Eps: s.Eps, WeightDecay: s.WeightDecay, MatricesOnly: matrices, Threads: s.Threads}
		if s.Kind == "adam" {
			return NewAdam(c)
		}
		return NewAdamW(c)
	}
	return nil, fmt.Errorf("optim: optimizer.type = %q: unknown optimizer (want one of %q)", s.Kind, Kinds)
}
