package optim

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate of each optimizer step.
type Schedule interface {
	// LR returns the learning rate for optimizer step step, counted from 1.
	// It panics if step < 1.
	LR(step int) float64
}

// Constant is a constant learning rate Base after Warmup steps of linear warmup.
type Constant struct {
	Base   float64
	Warmup int
}

// LR returns Base*step/Warmup for step <= Warmup, else Base.
func (s Constant) LR(step int) float64 {
	checkStep(step)
	if step <= s.Warmup {
		return warmupLR(s.Base, step, s.Warmup)
	}
	return s.Base
}

// StepDecay multiplies the learning rate by Gamma every StepSize steps after Warmup
// steps of linear warmup, like torch.optim.lr_scheduler.StepLR stepped once per
// optimizer step.
type StepDecay struct {
	Base     float64
	Warmup   int
	StepSize int // >= 1
	Gamma    float64
}

// LR returns Base*step/Warmup for step <= Warmup, else
// Base * Gamma^floor((step-1-Warmup)/StepSize).
//
// The power is correctly rounded, as in StepLR's closed form
// base_lr * gamma ** (epoch // step_size); StepLR's default chainable form multiplies
// the previous rate by gamma instead, which can differ from it in the last bit.
func (s StepDecay) LR(step int) float64 {
	checkStep(step)
	if step <= s.Warmup {
		return warmupLR(s.Base, step, s.Warmup)
	}
	n := (step - 1 - s.Warmup) / s.StepSize
	return float64(s.Base * powInt(s.Gamma, n))
}

// Cosine anneals the learning rate from Base to Min over the steps after Warmup
// steps of linear warmup, reaching Min at step Total and staying there.
type Cosine struct {
	Base   float64
	Warmup int
	Total  int     // > Warmup
	Min    float64 // schedule.min_lr, <= Base
}

// LR returns Base*step/Warmup for step <= Warmup, else
// Min + (Base-Min) * 0.5 * (1 + cos(pi*(s-Warmup)/(Total-Warmup))) with
// s = min(step, Total), as nanoGPT's get_lr.
func (s Cosine) LR(step int) float64 {
	checkStep(step)
	if step <= s.Warmup {
		return warmupLR(s.Base, step, s.Warmup)
	}
	k := min(step, s.Total)
	x := float64(math.Pi*float64(k-s.Warmup)) / float64(s.Total-s.Warmup)
	// products rounded before the sum (no FMA): with Min 0, the bits of
	// Base*0.5*(1+cos) as before min_lr existed
	return s.Min + float64(float64(float64(s.Base-s.Min)*0.5)*(1+math.Cos(x)))
}

// warmupLR is the linear warmup base*step/warmup.
func warmupLR(base float64, step, warmup int) float64 {
	return float64(base*float64(step)) / float64(warmup)
}

func checkStep(step int) {
	if step < 1 {
		panic(fmt.Errorf("optim: Schedule.LR: step %d < 1 (steps count from 1)", step))
	}
}

// NewSchedule returns the schedule of the [schedule] table: kind is schedule.type
// ("constant", "step" or "cosine"), base the optimizer.lr, warmup
// schedule.warmup_steps, stepSize schedule.step_size, gamma schedule.gamma, and
// totalSteps the number of optimizer steps in the run (0: not known, but for
// "cosine", whose decay ends at it), which every kind's warm-up must end
// within. Errors name the offending key.
func NewSchedule(kind string, base float64, warmup, stepSize int, gamma float64, totalSteps int, minLR float64) (Schedule, error) {
	if err := nonNegative("optimizer.lr", base); err != nil {
		return nil, err
	}
	if warmup < 0 {
		return nil, fmt.Errorf("optim: schedule.warmup_steps = %d must be >= 0", warmup)
	}
	if stepSize < 0 {
		return nil, fmt.Errorf("optim: schedule.step_size = %d must be >= 0", stepSize)
	}
	if err := nonNegative("schedule.gamma", gamma); err != nil {
		return nil, err
	}
	if totalSteps < 0 {
		return nil, fmt.Errorf("optim: total steps %d must be >= 0", totalSteps)
	}
	if warmup > 0 && totalSteps > 0 && warmup >= totalSteps || kind == "cosine" && totalSteps <= warmup {
		return nil, fmt.Errorf("optim: schedule.warmup_steps = %d: the run has %d steps, so its learning rate would never reach optimizer.lr: warm up over fewer steps", warmup, totalSteps)
	}
	switch kind {
	case "constant":
		return Constant{Base: base, Warmup: warmup}, nil
	case "step":
		if stepSize == 0 {
			return nil, fmt.Errorf("optim: schedule.step_size = 0: schedule.type = \"step\" needs step_size >= 1")
		}
		return StepDecay{Base: base, Warmup: warmup, StepSize: stepSize, Gamma: gamma}, nil
	case "cosine":
		if !(minLR >= 0 && minLR <= base) {
			return nil, fmt.Errorf("optim: schedule.min_lr = %v must be in [0, optimizer.lr = %v]", minLR, base)
		}
		return Cosine{Base: base, Warmup: warmup, Total: totalSteps, Min: minLR}, nil
	}
	return nil, fmt.Errorf("optim: schedule.type = %q is not one of constant, step, cosine", kind)
}
