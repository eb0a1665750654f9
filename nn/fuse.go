package nn

// Fuse links the layers of a run that follow one another (a stage's, in the
// order they run, RunOrder) so that a linear layer and a ReLU or an exact
// GELU next to it take one pass over their tensors instead of two:
//
//   - a linear layer followed by a ReLU applies it to its output as the
//     product completes each block, while the block is in cache and on the
//     core that computed it (gemm.Post), and the ReLU passes its input on;
//   - a linear layer after a ReLU keeps its input gradient only where its
//     input is above zero, the same way, and the ReLU passes the gradient on;
//   - a linear layer followed by a GELU makes the GELU's output from each
//     block beside its own, which the GELU returns; it still keeps its input,
//     the linear layer's output;
//   - a linear layer after a GELU multiplies its input gradient by GELU's
//     derivative at the GELU's kept input, and the GELU passes it on.
//
// The bits are those of the layers run apart: the product's sums are
// complete before the activation sees them, the element-wise kernels are
// the activations' own, and a ReLU's output is above zero exactly where its
// input is, so a mask by either is the same. The activations still keep
// what they would for each pass. Layers so linked must be run in the order
// given, together. Fuse undoes the links an earlier call made between these
// layers; Sequential, the reference, runs them apart.
func Fuse(layers []Layer) {
	for _, l := range layers {
		switch l := l.(type) {
		case *Linear:
			l.fused = linearFused{}
		case *Activation:
			l.passIn, l.passGrad, l.pending = false, false, nil
		}
	}
	for i := 0; i+1 < len(layers); i++ {
		if lin, ok := layers[i].(*Linear); ok && isReLU(layers[i+1]) {
			lin.fused.reluOut = true
			layers[i+1].(*Activation).passIn = true
		}
		if lin, ok := layers[i+1].(*Linear); ok && isReLU(layers[i]) {
			lin.fused.maskIn = true
			layers[i].(*Activation).passGrad = true
		}
		if lin, ok := layers[i].(*Linear); ok && isGELU(layers[i+1]) {
			lin.fused.geluOut = layers[i+1].(*Activation)
		}
		if lin, ok := layers[i+1].(*Linear); ok && isGELU(layers[i]) {
			lin.fused.geluIn = layers[i].(*Activation)
			lin.fused.geluIn.passGrad = true
		}
	}
}
