package ops

import (
	"github.com/pipetrain/pipetrain/internal/gemm"
	"github.com/pipetrain/pipetrain/tensor"
)

// mmPlan is the shape bookkeeping of one MatMul, shared by forward and backward.
type mmPlan struct {
	m, k, n          int
	aBatch, bBatch   []int // batch shapes of a and b after 1-D promotion
	batch            []int // broadcast batch shape
	ia, ib           []int // batch index of a and b for each output batch
	out              []int // result shape with promoted axes dropped
	aShape, bShape   []int
	aVector, bVector bool
}

func planMatMul(op string, a, b *tensor.Tensor) *mmPlan {
	as, bs := a.Shape(), b.Shape()
	if len(as) == 0 || len(bs) == 0 {
		fail(op, "shapes %v and %v do not fit: both need at least one axis", as, bs)
	}
	p := &mmPlan{aShape: as, bShape: bs}
	pa, pb := as, bs
	if len(as) == 1 {
		p.aVector = true
		pa = []int{1, as[0]}
	}
	if len(bs) == 1 {
		p.bVector = true
		pb = []int{bs[0], 1}
	}
	p.m, p.k = pa[len(pa)-2], pa[len(pa)-1]
	if pb[len(pb)-2] != p.k {
		fail(op, "shapes %v and %v do not fit", as, bs)
	}
	p.n = pb[len(pb)-1]
	p.aBatch, p.bBatch = pa[:len(pa)-2], pb[:len(pb)-2]
	batch, ok := tensor.BroadcastShapes(p.aBatch, p.bBatch)
	if !ok {
		fail(op, "shapes %v and %v do not fit: batch axes do not broadcast", as, bs)
	}
	p.batch = batch
	p.ia = offsets(batch, tensor.BroadcastStrides(p.aBatch, batch))
	p.ib = offsets(batch, tensor.BroadcastStrides(p.bBatch, batch))
	p.out = append([]int{}, batch...)
	if !p.aVector {
		p.out = append(p.out, p.m)
	}
	if !p.bVector {
		p.out = append(p.out, p.n)
	}
	return p
}

// MatMul returns the matrix product of a and b with torch.matmul's rules: 1-D@1-D
// is a dot product (0-D), a 1-D operand is promoted to a row (left) or column
// (right) and the promoted axis dropped, and leading batch axes broadcast.
func MatMul(a, b *tensor.Tensor) *tensor.Tensor {
	dtypeOf("MatMul", a, b)
	p := planMatMul("MatMul", a, b)
	return matMulInto(tensor.Zeros(a.DType(), p.out...), a, b, p)
}

// MatMulInto writes MatMul(a, b) into dst, which must have the product's
// dtype and shape and may not overlap a or b, and returns dst: numpy's
// matmul(a, b, out=dst). Every element of dst is written.
func MatMulInto(dst, a, b *tensor.Tensor) *tensor.Tensor {
	dtypeOf("MatMulInto", dst, a, b)
	p := planMatMul("MatMulInto", a, b)
	if !dst.HasShape(p.out...) {
		fail("MatMulInto", "destination shape %v is not the product shape %v of %v and %v", dst.Shape(), p.out, p.aShape, p.bShape)
	}
	return matMulInto(dst, a, b, p)
}

func matMulInto(out, a, b *tensor.Tensor, p *mmPlan) *tensor.Tensor {
	mk, kn, mn := p.m*p.k, p.k*p.n, p.m*p.n
	for bi := range p.ia {
		ao, bo, co := p.ia[bi]*mk, p.ib[bi]*kn, bi*mn
		if a.DType() == tensor.Float32 {
			gemm.Sgemm(false, false, p.m, p.n, p.k, 1, a.Data32()[ao:], p.k, b.Data32()[bo:], p.n, 0, out.Data32()[co:], p.n)
		} else {
			gemm.Dgemm(false, false, p.m, p.n, p.k, 1, a.Data64()[ao:], p.k, b.Data64()[bo:], p.n, 0, out.Data64()[co:], p.n)
		}
	}
	return out
}

// MatMulBackward returns grad@bᵀ and aᵀ@grad, each summed over broadcast batch
// axes to its input's shape. Transposes are folded into the GEMM, never copied.
func MatMulBackward(grad, a, b *tensor.Tensor) (ga, gb *tensor.Tensor) {
	dtypeOf("MatMulBackward", grad, a, b)
	p := planMatMul("MatMulBackward", a, b)
	if !tensor.EqualShapes(grad.Shape(), p.out) {
		fail("MatMulBackward", "grad shape %v does not match the product shape %v of %v and %v", grad.Shape(), p.out, p.aShape, p.bShape)
	}
	ga = tensor.Zeros(a.DType(), p.aShape...)
	gb = tensor.Zeros(b.DType(), p.bShape...)
	mk, kn, mn := p.m*p.k, p.k*p.n, p.m*p.n
	for bi := range p.ia {
		ao, bo, co := p.ia[bi]*mk, p.ib[bi]*kn, bi*mn
		if a.DType() == tensor.Float32 {
			g, x, y := grad.Data32()[co:], a.Data32()[ao:], b.Data32()[bo:]
			gemm.Sgemm(false, true, p.m, p.k, p.n, 1, g, p.n, y, p.n, 1, ga.Data32()[ao:], p.k)
			gemm.Sgemm(true, false, p.k, p.n, p.m, 1, x, p.k, g, p.n, 1, gb.Data32()[bo:], p.n)
		} else {
			g, x, y := grad.Data64()[co:], a.Data64()[ao:], b.Data64()[bo:]
			gemm.Dgemm(false, true, p.m, p.k, p.n, 1, g, p.n, y, p.n, 1, ga.Data64()[ao:], p.k)
			gemm.Dgemm(true, false, p.k, p.n, p.m, 1, x, p.k, g, p.n, 1, gb.Data64()[bo:], p.n)
		}
	}
	return ga, gb
}
