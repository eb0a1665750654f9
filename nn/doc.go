// Package nn provides pipetrain's layers: plain Go values that own their
// parameters and gradients, the weight initializers, the losses, and
// Sequential, the single-goroutine reference trainer that the actor pipeline
// must reproduce bit for bit.
//
// # Overview
//
// A model is a list of layers and a loss. Layers are built by constructors
// (NewLinear, NewReLU, NewLeakyReLU, NewPReLU, NewSigmoid, NewTanh, NewGELU,
// NewSoftmax, NewDropout, NewLayerNorm, and the image layers NewConv2d,
// NewMaxPool2d, NewAvgPool2d, NewBatchNorm, NewFlatten) and compute with the
// stateless kernels of package ops, in the dtype of their parameters, float32
// or float64.
// Numerics follow PyTorch's: the same layouts, the same initializer formulas,
// the same loss reductions.
//
//	rng := rand.New(rand.NewPCG(seed, 1))
//	l1, _ := nn.NewLinear(tensor.Float32, 784, 128, nn.HeUniform, rng)
//	l2, _ := nn.NewLinear(tensor.Float32, 128, 10, nn.XavierUniform, rng)
//	model := &nn.Sequential{Loss: nn.CrossEntropy, Layers: []nn.Layer{l1, nn.NewReLU(), l2}}
//
// # The Layer contract
//
// Every layer implements Layer. Forward and Backward are keyed by a Pass, which
// names the optimizer step, the micro-batch within it, the index of its first
// row in the mini-batch, and whether the model is training:
//
//	y := l.Forward(nn.Pass{Step: s, Micro: m, Row: lo, Train: true}, x)
//	dx := l.Backward(nn.Pass{Step: s, Micro: m, Row: lo, Train: true}, dy, true)
//
// Micro-batch caching. A training Forward caches what Backward needs under
// p.Micro, so several micro-batches may be in flight at once (GPipe runs every
// forward before any backward; 1F1B interleaves them). Backward of a
// micro-batch consumes its cache, in any order; InFlight reports how many are
// cached and Reset drops them all, as after a failed step. A Backward without
// its Forward is a programming error and panics with an error that names the
// layer, the micro-batch and the step. An evaluation Forward (Train false)
// caches nothing and turns dropout off.
//
// Accumulating gradients. Backward adds the parameter gradients to each
// Param's Grad (llm.c's dinp +=, micrograd's +=) and returns dX, or nil when
// needDX is false, as for the first layer. Gradients are never cleared
// implicitly: the trainer calls ZeroGrad after the optimizer has read them.
// This is what lets micro-batch gradients sum to the mini-batch gradient.
//
// Ownership. Forward and Backward never write to their arguments and return
// new tensors, which belong to the caller. A layer may keep a reference to the
// x it was given until the matching Backward, so the caller must not write to
// x in between. Params returns the layer's own tensors, not copies, the same
// ones for the layer's life: an optimizer updates Value in place.
//
// Reused outputs. A Pass may carry an Arena, which lends the tensors layers
// return (Linear's outputs and input gradients, ReLU's, the image layers',
// the cross-entropy gradient of LossSum.Add) and the headers through which
// image layers see rows as images, instead of allocating them; Conv2d keeps
// its im2col scratch (ops.ConvWork) and MaxPool2d its indices from step to
// step. The Arena's owner resets it once nothing lent since the last reset
// is read any more, and the same sequence of requests then gets the same
// tensors back: a training step in the pipeline allocates nothing. Without
// an Arena every tensor is new.
//
//	a := new(nn.Arena)
//	for step := 1; ; step++ {
//		a.Reset() // the previous step's outputs are no longer read
//		y := l.Forward(nn.Pass{Step: step, Train: true, Arena: a}, x)
//		...
//	}
//
// Recomputation. A TransformerBlock's Recompute (Spec.Recompute) trades
// compute for the memory a micro-batch holds between its forward and its
// backward. Above a context of 256 no mode keeps the attention
// probabilities [N, heads, T, T]: the forward keeps each row's maximum and
// inverse sum (ops.CausalSelfAttentionStatsInto) and the backward
// recomputes the probabilities from them, 32 rows at a time, so memory
// grows linearly with T; shorter contexts keep them, which is faster.
// RecomputeAttention keeps neither the probabilities, those statistics nor the
// attention's output [N, T, D]: the backward recomputes both from the kept
// q, k and v (ops.CausalSelfAttentionRecomputeInto). RecomputeBlocks
// keeps only the block's input: its forward runs in Pass.Scratch (an arena
// the driver shares among the layers it runs one at a time, so it holds one
// block's activations, not one per block and micro-batch), lends only the
// output from Pass.Arena and drops its sub-layers' caches; the backward runs
// the forward again in the scratch with the same Pass, so dropout draws the
// same masks, then the backward. Both give RecomputeNone's bits.
//
// Weights versions. A Pass may name the version of the weights
// (Pass.Weights); the driver changes it whenever they may have changed, as
// the pipeline's stages do at every update and restore and Sequential at
// every TrainStep and Evaluate. Linear then packs its weights for the GEMM
// once per version, for every micro-batch of a step (Pass.Micros), instead of
// once per call; a Pass without a version (0) or alone with its version
// keeps nothing.
//
// One goroutine per layer. A layer is not safe for concurrent use. In the
// pipeline one actor owns and drives each layer; in Sequential one goroutine
// drives them all.
//
// # Models as data
//
// A Spec describes a layer as plain data (its type and the keys of its
// type), and Build makes a model's layers, or any range of them, from specs,
// an input width and a seed: layer i draws from the streams of (seed, i), so
// a pipeline stage, on this host or another, can build only its own layers
// and get the weights the whole model would have. One table lists the layer
// types, the keys each takes and how to build it (LayerTypes, LayerKeys):
// adding a type is adding a row.
//
// # Layouts and initializers
//
// Linear computes y = x·Wᵀ + b for x of shape [N, In], with W in PyTorch's
// layout [Out, In] and b of shape [Out], so checkpoints read the same in other
// tools. Its weights are drawn by an Init from an explicit *rand.Rand; biases
// start at zero. With fan_in = In and fan_out = Out, as torch.nn.init computes
// them for a [Out, In] weight:
//
//	xavier_uniform  U(-a, a), a = sqrt(6/(fan_in+fan_out))   (gain 1)
//	xavier_normal   N(0, σ²), σ = sqrt(2/(fan_in+fan_out))   (gain 1)
//	he_uniform      U(-a, a), a = sqrt(6/fan_in)             (kaiming_uniform_, ReLU gain sqrt(2))
//	he_normal       N(0, σ²), σ = sqrt(2/fan_in)             (kaiming_normal_, ReLU gain sqrt(2))
//
// An unknown name is an error, not a default. PReLU has one shared slope, as
// torch.nn.PReLU(num_parameters=1), initialised to 0.25. LayerNorm normalises
// each row of [N, F] with the biased variance and eps = 1e-5, as
// torch.nn.LayerNorm, computes its statistics in float64, and has a gain
// (init 1) and a bias (init 0), named "weight" and "bias" as in PyTorch. GELU
// has the exact erf form and PyTorch's tanh approximation; Softmax works over
// the last axis.
//
// # Image layers
//
// Images are NCHW, [N, C, H, W], as in PyTorch. Conv2d is torch.nn.Conv2d
// with one stride and one padding for both axes, its weight [F, C, KH, KW]
// and bias [F] named "weight" and "bias"; an Init draws the weight with
// fan_in = C·KH·KW and fan_out = F·KH·KW, as torch.nn.init, and TorchDefault
// the bias too. MaxPool2d and AvgPool2d pool Kernel×Kernel windows with no
// padding, the stride defaulting to the kernel; a max pooling's gradient goes
// to each window's first maximum. Flatten turns [N, d1, ...] into
// [N, d1·...] for a Linear layer. Each has OutShape, the output of a sample
// shape, to size the next layer.
//
// BatchNorm is torch.nn.BatchNorm2d (and BatchNorm1d on [N, C]): gamma
// ("weight", init 1) and beta ("bias", init 0), eps 1e-5, momentum 0.1. A
// training forward normalises with its micro-batch's statistics and updates
// the running mean and the unbiased running variance once; an evaluation
// forward normalises with them. They are not parameters: Buffers lists them,
// for checkpoints, which do not save them yet.
//
// # Dropout
//
// Dropout is inverted dropout: while training it zeroes each element with
// probability P and scales the others by 1/(1-P), so the expected output equals
// the input; evaluation passes the input through. P must lie in [0, 1).
//
// The mask of each row is drawn from its own PCG stream, keyed by the layer's
// Seed, its Index in the model, the step and the row's index in the
// mini-batch (Pass.Row, the micro-batch's first row, plus the row's index in
// it), and never by the micro-batch or the order in which micro-batches
// arrive. The pipeline, under any schedule and split, and Sequential
// therefore draw the same masks, and a repeated Forward of the same Pass
// draws the same mask (which is what lets a finite-difference check run
// through dropout). The layer reseeds its one generator for each row, so a
// pass allocates nothing.
//
// # Micro-batches that do not change the results
//
// A step's losses and gradients are the same bits whatever the number of
// micro-batches, because every sum over the rows of a mini-batch is done the
// same way for every split:
//
//   - SplitRows cuts a mini-batch of n rows into min(m, ceil(n/ChunkRows))
//     contiguous micro-batches of whole ChunkRows-row chunks (32 rows; the
//     last chunk may be short), as equal as chunks allow, the larger first.
//     Micro-batch boundaries are chunk boundaries. Every trainer uses it, so
//     every trainer sees the same micro-batches.
//   - Linear's dW += dYᵀ·X sums each 32-row chunk from zero and adds the
//     chunks into GW in order (gemm.SgemmChunked), so one call over 256 rows
//     and four over 64 give the same bits. db is added one row at a time, in
//     row order. PReLU's slope and LayerNorm's gain and bias sum each chunk
//     in float64 and add it into Grad in order. Conv2d sums its weight and
//     bias gradients over each chunk of ChunkRows samples and adds the chunks
//     in order.
//   - A LossSum adds every row's loss to one float64 sum carried across the
//     micro-batches (the mean is sum/n at the end, rounded to float32 for a
//     float32 model) and scales each gradient element by 1/n of the
//     mini-batch directly (1/(n·width) for mse and bce_with_logits). mse and
//     bce_with_logits accept class labels in place of values and use their
//     one-hot encoding.
//   - Dropout is keyed by row, as above.
//
// BatchNorm is the exception: each micro-batch is normalised by its own
// statistics, as in PyTorch with gradient accumulation, so its results depend
// on the split.
//
// The gradients the layers accumulate over the micro-batches, in micro-batch
// order, are then those of the mini-batch mean loss. Loss.Compute gives the
// mean loss and gradient of one batch seen whole, for evaluation.
//
// # Sequential
//
// Sequential is the reference trainer. TrainStep runs one mini-batch as
// micro-batches on one goroutine, forward then backward for each in turn, in
// micro-batch order, and returns the mini-batch mean loss; the gradients of
// the mini-batch mean are added to every parameter's Grad. The caller applies
// the optimizer and calls ZeroGrad. With the same seeds and data order it is
// deterministic to the bit, whatever the split, and the actor pipeline must
// match it: that
// is the test that catches races, stale weights and lost messages.
//
// Sequential runs the layers in their own order. A pipeline stage, and a
// model's predictions, run them in RunOrder: a ReLU directly before a max
// pooling goes after it, on the pooled tensor. The two orders give the same
// bits, forward and backward, so Sequential is the reference for both. A
// stage also links each linear layer to a ReLU next to it (Fuse), which the
// linear layer's product then does as it completes, with the same bits.
//
// TrainStep checks every layer's output and input gradient: the first NaN or
// infinity stops the step with a *NonFiniteError naming the layer, its kind
// and the direction, after dropping every cached micro-batch. Gradients that
// earlier micro-batches of the failed step accumulated are left for the caller
// to clear with ZeroGrad. Evaluate runs the model in evaluation mode in chunks
// and returns the mean loss and, with labels, the accuracy.
//
// # Panics and errors
//
// Constructors and initializers that validate configuration (NewLinear,
// NewDropout, NewConv2d, the poolings', NewBatchNorm, Init.Fill) return
// errors, and so do the image layers' OutShape for a sample that does not fit.
// Misuse that is a programming error, such as an input whose shape does not
// fit a layer or a backward without its forward, panics with an error value
// whose text names the function and the shapes involved, as in packages
// tensor and ops.
package nn
