package nn

import (
	"fmt"

	"github.com/pipetrain/pipetrain/tensor"
)

// ShareParams makes dst, a layer built from the same spec as src, a replica
// of it: dst's parameters (values and gradients) and buffers are pointed at
// src's storage, and dst keeps only its caches and scratch of its own. Its
// own parameter storage is dropped. A pipeline's replicas run such layers:
// one copy of the weights, read by every replica, and one gradient, which
// the replicas add into one after another.
func ShareParams(dst, src Layer) error {
	if dst.Kind() != src.Kind() {
		return fmt.Errorf("nn: a %s layer cannot share the parameters of a %s layer", dst.Kind(), src.Kind())
	}
	dp, sp := dst.Params(), src.Params()
	db, sb := BuffersOf(dst), BuffersOf(src)
	if len(dp) != len(sp) || len(db) != len(sb) {
		return fmt.Errorf("nn: %s layers with %d and %d parameters cannot share them", dst.Kind(), len(dp), len(sp))
	}
	var pairs [][2]*tensor.Tensor
	for i := range dp {
		pairs = append(pairs, [2]*tensor.Tensor{dp[i].Value, sp[i].Value}, [2]*tensor.Tensor{dp[i].Grad, sp[i].Grad})
	}
	for i := range db {
		pairs = append(pairs, [2]*tensor.Tensor{db[i].Value, sb[i].Value})
	}
	for _, p := range pairs {
		if p[0].DType() != p[1].DType() || !p[0].SameShape(p[1]) {
			return fmt.Errorf("nn: %s layer: parameter %v %v cannot share %v %v", dst.Kind(), p[0].DType(), p[0].Shape(), p[1].DType(), p[1].Shape())
		}
	}
	for _, p := range pairs {
		p[0].SetView(p[1], 0, p[1].Shape()...)
	}
	return nil
}
