package ops

import (
	"github.com/pipetrain/pipetrain/internal/vec"
	"github.com/pipetrain/pipetrain/tensor"
)

// Embedding returns the rows of weight [V, D] that ids pick, [len(ids), D]:
// row i is weight[ids[i]], as torch.nn.functional.embedding. An id outside
// [0, V) panics.
func Embedding(weight *tensor.Tensor, ids []int) *tensor.Tensor {
	const op = "Embedding"
	v, d := embeddingTable(op, weight)
	checkIDs(op, ids, v)
	out := tensor.Zeros(weight.DType(), len(ids), d)
	embeddingInto(out, weight, ids, d)
	return out
}

// EmbeddingInto writes Embedding(weight, ids) into dst [len(ids), D], of
// weight's dtype, and returns dst.
func EmbeddingInto(dst, weight *tensor.Tensor, ids []int) *tensor.Tensor {
	const op = "EmbeddingInto"
	v, d := embeddingTable(op, weight)
	checkIDs(op, ids, v)
	if dst.DType() != weight.DType() {
		dtypeOf(op, dst, weight)
	}
	if !dst.HasShape(len(ids), d) {
		fail(op, "dst %v is not [%d %d]: %d ids of weight %v", dst.Shape(), len(ids), d, len(ids), weight.Shape())
	}
	embeddingInto(dst, weight, ids, d)
	return dst
}

// embeddingTable checks that weight is [V, D] and returns V and D.
func embeddingTable(op string, weight *tensor.Tensor) (v, d int) {
	if weight.Dims() != 2 {
		fail(op, "weight %v needs 2 axes [V D]", weight.Shape())
	}
	return weight.Dim(0), weight.Dim(1)
}

// checkIDs panics at the first id outside [0, v), before anything is written.
func checkIDs(op string, ids []int, v int) {
	for i, id := range ids {
		if uint(id) >= uint(v) {
			fail(op, "id %d at %d is outside [0, %d)", id, i, v)
		}
	}
}

func embeddingInto(dst, weight *tensor.Tensor, ids []int, d int) {
	if weight.DType() == tensor.Float32 {
		gatherRows(dst.Data32(), weight.Data32(), ids, d)
	} else {
		gatherRows(dst.Data64(), weight.Data64(), ids, d)
	}
}

func gatherRows[T float](dst, w []T, ids []int, d int) {
	for i, id := range ids {
		copy(dst[i*d:(i+1)*d], w[id*d:(id+1)*d])
	}
}

// EmbeddingBackward returns the gradient of Embedding with respect to its
// weight, [vocab, D]: the rows of grad [len(ids), D] added into row ids[i],
// i = 0, 1, ... in order, from zero.
func EmbeddingBackward(grad *tensor.Tensor, ids []int, vocab int) *tensor.Tensor {
	const op = "EmbeddingBackward"
	if vocab < 0 {
		fail(op, "vocab %d is negative", vocab)
	}
	d := embeddingGrad(op, grad, ids)
	checkIDs(op, ids, vocab)
	gw := tensor.Zeros(grad.DType(), vocab, d)
	embeddingBackwardInto(gw, grad, ids, d)
	return gw
}

// EmbeddingBackwardInto adds the rows of grad [len(ids), D] into gw [V, D],
// row i into gw[ids[i]], in the order i = 0, 1, ...: so a batch cut into
// parts, added part after part, gives the bits of the whole. (Unlike the
// other backward Into forms, the call's sum is not made apart first: a
// row's additions then depend on the cut.)
func EmbeddingBackwardInto(gw, grad *tensor.Tensor, ids []int) {
	const op = "EmbeddingBackwardInto"
	d := embeddingGrad(op, grad, ids)
	if gw.DType() != grad.DType() {
		dtypeOf(op, gw, grad)
	}
	if gw.Dims() != 2 || gw.Dim(1) != d {
		fail(op, "gw %v is not [V %d] for grad %v", gw.Shape(), d, grad.Shape())
	}
	checkIDs(op, ids, gw.Dim(0))
	embeddingBackwardInto(gw, grad, ids, d)
}

// embeddingGrad checks that grad is [len(ids), D] and returns D.
func embeddingGrad(op string, grad *tensor.Tensor, ids []int) int {
	if grad.Dims() != 2 || grad.Dim(0) != len(ids) {
		fail(op, "grad %v is not [%d D]: one row per id", grad.Shape(), len(ids))
	}
	return grad.Dim(1)
}

func embeddingBackwardInto(gw, grad *tensor.Tensor, ids []int, d int) {
	if grad.DType() == tensor.Float32 {
		g, w := grad.Data32(), gw.Data32()
		for i, id := range ids {
			vec.Add(w[id*d:(id+1)*d], g[i*d:(i+1)*d]) // elementwise: the bits of the scalar loop
		}
		return
	}
	g, w := grad.Data64(), gw.Data64()
	for i, id := range ids {
		row := w[id*d : (id+1)*d]
		for j, v := range g[i*d : (i+1)*d] {
			row[j] += v
		}
	}
}
