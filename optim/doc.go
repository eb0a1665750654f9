// Package optim provides optimizers, learning-rate schedules and gradient clipping
// for pipetrain, as plain Go over parameter/gradient pairs.
//
// # Overview
//
// A Param pairs a parameter tensor with the gradient accumulated for it. An
// Optimizer reads the gradients and updates the parameters in place:
//
//	opt, err := optim.NewAdamW(optim.DefaultAdamConfig())
//	sched, err := optim.NewSchedule("cosine", 1e-3, 100, 0, 0, totalSteps, 1e-4)
//	for step := 1; step <= totalSteps; step++ {
//		// forward and backward: gradients accumulate into params[i].Grad
//		optim.ClipGradNorm(params, 1.0)
//		if err := opt.Step(params, sched.LR(step)); err != nil { ... }
//		optim.ZeroGrad(params)
//	}
//
// Gradients accumulate and are zeroed explicitly (ZeroGrad), so several micro-batches
// can add into the same Grad before one Step. Step never modifies Grad.
//
// The optimizers are SGD (NewSGD: momentum, Nesterov momentum, weight decay), Adam
// (NewAdam) and AdamW (NewAdamW). Each takes a config struct whose fields are the
// keys of the [optimizer] table; the learning rate is not part of it but is passed to
// every Step, because a Schedule changes it from step to step. Constructors and
// NewSchedule return errors that start with "optim: " and name the offending key, so
// that a config loader can report them unchanged.
//
// An optimizer keeps its per-parameter state (momentum buffers, Adam moments) by
// position in the params slice. The slice passed to Step must therefore list the same
// parameters in the same order at every step; Step returns an error when the count,
// a dtype or a shape changes.
//
// # PyTorch equivalence
//
// The optimizers compute what torch.optim.SGD (dampening 0), torch.optim.Adam and
// torch.optim.AdamW (amsgrad false, maximize false) compute on their single-tensor
// path (foreach=False, fused=False), in the same order of operations, and the same
// element formulas as ATen's CPU kernels for add (self + alpha*other), lerp (with its
// switch to end - (end-self)*(1-weight) for weights >= 0.5), addcmul
// (self + value*t1*t2) and addcdiv (self + value*t1/t2). Python-side scalars (the bias
// corrections 1-beta^t, the step size lr/(1-beta1^t), 1-lr*weight_decay) are computed
// in float64, with beta^t correctly rounded as CPython's pow gives it in all but rare
// cases (Go's math.Pow differs from it for most t), and rounded once to the
// parameter's dtype where they meet a tensor, as PyTorch converts a Python scalar
// to the tensor's dtype.
//
// PyTorch's vectorized CPU kernels may fuse a multiply and an add into one FMA
// instruction (ATen's vectorized add is vec::fmadd, and so is its lerp), and so may
// its compiler in the scalar loops; optim rounds every operation as written. A
// PyTorch run on such a build can therefore differ from optim in the last bit of a
// float32 weight, and the difference can grow over a run. Agreement with PyTorch is
// to rounding, not bit for bit; agreement between pipetrain runs is bit for bit (see
// Determinism).
//
// Schedules follow the [schedule] table. All three warm up linearly: for
// step <= warmup the rate is base*step/warmup, reaching base at step warmup.
// StepDecay is torch.optim.lr_scheduler.StepLR stepped once per optimizer step,
// shifted by the warmup: base*gamma^floor((step-1-warmup)/step_size). Cosine is
// base*0.5*(1+cos(pi*(step-warmup)/(total-warmup))) and stays at 0 from step total
// on. Note that this is one step ahead of CosineAnnealingLR(T_max=total) without
// warmup, which gives step k the rate for (k-1)/T_max: here the last step of the run
// has rate 0 and the first has less than base.
//
// ClipGradNorm is torch.nn.utils.clip_grad_norm_ with norm_type 2: the global L2
// norm over all gradients, clip_coef = max_norm/(norm+1e-6), and the gradients
// multiplied by clip_coef when it is below 1 (by NaN when the norm is NaN, as in
// PyTorch). Unlike PyTorch, which accumulates the norm of float32 gradients in
// float32 in an order that depends on its kernels, GradNorm sums squares in float64
// in a fixed order. ClipGradValue is torch.nn.utils.clip_grad_value_.
//
// # Data types
//
// Parameters may be float32 or float64, and one optimizer may hold both. Each
// parameter is updated in its own dtype, as PyTorch does on the CPU: float32
// parameters get float32 arithmetic (each operation rounded to float32, square roots
// correctly rounded) and float32 state; float64 parameters get float64 throughout.
// A parameter's Grad must have the same dtype and shape as its Value.
//
// # Determinism
//
// Every result is a function of the inputs alone: no goroutines, no maps in the
// arithmetic, no reductions in an order that depends on scheduling. Go permits a
// compiler to fuse x*y + z into an FMA, even across statements, and gc does so on
// arm64, loong64, riscv64, ppc64 and s390x; the fused result is rounded once instead
// of twice. Every product here is wrapped in an explicit conversion (float32(a*b),
// float64(a*b)), which the language specification defines to round and so forbids
// the fusion: the same inputs give the same bits on every architecture.
//
// Schedules are pure functions of the step number, and State and LoadState capture
// everything else an optimizer carries (the step count and the per-parameter
// tensors, deep-copied), so a run resumed from a checkpoint continues bit for bit as
// if it had not stopped.
//
// Clipping over several owners of parameters (actors holding different layers):
// GradNorm is defined as the per-parameter sums of squares (SumSquares) added in
// slice order, so each owner sends its parameters' sums, one actor adds them in the
// global order and computes ClipCoef, and each owner runs ScaleGrads on its own
// gradients. ClipGradNorm is exactly that composition, so the pipelined and the
// sequential trainer agree bit for bit when they list the parameters in the same
// order, and no gradient leaves its owner. An owner whose optimizer is a
// ScaledStepper (SGD, Adam, AdamW) scales, steps and clears its gradients in one
// pass over each parameter, with the same bits.
package optim
