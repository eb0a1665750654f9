package nn

// Apart makes the transformer block l run its sub-layers apart, each pass
// of its own (no residual added on a product's tiles, the GELU apart from
// the products): the reference a fused block's bits are held to.
func Apart(l Layer) {
	b := l.(*TransformerBlock)
	b.apart = true
	for _, s := range []Layer{b.fc, b.gelu, b.out} {
		Fuse([]Layer{s})
	}
}
