// Package ops provides pipetrain's stateless kernels: every forward operation,
// its backward, and the losses, with PyTorch's semantics.
//
// # Overview
//
// Each forward op takes tensors and returns a new tensor; its backward takes the
// gradient of the output (and whatever the forward saw) and returns one gradient
// per differentiable input, in order:
//
//	y := ops.MatMul(x, w)
//	gx, gw := ops.MatMulBackward(gy, x, w)
//
// Ops never modify their inputs. Results have the dtype of the inputs; float32
// element-wise results are computed in float64 and rounded once, and reductions
// and losses accumulate in float64, so float32 results are at least as accurate
// as PyTorch's. Two float32 kernels of a transformer's hot path are vectorised
// instead, as PyTorch's are: the exact GELU and its backward, within 3 and 4
// float32 steps of the exact values, and the attention's exp, within one.
//
// Some backwards take the forward's output instead of its input, because that is
// cheaper and what PyTorch saves: ExpBackward, SqrtBackward, SigmoidBackward,
// TanhBackward, SoftmaxBackward and LogSoftmaxBackward.
//
// # Broadcasting
//
// Binary element-wise ops (Add, Sub, Mul, Div, Pow, PReLU, MSE) broadcast with
// NumPy's rules (see tensor.BroadcastShapes). The gradient of a broadcast input is
// summed back to that input's shape, over prepended axes and stretched size-1 axes
// alike. MatMul follows torch.matmul: 1-D operands are promoted and the promoted
// axis dropped, and leading batch axes broadcast.
//
// # Reductions
//
// Sum, Mean, Max and Min reduce over the listed axes (negative axes count from
// the end; no axes means all axes) and drop them. Mean over no elements is NaN.
// MaxBackward and MinBackward share the gradient equally among ties, as
// torch.amax and torch.amin do. A 0-D input accepts axis 0 or -1, as in PyTorch.
//
// # Convolution
//
// Conv2d convolves (cross-correlates, as torch.nn.functional.conv2d) x
// [N, C, H, W] with filters w [F, C, KH, KW] and an optional bias b [F], with one
// stride and one padding for both axes, giving [N, F, OH, OW] with
// OH = ⌊(H+2·padding−KH)/stride⌋+1 and likewise OW: rows and columns no window
// reaches are left out. Conv2dBackward returns gx, gw and gb (always [F], the sum
// of grad over N, OH and OW). A kernel larger than the padded input, a stride
// below 1 or a negative padding panics. gw adds the samples' contributions in
// sample order, so its bits do not depend on the thread count.
//
// # Edge semantics
//
// ReLUBackward and AbsBackward give 0 at x = 0; ClipBackward passes the gradient
// at the bounds. Softmax and LogSoftmax work on any axis and shift by the lane's
// maximum, and their backwards are O(n). There are no hidden epsilons: LogBackward
// at 0 is +Inf, as IEEE arithmetic gives. BCE clamps its logs at -100 and
// BCEBackward is the true derivative (p-y)/(p(1-p)), with PyTorch's floor of
// 1e-12 on the denominator. Losses take the mean over all elements and return a
// 0-D tensor; their backward takes that 0-D gradient.
//
// For training in micro-batches, CrossEntropySumInto, MSESumInto and
// BCEWithLogitsSumInto add a part's losses, one row (or element) at a time in
// order, to a float64 sum the caller carries from part to part, and write the
// gradient times a scale the caller fixes for the whole mini-batch (1/N): so
// the loss and gradients of a mini-batch do not depend on how it is cut.
// CrossEntropySumInto spreads its rows over a thread budget, keeping each
// row's loss apart until they are added in order: nor do they depend on it.
//
// # Pooling and normalisation
//
// MaxPool2d and AvgPool2d take [N C H W] inputs, square windows of side kernel
// stepping by stride, and no padding: OH = ⌊(H−kernel)/stride⌋+1, rows and
// columns no window reaches being left out. A kernel larger than a non-empty H
// or W panics; an empty batch or spatial axis gives an empty output.
// MaxPool2dBackward sends each window's gradient to its first maximum in
// row-major order, or to its last NaN as PyTorch's CPU kernel does (unlike
// MaxBackward, ties are not shared); AvgPool2dBackward spreads grad/kernel² over the window. Overlapping
// windows accumulate.
//
// BatchNorm is training-mode batch normalisation of [N C ...] inputs over every
// axis but 1, with the biased variance; it returns mean and invstd =
// 1/sqrt(var+eps) per channel, accumulated in float64 in a fixed order, for
// BatchNormBackward to take. A constant channel gives beta and finite
// gradients when eps > 0; with eps = 0 its invstd is 0, as in PyTorch. A
// channel of no elements (N·H·W = 0) has NaN statistics and gamma and beta
// gradients of 0.
//
// LayerNorm normalises over the last axis of x (any rank ≥ 1; weight and
// bias [F]), as torch.nn.functional.layer_norm, with the biased variance. It
// returns mean and rstd = 1/sqrt(var+eps) per row (x's shape without its
// last axis), summed in float64 in row order; out is computed in float64 and
// rounded once. LayerNormBackward recomputes x̂ from that mean and rstd, as
// PyTorch does. It sums the weight and bias gradients in float64 over each
// chunk of LayerNormChunkRows (32) rows, counted from the call's first row,
// and adds the chunks in order, so a batch cut at multiples of 32 rows gives
// the same bits. With eps = 0 a constant row has rstd +Inf and a NaN output,
// as in PyTorch.
//
// # Embeddings and attention
//
// Embedding picks rows of a weight [V, D] by token id, as
// torch.nn.functional.embedding; an id outside [0, V) panics before anything
// is written. EmbeddingBackward adds grad's rows into the rows their ids name
// in the order of the ids, and EmbeddingBackwardInto adds them straight into
// the caller's gradient in that order (not a sum made apart first, unlike
// the other backward Into forms): so a mini-batch cut into micro-batches
// gives the bits of the whole.
//
// CausalSelfAttention is the attention of nanoGPT's CausalSelfAttention
// between c_attn and c_proj: qkv [B, T, 3D] holds q, k and v, each split
// into heads of D/heads columns; probs [B, heads, T, T] is the causal softmax
// of q·kᵀ/√(D/heads), masked entries exactly 0, and out [B, T, D] is probs·v
// with the heads side by side. Each (batch, head) pair is computed alone,
// in panels of 32 rows on and below the diagonal (rows [i0, i0+32) need
// keys [0, i0+32) only), its products on the GEMM with q, k and v read in
// place: the bits depend neither on the thread budget nor on the rest of
// the batch. The softmax subtracts the row's maximum and sums in float64.
//
// Memory linear in T, as FlashAttention-2 but in row panels, so that the
// forward keeps its bits: CausalSelfAttentionStatsInto keeps, instead of
// the probabilities, each row's maximum and inverse sum in stats
// [B, heads, T, 2] (float64, so that both are exact), and
// CausalSelfAttentionBackwardStatsInto recomputes each panel of
// probabilities from q, k and them in one pass with the forward's bits,
// then dQ for the panel's rows and the panel's share of dK and dV, added
// into keys [0, i0+32) in the panels' order. The scratch is one or two
// panels of 32 rows by T per part of a call (AttentionWork), never a
// [T, T] matrix. CausalSelfAttentionBackward given kept probs, or nil
// probs (recomputing the whole softmax), runs the same panels with the same
// bits, and CausalSelfAttentionRecomputeInto also writes out.
//
// # Destinations
//
// For a training step that allocates nothing, the kernels of a layer's path
// have Into forms that write into tensors the caller keeps: ReLUInto,
// MatMulInto, Conv2dInto, MaxPool2dArgInto, AvgPool2dInto, BatchNormInto,
// LayerNormInto, EmbeddingInto, CausalSelfAttentionInto and their backwards. A backward Into
// writes the input gradient (nil skips it) and adds the parameter gradients,
// each summed over its call from zero first, into the destinations, as a layer
// accumulates them. Conv2dInto and Conv2dBackwardInto keep their im2col
// matrices in a ConvWork the caller owns, and the layer norm's and the
// attention's Into forms their scratch and thread budget in a LayerNormWork
// and an AttentionWork. ReLUInto, GELUInto, MaxPool2dArgInto and their
// backwards take a thread budget of their own. The bits never
// depend on the thread budget. The allocating forms are these with new
// destinations: the same bits.
//
// # Panics
//
// Mixing dtypes, shapes that do not fit, an axis out of range, or a label outside
// [0, C) is a programming error: the op panics with an error value whose text
// names the op and every shape involved, for example
//
//	ops.MatMul: shapes [3 4] and [5 2] do not fit
//
// No op returns an error, and none fails with an index out of range or returns a
// silently wrong result.
//
// # Matrix multiplication
//
// MatMul and MatMulBackward call one internal GEMM entry point with transpose
// flags, so transposes are never materialised and the kernel can be replaced
// without touching this package. Conv2d and Conv2dBackward run on the same GEMM:
// each sample is unfolded (im2col) into a [C·KH·KW, OH·OW] matrix, and gx is
// folded back (col2im) from wᵀ·grad.
package ops
