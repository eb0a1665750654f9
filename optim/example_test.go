package optim_test

import (
	"fmt"
	"log"

	"github.com/pipetrain/pipetrain/optim"
	"github.com/pipetrain/pipetrain/tensor"
)

// Example fits w to a target by minimising 0.5*||w - target||², whose gradient is
// w - target, with SGD and Nesterov momentum, a cosine schedule with warmup and
// gradient-norm clipping: the training step of a real trainer, without the model.
func Example() {
	target := []float32{1, -2}
	w := optim.Param{Name: "w", Value: tensor.Zeros(tensor.Float32, 2), Grad: tensor.Zeros(tensor.Float32, 2)}
	params := []optim.Param{w}

	opt, err := optim.NewSGD(optim.SGDConfig{Momentum: 0.9, Nesterov: true})
	if err != nil {
		log.Fatal(err)
	}
	const steps = 60
	sched, err := optim.NewSchedule("cosine", 0.1, 5, 0, 0, steps, 0)
	if err != nil {
		log.Fatal(err)
	}
	for step := 1; step <= steps; step++ {
		// Backward: gradients accumulate into Grad.
		wv, g := w.Value.Data32(), w.Grad.Data32()
		for i := range g {
			g[i] += wv[i] - target[i]
		}
		norm := optim.ClipGradNorm(params, 1)
		lr := sched.LR(step)
		if err := opt.Step(params, lr); err != nil {
			log.Fatal(err)
		}
		optim.ZeroGrad(params)
		if step%20 == 0 || step == 1 {
			fmt.Printf("step %2d  lr %.4f  grad_norm %.4f  w %.4f\n", step, lr, norm, w.Value.Float64s())
		}
	}
	st := opt.State()
	fmt.Println(st.Kind, st.Step, len(st.Tensors), "state tensor")
	// Output:
	// step  1  lr 0.0200  grad_norm 2.2361  w [0.0170 -0.0340]
	// step 20  lr 0.0827  grad_norm 0.1711  w [0.8935 -1.7870]
	// step 40  lr 0.0292  grad_norm 0.0592  w [1.0232 -2.0464]
	// step 60  lr 0.0000  grad_norm 0.0035  w [1.0016 -2.0031]
	// sgd 60 1 state tensor
}
