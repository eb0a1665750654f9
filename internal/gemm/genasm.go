//go:build ignore

// genasm writes kernels_amd64.s, the AVX-512 and AVX2 micro-kernels of Sgemm
// and the AVX-512 packing routines.
// Run it with `go generate ./internal/gemm/` after changing a kernel shape; the
// output is checked in so that `go build` alone builds the package.
//
// Every micro-kernel has the Go signature
//
//	func(k int, a, b, c *float32, ldc int, alpha, beta float32)
//
// and computes, for a packed A micro-panel (k steps of mr values) and a packed B
// micro-panel (k steps of nr values), acc = Σ_p a[p]ᵀ b[p] in float32 with one
// fused multiply-add per step, in the order p = 0, 1, ..., k-1, then writes
// C = alpha*acc + beta*C (C = alpha*acc when beta is ±0, C not read).
package main

import (
	"bytes"
	"fmt"
	"os"
)

type gen struct{ bytes.Buffer }

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.Buffer, format+"\n", args...) }

// done ends a routine at its label name_done: clear the upper halves and
// return.
func (g *gen) done(name string) {
	g.p("%s_done:", name)
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// lowMask sets k to the low CX lanes, through tmp.
func (g *gen) lowMask(tmp, k string) {
	g.p("\tMOVL $1, %s", tmp)
	g.p("\tSHLL CX, %s", tmp)
	g.p("\tDECL %s", tmp)
	g.p("\tKMOVW %s, %s", tmp, k)
}

// panelHead starts a packing routine of Go signature
// func(dst, src *float32, lds, kc, nn[, pw] int): DI = dst, SI = src,
// R8 = lds in bytes, R9 = kc.
func (g *gen) panelHead(name, sig string, frame int) {
	g.p("// func %s(%s)", name, sig)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-%d", name, frame)
	g.p("\tMOVQ dst+0(FP), DI")
	g.p("\tMOVQ src+8(FP), SI")
	g.p("\tMOVQ lds+16(FP), R8")
	g.p("\tSHLQ $2, R8") // row stride of src in bytes
	g.p("\tMOVQ kc+24(FP), R9")
}

// stepLoop starts a transpose's loop over blocks of 16 k-steps, p0 = R13 =
// 0, 16, ... while p0 < kc = R9 (else to label exit), and loads a block: CX
// = cnt = min(16, kc-p0), rows i < R14 from base + p0*4 (R8 apart, K1 masks
// them to cnt lanes) into Z0..Z(n-1), the others zeroed; whole blocks
// without masks. The loop's label is name_ploop.
func (g *gen) stepLoop(name, exit, base string, n int) {
	g.p("\tXORQ R13, R13") // p0
	g.p("%s_ploop:", name)
	g.p("\tCMPQ R13, R9")
	g.p("\tJGE %s_%s", name, exit)
	g.p("\tMOVQ R9, CX")
	g.p("\tSUBQ R13, CX")
	g.p("\tCMPQ CX, $16")
	g.p("\tJLE %s_lm", name)
	g.p("\tMOVQ $16, CX")
	g.p("%s_lm:", name)
	g.lowMask("DX", "K1")
	g.p("\tLEAQ (%s)(R13*4), DX", base)
	g.p("\tCMPQ CX, $16")
	g.p("\tJNE %s_lmasked", name)
	g.p("\tCMPQ R14, $%d", n)
	g.p("\tJLT %s_lmasked", name)
	for i := range n {
		g.p("\tVMOVUPS (DX), Z%d", i)
		if i < n-1 {
			g.p("\tADDQ R8, DX")
		}
	}
	g.p("\tJMP %s_t", name)
	g.p("%s_lmasked:", name)
	for i := range n {
		g.p("\tCMPQ R14, $%d", i)
		g.p("\tJLE %s_z%d", name, i)
		g.p("\tVMOVUPS.Z (DX), K1, Z%d", i)
		if i < n-1 {
			g.p("\tADDQ R8, DX")
		}
	}
	g.p("\tJMP %s_t", name)
	for i := range n {
		g.p("%s_z%d:", name, i)
		g.p("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	g.p("%s_t:", name)
}

// unpack runs the first two transpose stages on rows Z0..Z(n-1): pairs of
// rows interleaved by floats into Z(ps)..., then pairs of those by float
// pairs into Z(pd)...; Go operand order is reversed: OP src2, src1, dst.
func (g *gen) unpack(n, ps, pd int) {
	for i := range n / 2 {
		g.p("\tVUNPCKLPS Z%d, Z%d, Z%d", 2*i+1, 2*i, ps+2*i)
		g.p("\tVUNPCKHPS Z%d, Z%d, Z%d", 2*i+1, 2*i, ps+2*i+1)
	}
	for i := range n / 4 {
		t := ps + 4*i
		g.p("\tVUNPCKLPD Z%d, Z%d, Z%d", t+2, t, pd+4*i)
		g.p("\tVUNPCKHPD Z%d, Z%d, Z%d", t+2, t, pd+4*i+1)
		g.p("\tVUNPCKLPD Z%d, Z%d, Z%d", t+3, t+1, pd+4*i+2)
		g.p("\tVUNPCKHPD Z%d, Z%d, Z%d", t+3, t+1, pd+4*i+3)
	}
}

// kernel emits one register-blocked micro-kernel of mr rows and nv vectors of
// lanes floats. reg is "Z" (AVX-512, 32 registers) or "Y" (AVX2, 16 registers).
//
// With pack set, the kernel also packs its B micro-panel: it reads step p of B
// from bsrc + p*lds (row-major B) and stores it at b + p*nr before using it.
// Its Go signature gains (bsrc *float32, lds int) at the end. pfSrc is how
// many rows of bsrc ahead it prefetches (0: none). With pfC set it prefetches
// its C tile before the k loop, so the epilogue does not wait on L3.
//
// With pfB set (and not pack) the Go signature gains (pf *float32) at the end:
// the kernel prefetches one cache line into L2 at each step, pf, pf+64 bytes,
// and so on. Sgemm points it at the B block it will sweep next, so that block
// streams in from memory while this one is worked on.
func (g *gen) kernel(name string, mr, nv int, reg string, pack bool, pfSrc int, pfC, pfB bool) {
	lanes, nregs := 16, 32
	if reg == "Y" {
		lanes, nregs = 8, 16
	}
	vb := lanes * 4 // bytes per vector
	nr := nv * lanes
	if mr*nv+nv+1 > nregs {
		panic("too many registers")
	}
	acc := func(r, v int) string { return fmt.Sprintf("%s%d", reg, r*nv+v) }
	breg := func(v int) string { return fmt.Sprintf("%s%d", reg, nregs-1-nv+v) }
	bc := fmt.Sprintf("%s%d", reg, nregs-1)
	const unroll = 4

	if pack {
		g.p("// func %s(k int, a, b, c *float32, ldc int, alpha, beta float32, bsrc *float32, lds int)", name)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
		g.p("\tMOVQ bsrc+48(FP), SI")
		g.p("\tMOVQ lds+56(FP), R11")
		g.p("\tSHLQ $2, R11")
		if pfSrc > 0 {
			g.p("\tIMUL3Q $%d, R11, R12", pfSrc)
		}
	} else if pfB {
		g.p("// func %s(k int, a, b, c *float32, ldc int, alpha, beta float32, pf *float32)", name)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-56", name)
		g.p("\tMOVQ pf+48(FP), R13")
	} else {
		g.p("// func %s(k int, a, b, c *float32, ldc int, alpha, beta float32)", name)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	}
	g.p("\tMOVQ k+0(FP), CX")
	g.p("\tMOVQ a+8(FP), AX")
	g.p("\tMOVQ b+16(FP), BX")
	g.p("\tMOVQ c+24(FP), DI")
	g.p("\tMOVQ ldc+32(FP), DX")
	g.p("\tSHLQ $2, DX")
	for i := range mr * nv {
		if reg == "Z" {
			g.p("\tVPXORD %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
		} else {
			g.p("\tVXORPS %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
		}
	}
	if pfC {
		// Start fetching the C tile now; the epilogue needs it after k steps.
		g.p("\tMOVQ DI, R10")
		for r := range mr {
			for off := 0; off < nr*4; off += 64 {
				g.p("\tPREFETCHT0 %d(R10)", off)
			}
			g.p("\tPREFETCHT0 %d(R10)", nr*4-1)
			if r < mr-1 {
				g.p("\tADDQ DX, R10")
			}
		}
	}
	step := func(u int) {
		if pack {
			if pfSrc > 0 {
				for off := 0; off < nr*4; off += 64 {
					g.p("\tPREFETCHT0 %d(SI)(R12*1)", off)
				}
			}
			for v := range nv {
				g.p("\tVMOVUPS %d(SI), %s", v*vb, breg(v))
			}
			for v := range nv {
				g.p("\tVMOVUPS %s, %d(BX)", breg(v), u*nr*4+v*vb)
			}
			g.p("\tADDQ R11, SI")
		} else {
			if pfB {
				g.p("\tPREFETCHT1 %d(R13)", u*64)
			}
			for v := range nv {
				g.p("\tVMOVUPS %d(BX), %s", u*nr*4+v*vb, breg(v))
			}
		}
		for r := range mr {
			g.p("\tVBROADCASTSS %d(AX), %s", u*mr*4+r*4, bc)
			for v := range nv {
				g.p("\tVFMADD231PS %s, %s, %s", breg(v), bc, acc(r, v))
			}
		}
	}
	g.p("\tMOVQ CX, R8")
	g.p("\tSHRQ $2, R8")
	g.p("\tJZ %s_tail", name)
	g.p("%s_loop4:", name)
	for u := range unroll {
		step(u)
	}
	g.p("\tADDQ $%d, AX", unroll*mr*4)
	g.p("\tADDQ $%d, BX", unroll*nr*4)
	if pfB {
		g.p("\tADDQ $%d, R13", unroll*64)
	}
	g.p("\tDECQ R8")
	g.p("\tJNZ %s_loop4", name)
	g.p("%s_tail:", name)
	g.p("\tANDQ $3, CX")
	g.p("\tJZ %s_store", name)
	g.p("%s_loop1:", name)
	step(0)
	g.p("\tADDQ $%d, AX", mr*4)
	g.p("\tADDQ $%d, BX", nr*4)
	if pfB {
		g.p("\tADDQ $64, R13")
	}
	g.p("\tDECQ CX")
	g.p("\tJNZ %s_loop1", name)

	// C = alpha*acc + beta*C, or alpha*acc when beta is ±0.
	al, be, t := fmt.Sprintf("%s%d", reg, nregs-1), fmt.Sprintf("%s%d", reg, nregs-2), fmt.Sprintf("%s%d", reg, nregs-3)
	g.p("%s_store:", name)
	g.p("\tVBROADCASTSS alpha+40(FP), %s", al)
	g.p("\tMOVL beta+44(FP), R9")
	g.p("\tANDL $0x7fffffff, R9")
	g.p("\tJZ %s_beta0", name)
	g.p("\tVBROADCASTSS beta+44(FP), %s", be)
	for r := range mr {
		for v := range nv {
			g.p("\tVMULPS %d(DI), %s, %s", v*vb, be, t)
			g.p("\tVFMADD231PS %s, %s, %s", acc(r, v), al, t)
			g.p("\tVMOVUPS %s, %d(DI)", t, v*vb)
		}
		if r < mr-1 {
			g.p("\tADDQ DX, DI")
		}
	}
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("%s_beta0:", name)
	for r := range mr {
		for v := range nv {
			g.p("\tVMULPS %s, %s, %s", acc(r, v), al, acc(r, v))
			g.p("\tVMOVUPS %s, %d(DI)", acc(r, v), v*vb)
		}
		if r < mr-1 {
			g.p("\tADDQ DX, DI")
		}
	}
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// transPanel emits name(dst, src *float32, lds, kc, nn, pw int):
// dst[p*pw+c] = src[c*lds+p] for p < kc and c < nn, and 0 for nn <= c < pw. It
// packs a B micro-panel from Bᵀ storage and an A micro-panel from A storage,
// 16×16 blocks at a time, with masked loads and stores at the edges.
func (g *gen) transPanel(name string) {
	g.panelHead(name, "dst, src *float32, lds, kc, nn, pw int", 48)
	g.p("\tMOVQ pw+40(FP), R11")
	g.p("\tMOVQ R11, R15")
	g.p("\tSHLQ $2, R15")  // row stride of dst in bytes
	g.p("\tXORQ R12, R12") // c0
	g.p("%s_cloop:", name)
	g.p("\tCMPQ R12, R11")
	g.p("\tJGE %s_done", name)
	// R14 = rows = clamp(nn-c0, 0, 16); K3 = store mask of min(16, pw-c0) lanes.
	g.p("\tMOVQ nn+32(FP), R14")
	g.p("\tSUBQ R12, R14")
	g.p("\tMOVQ R11, CX")
	g.p("\tSUBQ R12, CX")
	g.p("\tXORQ R10, R10") // R10 = 1 if the stores are whole vectors
	g.p("\tCMPQ CX, $16")
	g.p("\tJLT %s_sm", name)
	g.p("\tMOVQ $16, CX")
	g.p("\tMOVQ $1, R10")
	g.p("%s_sm:", name)
	g.lowMask("AX", "K3")
	// AX = src + c0*lds (first row of this block of columns); BX = dst + c0*4.
	g.p("\tMOVQ R12, AX")
	g.p("\tIMULQ R8, AX")
	g.p("\tADDQ SI, AX")
	g.p("\tLEAQ (DI)(R12*4), BX")
	g.stepLoop(name, "cnext", "AX", 16)
	// Transpose Z0..Z15 (rows) into Z0..Z15 (columns).
	g.unpack(16, 16, 0)
	// Now Z(4i+j) lane L holds column 4L+j of rows 4i..4i+3.
	for j := range 4 {
		s := 16 + 4*j
		g.p("\tVSHUFF32X4 $0x44, Z%d, Z%d, Z%d", 4+j, j, s)
		g.p("\tVSHUFF32X4 $0xEE, Z%d, Z%d, Z%d", 4+j, j, s+1)
		g.p("\tVSHUFF32X4 $0x44, Z%d, Z%d, Z%d", 12+j, 8+j, s+2)
		g.p("\tVSHUFF32X4 $0xEE, Z%d, Z%d, Z%d", 12+j, 8+j, s+3)
	}
	for j := range 4 {
		s := 16 + 4*j
		for l := range 4 {
			imm := "0x88"
			if l%2 == 1 {
				imm = "0xDD"
			}
			src1, src2 := s, s+2
			if l >= 2 {
				src1, src2 = s+1, s+3
			}
			g.p("\tVSHUFF32X4 $%s, Z%d, Z%d, Z%d", imm, src2, src1, 4*l+j)
		}
	}
	// Store columns j < cnt (Zj holds k-step p0+j) at dst[(p0+j)*pw + c0].
	g.p("\tMOVQ R13, DX")
	g.p("\tIMULQ R15, DX")
	g.p("\tADDQ BX, DX")
	g.p("\tCMPQ CX, $16")
	g.p("\tJNE %s_smasked", name)
	g.p("\tTESTQ R10, R10")
	g.p("\tJZ %s_smasked", name)
	for j := range 16 {
		g.p("\tVMOVUPS Z%d, (DX)", j)
		if j < 15 {
			g.p("\tADDQ R15, DX")
		}
	}
	g.p("\tJMP %s_stored", name)
	g.p("%s_smasked:", name)
	for j := range 16 {
		g.p("\tVMOVUPS Z%d, K3, (DX)", j)
		if j < 15 {
			g.p("\tCMPQ CX, $%d", j+1)
			g.p("\tJLE %s_stored", name)
			g.p("\tADDQ R15, DX")
		}
	}
	g.p("%s_stored:", name)
	g.p("\tADDQ $16, R13")
	g.p("\tJMP %s_ploop", name)
	g.p("%s_cnext:", name)
	g.p("\tADDQ $16, R12")
	g.p("\tJMP %s_cloop", name)
	g.done(name)
}

// transPanel8 emits name(dst, src *float32, lds, kc, nn int),
// transPanel for pw = 8 (an A micro-panel from A storage): 8 rows of 16 steps
// become 8 full vectors of 2 steps each, so no store is masked but the last.
func (g *gen) transPanel8(name string) {
	g.panelHead(name, "dst, src *float32, lds, kc, nn int", 40)
	g.p("\tMOVQ nn+32(FP), R14")
	g.p("\tMOVL $0xff, AX")
	g.p("\tKMOVW AX, K2")
	g.stepLoop(name, "done", "SI", 8)
	g.unpack(8, 8, 16)
	// Z(16+j) lane L: column 4L+j of rows 0..3; Z(20+j): of rows 4..7.
	for j := range 4 {
		g.p("\tVSHUFF32X4 $0x44, Z%d, Z%d, Z%d", 20+j, 16+j, 24+2*j)
		g.p("\tVSHUFF32X4 $0xEE, Z%d, Z%d, Z%d", 20+j, 16+j, 24+2*j+1)
	}
	// Output q (columns 2q, 2q+1) for j pair (0,1) and (2,3).
	for pair := range 2 {
		a, b := 24+4*pair, 26+4*pair // shuffles of j = 2·pair and 2·pair+1
		// columns 4L + 2·pair, 4L + 2·pair + 1 for L = 0..3 → q = 2L + pair
		g.p("\tVSHUFF32X4 $0x88, Z%d, Z%d, Z%d", b, a, 0*2+pair)
		g.p("\tVSHUFF32X4 $0xDD, Z%d, Z%d, Z%d", b, a, 1*2+pair)
		g.p("\tVSHUFF32X4 $0x88, Z%d, Z%d, Z%d", b+1, a+1, 2*2+pair)
		g.p("\tVSHUFF32X4 $0xDD, Z%d, Z%d, Z%d", b+1, a+1, 3*2+pair)
	}
	// Store: dst + p0*32 + q*64.
	g.p("\tMOVQ R13, DX")
	g.p("\tSHLQ $5, DX")
	g.p("\tADDQ DI, DX")
	g.p("\tCMPQ CX, $16")
	g.p("\tJLT %s_tail", name)
	for q := range 8 {
		g.p("\tVMOVUPS Z%d, %d(DX)", q, 64*q)
	}
	g.p("\tADDQ $16, R13")
	g.p("\tJMP %s_ploop", name)
	g.p("%s_tail:", name)
	for q := range 8 {
		// cnt >= 2q+2: whole vector; cnt == 2q+1: its first half.
		g.p("\tCMPQ CX, $%d", 2*q+1)
		g.p("\tJLT %s_done", name)
		g.p("\tJEQ %s_h%d", name, q)
		g.p("\tVMOVUPS Z%d, %d(DX)", q, 64*q)
	}
	g.p("\tJMP %s_done", name)
	for q := range 8 {
		g.p("%s_h%d:", name, q)
		g.p("\tVMOVUPS Z%d, K2, %d(DX)", q, 64*q)
		g.p("\tJMP %s_done", name)
	}
	g.done(name)
}

// copyPanel emits name(dst, src *float32, lds, kc, nn, pw int):
// dst[p*pw+c] = src[p*lds+c] for p < kc and c < nn, and 0 for nn <= c < pw,
// with pw <= 48. It packs a B micro-panel from B storage and an A micro-panel
// from Aᵀ storage.
func (g *gen) copyPanel(name string) {
	g.panelHead(name, "dst, src *float32, lds, kc, nn, pw int", 48)
	g.p("\tMOVQ nn+32(FP), R10")
	g.p("\tMOVQ pw+40(FP), R11")
	g.p("\tMOVQ R11, R15")
	g.p("\tSHLQ $2, R15")
	// Masks: K1..K3 load lanes of vectors 0..2 (columns < nn), K4..K6 store
	// lanes (columns < pw). lanes(x, v) = clamp(x-16v, 0, 16).
	mask := func(src string, v int, k string) {
		g.p("\tMOVQ %s, CX", src)
		g.p("\tSUBQ $%d, CX", 16*v)
		g.p("\tXORQ AX, AX")
		g.p("\tCMPQ CX, $0")
		g.p("\tJLE %s_m%s", name, k)
		g.p("\tMOVQ $0xffff, AX")
		g.p("\tCMPQ CX, $16")
		g.p("\tJGE %s_m%s", name, k)
		g.p("\tMOVL $1, AX")
		g.p("\tSHLL CX, AX")
		g.p("\tDECL AX")
		g.p("%s_m%s:", name, k)
		g.p("\tKMOVW AX, %s", k)
	}
	for v := range 3 {
		mask("R10", v, fmt.Sprintf("K%d", 1+v))
		mask("R11", v, fmt.Sprintf("K%d", 4+v))
	}
	g.p("\tTESTQ R9, R9")
	g.p("\tJZ %s_done", name)
	// Whole vectors (nn == pw, a multiple of 16): no masks.
	g.p("\tCMPQ R10, R11")
	g.p("\tJNE %s_loop", name)
	for nv := 1; nv <= 3; nv++ {
		g.p("\tCMPQ R11, $%d", 16*nv)
		g.p("\tJEQ %s_full%d", name, nv)
	}
	g.p("\tJMP %s_loop", name)
	for nv := 1; nv <= 3; nv++ {
		g.p("%s_full%d:", name, nv)
		for v := range nv {
			g.p("\tVMOVUPS %d(SI), Z%d", 64*v, v)
		}
		for v := range nv {
			g.p("\tVMOVUPS Z%d, %d(DI)", v, 64*v)
		}
		g.p("\tADDQ R8, SI")
		g.p("\tADDQ R15, DI")
		g.p("\tDECQ R9")
		g.p("\tJNZ %s_full%d", name, nv)
		g.p("\tJMP %s_done", name)
	}
	g.p("%s_loop:", name)
	for v := range 3 {
		g.p("\tVMOVUPS.Z %d(SI), K%d, Z%d", 64*v, 1+v, v)
	}
	for v := range 3 {
		g.p("\tVMOVUPS Z%d, K%d, %d(DI)", v, 4+v, 64*v)
	}
	g.p("\tADDQ R8, SI")
	g.p("\tADDQ R15, DI")
	g.p("\tDECQ R9")
	g.p("\tJNZ %s_loop", name)
	g.done(name)
}

func main() {
	var g gen
	g.p("// Code generated by genasm.go; DO NOT EDIT.")
	g.p("")
	g.p("//go:build !purego")
	g.p("")
	g.p("#include \"textflag.h\"")
	g.p("")
	// AVX-512: 8 rows × 48, 32 or 16 columns (24, 16 or 8 accumulators).
	for nv := 3; nv >= 1; nv-- {
		g.kernel(fmt.Sprintf("kern8x%dAVX512", nv*16), 8, nv, "Z", false, 0, true, false)
	}
	g.kernel("kern8x48PfAVX512", 8, 3, "Z", false, 0, true, true)
	g.kernel("kern8x48PackAVX512", 8, 3, "Z", true, 8, true, false)
	g.transPanel("transPanelAVX512")
	g.transPanel8("transPanel8AVX512")
	g.copyPanel("copyPanelAVX512")
	// AVX2 + FMA: 6 rows × 16 or 8 columns (12 or 6 accumulators).
	for nv := 2; nv >= 1; nv-- {
		g.kernel(fmt.Sprintf("kern6x%dAVX2", nv*8), 6, nv, "Y", false, 0, false, false)
	}
	if err := os.WriteFile("kernels_amd64.s", g.Bytes(), 0o644); err != nil {
		panic(err)
	}
}
