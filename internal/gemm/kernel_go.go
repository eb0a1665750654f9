package gemm

import (
	"math"
	"sync"
	"unsafe"
)

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

// goBF16Kernels is the portable bf16 set: SgemmBF16's steps in scalar Go,
// with the k blocks of the assembly set, so that both give the same bits.
var goBF16Kernels = kernelSet{
	name:  "go-bf16",
	mr:    4,
	vec:   4,
	kerns: []microKernel{kern4x4BF16Go},
	kc:    bf16KC,
	mc:    256,
	nc:    512,
	pairs: true,

	copyPanel:  copyPairsGo,
	transPanel: transPairsGo,
}

// kern4x4BF16Go is the pure-Go bf16 micro-kernel: over (k+1)/2 packed pair
// steps of 4 lanes each, acc = dotBF16(acc, a, b) per element, then
// C = alpha*acc, plus beta*C unless beta is 0, each product rounded apart
// (the conversions keep the compiler from fusing them), as kern8x48BF16.
func kern4x4BF16Go(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	kh := (k + 1) / 2
	as := unsafe.Slice((*uint32)(unsafe.Pointer(a)), 4*kh)
	bs := unsafe.Slice((*uint32)(unsafe.Pointer(b)), 4*kh)
	cs := unsafe.Slice(c, 3*ldc+4)
	var acc [4][4]float32
	for q := range kh {
		ap, bp := as[4*q:4*q+4], bs[4*q:4*q+4]
		for r, x := range ap {
			for j, y := range bp {
				acc[r][j] = dotBF16(acc[r][j], x, y)
			}
		}
	}
	for r := range 4 {
		row := cs[r*ldc : r*ldc+4]
		for j := range row {
			v := float32(alpha * acc[r][j])
			if beta != 0 {
				v += float32(beta * row[j])
			}
			row[j] = v
		}
	}
}

