package gemm

import "unsafe"

// goKernels is the portable micro-kernel: 4×4 tiles in scalar Go, with the same
// packing, blocking and threading as the assembly kernels.
var goKernels = kernelSet{
	name:  "go",
	mr:    4,
	vec:   4,
	kerns: []microKernel{kern4x4Go},
	kc:    256,
	mc:    256,
	nc:    512,

	copyPanel:  copyPanelGo,
	transPanel: transPanelGo,
}

// kern4x4Go is the pure-Go micro-kernel: acc = Σ_p a[p]ᵀ b[p] over k packed steps
// of 4 values each, then C = alpha*acc + beta*C (C not read when beta is 0).
// It makes two passes over k, rows 0-1 then rows 2-3, so that 8 accumulators
// and the 6 operands of a step fit in amd64's registers without spilling.
func kern4x4Go(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	as := unsafe.Slice(a, 4*k)
	bs := unsafe.Slice(b, 4*k)
	cs := unsafe.Slice(c, 3*ldc+4)
	for r := 0; r < 4; r += 2 {
		var c00, c01, c02, c03, c10, c11, c12, c13 float32
		ap, bp := as[r:], bs
		for len(ap) >= 2 && len(bp) >= 4 {
			a0, a1 := ap[0], ap[1]
			b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
			c00 += a0 * b0
			c01 += a0 * b1
			c02 += a0 * b2
			c03 += a0 * b3
			c10 += a1 * b0
			c11 += a1 * b1
			c12 += a1 * b2
			c13 += a1 * b3
			if len(ap) < 4 {
				break
			}
			ap, bp = ap[4:], bp[4:]
		}
		storeRow4(cs[r*ldc:r*ldc+4:r*ldc+4], c00, c01, c02, c03, alpha, beta)
		storeRow4(cs[(r+1)*ldc:(r+1)*ldc+4:(r+1)*ldc+4], c10, c11, c12, c13, alpha, beta)
	}
}

func storeRow4(c []float32, x0, x1, x2, x3, alpha, beta float32) {
	c = c[:4]
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*x0, alpha*x1, alpha*x2, alpha*x3
		return
	}
	c[0] = alpha*x0 + beta*c[0]
	c[1] = alpha*x1 + beta*c[1]
	c[2] = alpha*x2 + beta*c[2]
	c[3] = alpha*x3 + beta*c[3]
}
