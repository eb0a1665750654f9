package nn

// RunOrder returns the order in which one actor may run consecutive layers
// for the same bits, forward and backward, with less memory traffic: a ReLU
// directly before a max pooling runs after it, on the pooled tensor (a
// quarter of the size for 2×2 windows) instead of the whole one.
//
// The two commute exactly. ReLU keeps NaN and every value above zero, and
// sends the rest to +0, so a window's maximum, and where it is when it is
// above zero or NaN, are the same either way. A window whose maximum is not
// above zero passes no gradient either way: ReLU's backward gives +0 where
// its input is not above zero, wherever the pooling put the gradient.
//
// Sequential runs layers in their own order and so is the reference the
// reordered runs are held to.
func RunOrder(layers []Layer) []int {
	order := make([]int, len(layers))
	for i := range order {
		order[i] = i
	}
	for i := 0; i+1 < len(layers); i++ {
		if isReLU(layers[i]) && isMaxPool(layers[i+1]) {
			order[i], order[i+1] = i+1, i
			i++
		}
	}
	return order
}

func isReLU(l Layer) bool {
	a, ok := l.(*Activation)
	return ok && a.kind == "relu"
}

// isGELU reports whether l is the exact GELU, whose kernels a linear layer
// next to it can run on its tiles (Fuse).
func isGELU(l Layer) bool {
	a, ok := l.(*Activation)
	return ok && a.kind == "gelu" && a.forwardInto != nil
}

func isMaxPool(l Layer) bool {
	if w, ok := l.(*imageLayer); ok {
		l = w.Layer
	}
	_, ok := l.(*MaxPool2d)
	return ok
}