// words views a float32 buffer as the 32-bit lanes of packed bf16 pairs.
func words(s []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// copyPairsGo is copyPanel in bf16 pairs: lane q*pw+c holds src[2q*lds+c]
// and src[(2q+1)*lds+c] (zero past kc) for c < nn; lanes nn..pw-1 are 0.
func copyPairsGo(dst, src []float32, lds, kc, nn, pw int) {
	d := words(dst)
	for p := 0; p < kc; p += 2 {
		row := d[p/2*pw : p/2*pw+pw]
		lo := src[p*lds : p*lds+nn]
		for c, x := range lo {
			var y float32
			if p+1 < kc {
				y = src[(p+1)*lds+c]
			}
			row[c] = pairBF16(x, y)
		}
		clear(row[nn:])
	}
}

// transPairsGo is transPanel in bf16 pairs: lane q*pw+c holds src[c*lds+2q]
// and src[c*lds+2q+1] (zero past kc) for c < nn; lanes nn..pw-1 are 0.
func transPairsGo(dst, src []float32, lds, kc, nn, pw int) {
	d := words(dst)[:(kc+1)/2*pw]
	for c := range nn {
		col := src[c*lds : c*lds+kc]
		for p := 0; p < kc; p += 2 {
			var y float32
			if p+1 < kc {
				y = col[p+1]
			}
			d[p/2*pw+c] = pairBF16(col[p], y)
		}
	}
	for q := 0; nn < pw && q < (kc+1)/2; q++ {
		clear(d[q*pw+nn : q*pw+pw])
	}
}

// goAMXKernels is the Go model of the amx set: its tiles, panels and k
// blocks, and TDPBF16PS's steps (Intel SDM) in scalar Go, so that both
// give the same bits. It runs AMX's arithmetic where neither amx nor
// amx-fma can (purego builds, CPUs without AVX512_BF16).
var goAMXKernels = amxSet("go-amx", []microKernel{kern16x16AMXGo, kern16x32AMXGo},
	copyPairsGo, transPairsGo, amxPanelA(copyPairsGo, true), amxPanelA(transPairsGo, false))

// wideBF16Set is the shape the assembly bf16 sets (and go-amx) share:
// 16-lane tiles of mr rows, k in pairs in blocks of bf16KC steps, and the
// avx512 set's A and B blocks.
func wideBF16Set(name string, mr int, kerns []microKernel, copyPanel, transPanel panelPacker) kernelSet {
	return kernelSet{name: name, mr: mr, vec: 16, kerns: kerns, kc: bf16KC, mc: 1024, nc: 384, pairs: true,
		copyPanel: copyPanel, transPanel: transPanel}
}

// amxSet is an amx set: 16-row tiles whose A panels (copyA, transA) hold
// rows of pairs, padded to whole tiles of 32 steps.
func amxSet(name string, kerns []microKernel, copyPanel, transPanel, copyA, transA panelPacker) kernelSet {
	s := wideBF16Set(name, 16, kerns, copyPanel, transPanel)
	s.copyA, s.transA, s.tile = copyA, transA, 32
	return s
}

func kern16x16AMXGo(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	kernAMXGo(16, k, a, b, c, ldc, alpha, beta)
}

func kern16x32AMXGo(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	kernAMXGo(32, k, a, b, c, ldc, alpha, beta)
}

// kernAMXGo is the amx kernels' sum in Go for a 16×pw tile: per chunk of
// 16 pairs (one TDPBF16PS; the panels are padded with zero pairs to whole
// chunks), an element's even (low) and odd (high) products are summed
// apart from zero, each add a float32 FMA flushed as dotBF16's, then acc
// += even + odd, both adds rounded and flushed. The A panel holds a chunk
// as 16 rows of 16 pairs, the B panel as 16 rows of pw lanes. The epilogue
// is kern4x4BF16Go's.
func kernAMXGo(pw, k int, a, b, c *float32, ldc int, alpha, beta float32) {
	kh := (k + 31) / 32 * 16
	as := unsafe.Slice((*uint32)(unsafe.Pointer(a)), 16*kh)
	bs := unsafe.Slice((*uint32)(unsafe.Pointer(b)), pw*kh)
	var acc [16][32]float32
	for q0 := 0; q0 < kh; q0 += 16 {
		at, bt := as[16*q0:16*q0+256], bs[pw*q0:pw*q0+16*pw]
		for r := range 16 {
			for j := range pw {
				var even, odd float32
				for q, x := range at[16*r : 16*r+16] {
					y := bt[q*pw+j]
					even = fmaFTZ(even, math.Float32frombits(x<<16), math.Float32frombits(y<<16))
					odd = fmaFTZ(odd, math.Float32frombits(x&^0xffff), math.Float32frombits(y&^0xffff))
				}
				acc[r][j] = flush(acc[r][j] + flush(even+odd))
			}
		}
	}
	cs := unsafe.Slice(c, 15*ldc+pw)
	for r := range 16 {
		row := cs[r*ldc : r*ldc+pw]
		for j := range row {
			v := float32(alpha * acc[r][j])
			if beta != 0 {
				v += float32(beta * row[j])
			}
			row[j] = v
		}
	}
}

// amxScratch holds the pair panel of one chunk while amxPanelA turns it
// into rows: pooled, since pack is called through a func value.
var amxScratch = sync.Pool{New: func() any { return new([256]float32) }}

// amxPanelA returns the amx sets' A packer for the given pair packer, a
// copyPanel (steps p at src[p*lds:], copy) or a transPanel: 16 rows
// (rows nn..15 zero) of kc steps, in chunks of 32 steps, 16 rows of 16
// pairs each (zero past kc), at word 256·chunk: each an A tile of
// TDPBF16PS. pack writes a chunk as 16 lanes a pair, which is the
// transpose.
func amxPanelA(pack panelPacker, copy bool) panelPacker {
	return func(dst, src []float32, lds, kc, nn, pw int) {
		t := amxScratch.Get().(*[256]float32)
		tw := words(t[:])
		for p0 := 0; p0 < kc; p0 += 32 {
			at := p0
			if copy {
				at = p0 * lds
			}
			kk := min(32, kc-p0)
			clear(t[:])
			pack(t[:], src[at:], lds, kk, nn, 16)
			d := words(dst[p0*8 : p0*8+256])
			for r := range 16 {
				for q := range 16 {
					d[16*r+q] = tw[q*16+r]
				}
			}
		}
		amxScratch.Put(t)
	}
}
