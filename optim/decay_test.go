package optim

import (
	"math"
	"testing"

	"github.com/pipetrain/pipetrain/tensor"
)

// TestDecayMatrices: with decay "matrices" weight decay shrinks a 2-D
// weight and leaves a 1-D bias as it would be without weight decay, for
// each optimizer; with "all" it shrinks both.
func TestDecayMatrices(t *testing.T) {
	step := func(kind, decay string) (w, b []float64) {
		o, err := Spec{Kind: kind, WeightDecay: 0.5, Decay: decay, Betas: [2]float64{0.9, 0.99}, Eps: 1e-8}.New()
		if err != nil {
			t.Fatal(err)
		}
		ps := []Param{
			{Name: "w", Value: tensor.FromFloat64s(tensor.Float64, []float64{1, 2, 3, 4}, 2, 2), Grad: tensor.Full(tensor.Float64, 0.1, 2, 2)},
			{Name: "b", Value: tensor.FromFloat64s(tensor.Float64, []float64{1, 2}, 2), Grad: tensor.Full(tensor.Float64, 0.1, 2)},
		}
		if err := o.Step(ps, 0.1); err != nil {
			t.Fatal(err)
		}
		return ps[0].Value.Float64s(), ps[1].Value.Float64s()
	}
	for _, kind := range Kinds {
		wAll, bAll := step(kind, "all")
		wMat, bMat := step(kind, "matrices")
		o, _ := Spec{Kind: kind, Betas: [2]float64{0.9, 0.99}, Eps: 1e-8}.New()
		bias := []Param{{Name: "b", Value: tensor.FromFloat64s(tensor.Float64, []float64{1, 2}, 2), Grad: tensor.Full(tensor.Float64, 0.1, 2)}}
		if err := o.Step(bias, 0.1); err != nil {
			t.Fatal(err)
		}
		bNone := bias[0].Value.Float64s()
		for i := range wAll {
			if wAll[i] != wMat[i] {
				t.Errorf("%s: the weight under decay matrices %v differs from decay all %v", kind, wMat, wAll)
				break
			}
		}
		for i := range bNone {
			if bMat[i] != bNone[i] {
				t.Errorf("%s: the bias under decay matrices is %v, want %v as without weight decay", kind, bMat, bNone)
			}
			if bAll[i] == bNone[i] {
				t.Errorf("%s: the bias under decay all is %v, the same as without weight decay", kind, bAll)
			}
		}
	}
	if _, err := (Spec{Kind: "sgd", Decay: "some"}).New(); err == nil {
		t.Error(`decay "some": no error`)
	}
}

// TestCosineMin: the cosine schedule with a floor, as nanoGPT's get_lr:
// lr at the end of warm-up, min at the last step and after, the midpoint
// halfway; min 0 gives the plain cosine's bits.
func TestCosineMin(t *testing.T) {
	s := Cosine{Base: 1e-3, Warmup: 100, Total: 2000, Min: 1e-4}
	for _, c := range []struct {
		step int
		want float64
	}{{100, 1e-3}, {1050, 5.5e-4}, {2000, 1e-4}, {2500, 1e-4}, {50, 5e-4}} {
		if got := s.LR(c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("LR(%d) = %v, want %v", c.step, got, c.want)
		}
	}
	plain, floor0 := Cosine{Base: 0.1, Warmup: 3, Total: 50}, Cosine{Base: 0.1, Warmup: 3, Total: 50, Min: 0}
	for step := 1; step <= 60; step++ {
		if plain.LR(step) != floor0.LR(step) || plain.LR(step) != 0.1*0.5*(1+math.Cos(math.Pi*float64(min(step, 50)-3)/47)) && step > 3 {
			t.Errorf("step %d: min 0 gives %v", step, floor0.LR(step))
		}
	}
	if _, err := NewSchedule("cosine", 0.1, 0, 0, 0, 10, 0.2); err == nil {
		t.Error("min_lr above lr: no error")
	}
}
