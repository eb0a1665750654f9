package optim

import (
	"fmt"
	"math"
	"testing"
)

// TestSchedules checks each schedule, with and without warmup, against rates worked
// out by hand.
func TestSchedules(t *testing.T) {
	cases := []struct {
		kind     string
		base     float64
		warmup   int
		stepSize int
		gamma    float64
		total    int
		want     map[int]float64 // step -> lr
	}{
		{"constant", 0.1, 0, 0, 0.1, 0, map[int]float64{1: 0.1, 2: 0.1, 1000: 0.1}},
		// base*step/warmup: 0.1/4, 0.2/4, 0.3/4, then 0.1.
		{"constant", 0.1, 4, 0, 0.1, 0, map[int]float64{1: 0.025, 2: 0.05, 3: 0.075, 4: 0.1, 5: 0.1, 99: 0.1}},
		// gamma^floor((step-1)/2): 1, 1, 0.5, 0.5, 0.25, 0.25, 0.125.
		{"step", 1, 0, 2, 0.5, 0, map[int]float64{1: 1, 2: 1, 3: 0.5, 4: 0.5, 5: 0.25, 6: 0.25, 7: 0.125, 21: 1.0 / 1024}},
		// warmup 0.5, 1; then gamma^floor((step-3)/2): 1, 1, 0.5, 0.5, 0.25.
		{"step", 1, 2, 2, 0.5, 0, map[int]float64{1: 0.5, 2: 1, 3: 1, 4: 1, 5: 0.5, 6: 0.5, 7: 0.25}},
		// StepLR(step_size=1, gamma=0.1) from 0.1: 0.1, 0.01, 0.001.
		{"step", 0.1, 0, 1, 0.1, 0, map[int]float64{1: 0.1, 2: 0.01, 3: 0.001}},
		// 0.5*(1+cos(pi*k/4)): 1/2+sqrt(2)/4, 1/2, 1/2-sqrt(2)/4, 0, then 0.
		{"cosine", 1, 0, 0, 0.1, 4, map[int]float64{1: 0.5 + math.Sqrt2/4, 2: 0.5, 3: 0.5 - math.Sqrt2/4, 4: 0, 5: 0, 100: 0}},
		// warmup 1, 2; then 2*0.5*(1+cos(pi*(k-2)/4)): 1+sqrt(2)/2, 1, 1-sqrt(2)/2, 0.
		{"cosine", 2, 2, 0, 0.1, 6, map[int]float64{1: 1, 2: 2, 3: 1 + math.Sqrt2/2, 4: 1, 5: 1 - math.Sqrt2/2, 6: 0, 7: 0}},
	}
	for _, c := range cases {
		s, err := NewSchedule(c.kind, c.base, c.warmup, c.stepSize, c.gamma, c.total, 0)
		inputs := fmt.Sprintf("NewSchedule(%q, base=%v, warmup=%d, step_size=%d, gamma=%v, total=%d)", c.kind, c.base, c.warmup, c.stepSize, c.gamma, c.total)
		if err != nil {
			t.Fatalf("%s: %v", inputs, err)
		}
		for step, want := range c.want {
			if got := s.LR(step); !near(got, want, 1e-15) {
				t.Errorf("%s.LR(%d): got %v, want %v", inputs, step, got, want)
			}
		}
		mustPanic(t, inputs+".LR(0)", func() { s.LR(0) })
	}
}

// TestScheduleTypes checks that NewSchedule returns the concrete schedules.
func TestScheduleTypes(t *testing.T) {
	cases := []struct {
		kind string
		want Schedule
	}{
		{"constant", Constant{Base: 0.1, Warmup: 3}},
		{"step", StepDecay{Base: 0.1, Warmup: 3, StepSize: 5, Gamma: 0.5}},
		{"cosine", Cosine{Base: 0.1, Warmup: 3, Total: 50}},
	}
	for _, c := range cases {
		got, err := NewSchedule(c.kind, 0.1, 3, 5, 0.5, 50, 0)
		if err != nil || got != c.want {
			t.Errorf("NewSchedule(%q, 0.1, 3, 5, 0.5, 50): got %#v, %v, want %#v, nil", c.kind, got, err, c.want)
		}
	}
}

// TestStepDecayClosedForm checks StepDecay against base*gamma^n for many steps,
// including a non-representable gamma.
func TestStepDecayClosedForm(t *testing.T) {
	s := StepDecay{Base: 0.05, Warmup: 10, StepSize: 7, Gamma: 0.9}
	for step := 11; step <= 500; step++ {
		n := (step - 11) / 7
		want := 0.05 * math.Pow(0.9, float64(n))
		if got := s.LR(step); !near(got, want, 1e-14) {
			t.Errorf("%+v.LR(%d): got %v, want %v", s, step, got, want)
		}
	}
}

func TestNewScheduleErrors(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		kind     string
		base     float64
		warmup   int
		stepSize int
		gamma    float64
		total    int
		want     string
	}{
		{"linear", 0.1, 0, 0, 0.1, 10, "schedule.type"},
		{"", 0.1, 0, 0, 0.1, 10, "schedule.type"},
		{"Step", 0.1, 0, 1, 0.1, 10, "schedule.type"},
		{"step", 0.1, 0, 0, 0.1, 10, "schedule.step_size"},
		{"step", 0.1, 0, -1, 0.1, 10, "schedule.step_size"},
		{"constant", 0.1, 0, -1, 0.1, 10, "schedule.step_size"},
		{"constant", 0.1, -1, 0, 0.1, 10, "schedule.warmup_steps"},
		{"step", 0.1, 0, 1, -0.1, 10, "schedule.gamma"},
		{"step", 0.1, 0, 1, nan, 10, "schedule.gamma"},
		{"constant", -0.1, 0, 0, 0.1, 10, "optimizer.lr"},
		{"constant", nan, 0, 0, 0.1, 10, "optimizer.lr"},
		{"constant", math.Inf(1), 0, 0, 0.1, 10, "optimizer.lr"},
		{"constant", 0.1, 0, 0, 0.1, -1, "total steps"},
		{"cosine", 0.1, 0, 0, 0.1, 0, "schedule.warmup_steps = 0: the run has 0 steps"},
		// one rule for every kind: the warm-up ends within the run
		{"cosine", 0.1, 10, 0, 0.1, 10, "schedule.warmup_steps = 10: the run has 10 steps, so its learning rate would never reach"},
		{"constant", 0.1, 10, 0, 0.1, 10, "schedule.warmup_steps = 10: the run has 10 steps, so its learning rate would never reach"},
		{"constant", 0.1, 100000, 0, 0.1, 900, "schedule.warmup_steps = 100000: the run has 900 steps"},
		{"step", 0.1, 11, 5, 0.1, 10, "schedule.warmup_steps = 11: the run has 10 steps"},
	}
	for _, c := range cases {
		s, err := NewSchedule(c.kind, c.base, c.warmup, c.stepSize, c.gamma, c.total, 0)
		wantErr(t, err, c.want, fmt.Sprintf("NewSchedule(%q, base=%v, warmup=%d, step_size=%d, gamma=%v, total=%d)", c.kind, c.base, c.warmup, c.stepSize, c.gamma, c.total))
		if s != nil {
			t.Errorf("NewSchedule(%q, ...): got %v, want nil schedule", c.kind, s)
		}
	}
}
