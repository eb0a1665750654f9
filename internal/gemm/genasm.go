//go:build ignore

// genasm writes kernels_amd64.s, the AVX-512 and AVX2 micro-kernels of Sgemm
// and the AVX-512 packing routines, and the AVX512_BF16 kernels and packers
// of SgemmBF16 (in EVEX bytes where Go's assembler lacks the mnemonic).
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
	"strings"
)

type gen struct{ bytes.Buffer }

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.Buffer, format+"\n", args...) }

// asm emits text's lines after the first (a fixed run of instructions), NAME
// replaced by name.
func (g *gen) asm(name, text string) {
	for _, l := range strings.Split(text, "\n")[1:] {
		g.p("%s", strings.ReplaceAll(l, "NAME", name))
	}
}

// ret returns from a routine that used the upper vector registers, clearing
// them first so the SSE code after it pays no transition penalty.
func (g *gen) ret() {
	g.p("\tVZEROUPPER")
	g.p("\tRET")
}

// kernArgs loads a micro-kernel's arguments: CX = k, a into the register
// a, BX = b, DI = c, DX = ldc in bytes.
func (g *gen) kernArgs(a string) {
	g.p("\tMOVQ k+0(FP), CX")
	g.p("\tMOVQ a+8(FP), %s", a)
	g.p("\tMOVQ b+16(FP), BX")
	g.p("\tMOVQ c+24(FP), DI")
	g.p("\tMOVQ ldc+32(FP), DX")
	g.p("\tSHLQ $2, DX")
}

// betaZero emits the test of beta = ±0 (sign bit masked off, in the
// register r) and jump (JZ when it is, JNZ when not) to label.
func (g *gen) betaZero(r, jump, label string) {
	g.p("\tMOVL beta+44(FP), %s", r)
	g.p("\tANDL $0x7fffffff, %s", r)
	g.p("\t%s %s", jump, label)
}

// ones emits r = 2^CX - 1, the mask of CX lanes, in 32-bit (w "L") or
// 64-bit (w "Q", for the two 16-lane masks of 32 floats) operations.
func (g *gen) ones(w, r string) {
	g.p("\tMOV%s $1, %s", w, r)
	g.p("\tSHL%s CX, %s", w, r)
	g.p("\tDEC%s %s", w, r)
}

// minCX emits CX = min(CX, n), label after it.
func (g *gen) minCX(n int, label string) {
	g.p("\tCMPQ CX, $%d", n)
	g.p("\tJLE %s", label)
	g.p("\tMOVQ $%d, CX", n)
	g.p("%s:", label)
}

// mem is a memory operand [base + disp] of a general register (AX = 0, CX,
// DX, BX, SP, BP, SI, DI, R8 = 8, ..., R15), {1to16} of its dword with bcast.
type mem struct {
	base, disp int
	bcast      bool
}

// evex512 returns the bytes of a 512-bit, W0 EVEX instruction of opcode map
// 0F38: opcode op, implied prefix pp (1: 66, 2: F3, 3: F2), ModRM.reg a ZMM
// number, vvvv the ZMM v, and r/m the ZMM rm or, when rm < 0, m. Go's
// assembler lacks the AVX512_BF16 mnemonics, so they are emitted as bytes.
func evex512(op, pp byte, reg, v, rm int, m mem) []byte {
	inv := func(x int) byte { return byte(x&1 ^ 1) }
	rx, bx, bc := 0, 0, byte(0) // EVEX.X, EVEX.B (rm bits 4 and 3), EVEX.b
	var modrm byte
	var disp []byte
	if rm >= 0 {
		rx, bx = rm>>4, rm>>3
		modrm = 0xC0 | byte(rm&7)
	} else {
		if m.base&7 == 4 {
			panic("evex512: a base of SP or R12 needs a SIB byte")
		}
		bx = m.base >> 3
		n := 64 // disp8 counts in units of the memory operand
		if m.bcast {
			n, bc = 4, 1
		}
		switch {
		case m.disp == 0 && m.base&7 != 5:
		case m.disp%n == 0 && m.disp/n >= -128 && m.disp/n < 128:
			modrm, disp = 0x40, []byte{byte(int8(m.disp / n))}
		default:
			d := uint32(int32(m.disp))
			modrm, disp = 0x80, []byte{byte(d), byte(d >> 8), byte(d >> 16), byte(d >> 24)}
		}
		modrm |= byte(m.base & 7)
	}
	modrm |= byte(reg&7) << 3
	p0 := inv(reg>>3)<<7 | inv(rx)<<6 | inv(bx)<<5 | inv(reg>>4)<<4 | 2 // map 0F38
	p1 := byte(^v&15)<<3 | 4 | pp                                       // W0
	p2 := 2<<5 | bc<<4 | inv(v>>4)<<3                                   // 512 bits, no mask
	return append([]byte{0x62, p0, p1, p2, op, modrm}, disp...)
}

// raw emits an instruction as bytes, with its Intel syntax as a comment.
func (g *gen) raw(intel string, code []byte) {
	var b bytes.Buffer
	for i, x := range code {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "BYTE $0x%02x", x)
	}
	g.p("\t%s // %s", b.String(), intel)
}

// dpbf16 emits VDPBF16PS: Z acc += the bf16 pairs of Z b · the pair at m,
// broadcast to every lane.
func (g *gen) dpbf16(acc, b int, m mem) {
	g.raw(fmt.Sprintf("vdpbf16ps zmm%d, zmm%d, dword ptr [%s%+d]{1to16}", acc, b, gpName[m.base], m.disp),
		evex512(0x52, 2, acc, b, -1, m))
}

// cvt2 emits VCVTNE2PS2BF16: Z dst = the 16 floats of Z lo rounded to bf16
// in its low half, those of Z hi in its high half.
func (g *gen) cvt2(dst, hi, lo int) {
	g.raw(fmt.Sprintf("vcvtne2ps2bf16 zmm%d, zmm%d, zmm%d", dst, hi, lo), evex512(0x72, 3, dst, hi, lo, mem{}))
}

// amxOp returns the bytes of a VEX.128 W0 instruction of map 0F38, as AMX's
// are: opcode op, implied prefix pp (0: none, 1: 66, 2: F3, 3: F2), vvvv
// the tile v, ModRM.reg the tile reg, and r/m the tile rm or, when rm < 0,
// [base + index*1 + disp] through a SIB byte (index < 0: none), which
// TILELOADD and TILESTORED require. Go's assembler has no AMX mnemonics.
func amxOp(op, pp byte, reg, v, rm, base, index, disp int) []byte {
	inv := func(x int) byte { return byte(x>>3&1 ^ 1) }
	var modrm byte
	var tail []byte
	x, b := 0, 0
	if rm >= 0 {
		modrm = 0xC0 | byte(rm&7)
	} else {
		sib := byte(4<<3 | base&7) // no index
		if index >= 0 {
			x, sib = index, byte(index&7)<<3|byte(base&7)
		}
		b = base
		modrm, tail = 4, []byte{sib}
		if disp != 0 || base&7 == 5 {
			modrm, tail = 0x44, append(tail, byte(int8(disp)))
		}
	}
	modrm |= byte(reg&7) << 3
	return append([]byte{0xC4, 0x80&^(byte(reg>>3&1)<<7) | inv(x)<<6 | inv(b)<<5 | 2, byte(^v&15)<<3 | pp, op, modrm}, tail...)
}

// tileMem is the Intel syntax of [base + index*1 + disp].
func tileMem(base, index, disp int) string {
	s := gpName[base]
	if index >= 0 {
		s += "+" + gpName[index]
	}
	if disp != 0 {
		s += fmt.Sprintf("%+d", disp)
	}
	return "[" + s + "]"
}

func (g *gen) tileLoad(t, base, index, disp int) {
	g.raw(fmt.Sprintf("tileloadd tmm%d, %s", t, tileMem(base, index, disp)), amxOp(0x4B, 3, t, 0, -1, base, index, disp))
}

func (g *gen) tileStore(t, base, index, disp int) {
	g.raw(fmt.Sprintf("tilestored %s, tmm%d", tileMem(base, index, disp), t), amxOp(0x4B, 2, t, 0, -1, base, index, disp))
}

// tdpbf16 emits TDPBF16PS: tile c += tile a · tile b.
func (g *gen) tdpbf16(c, a, b int) {
	g.raw(fmt.Sprintf("tdpbf16ps tmm%d, tmm%d, tmm%d", c, a, b), amxOp(0x5C, 2, c, b, a, 0, 0, 0))
}

var gpName = []string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}

// regFile returns the lanes of a vector register ("Z" or "Y") and how many
// there are (AVX-512: 32, AVX2: 16).
func regFile(reg string) (lanes, nregs int) {
	if reg == "Y" {
		return 8, 16
	}
	return 16, 32
}

// kernelHead emits a micro-kernel's signature and argument loads (see
// kernel): SI = bsrc, R11 = lds in bytes, R12 = pfSrc rows of it with
// pack; R13 = pf with pfB; then kernArgs.
func (g *gen) kernelHead(name string, pack bool, pfSrc int, pfB bool) {
	const sig = "k int, a, b, c *float32, ldc int, alpha, beta float32"
	if pack {
		g.p("// func %s(%s, bsrc *float32, lds int)", name, sig)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
		g.p("\tMOVQ bsrc+48(FP), SI")
		g.p("\tMOVQ lds+56(FP), R11")
		g.p("\tSHLQ $2, R11")
		if pfSrc > 0 {
			g.p("\tIMUL3Q $%d, R11, R12", pfSrc)
		}
	} else if pfB {
		g.p("// func %s(%s, pf *float32)", name, sig)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-56", name)
		g.p("\tMOVQ pf+48(FP), R13")
	} else {
		g.p("// func %s(%s)", name, sig)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	}
	g.kernArgs("AX")
}

// kernelInit zeroes a kernel's mr·nv accumulators and, with pfC, starts
// fetching its C tile (mr rows of nr floats), which the epilogue needs
// after k steps.
func (g *gen) kernelInit(mr, nv, nr int, reg string, pfC bool) {
	for i := range mr * nv {
		if reg == "Z" {
			g.p("\tVPXORD %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
		} else {
			g.p("\tVXORPS %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
		}
	}
	if !pfC {
		return
	}
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
func (g *gen) kernel(name string, mr, nv int, reg string, pack bool, pfSrc int, pfC, pfB, bf16 bool) {
	lanes, nregs := regFile(reg)
	vb := lanes * 4 // bytes per vector
	nr := nv * lanes
	if mr*nv+nv+1 > nregs {
		panic("too many registers")
	}
	acc := func(r, v int) string { return fmt.Sprintf("%s%d", reg, r*nv+v) }
	breg := func(v int) string { return fmt.Sprintf("%s%d", reg, nregs-1-nv+v) }
	bc := fmt.Sprintf("%s%d", reg, nregs-1)
	const unroll = 4

	g.kernelHead(name, pack, pfSrc, pfB)
	g.kernelInit(mr, nv, nr, reg, pfC)
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
			if bf16 {
				for v := range nv {
					g.dpbf16(r*nv+v, nregs-1-nv+v, mem{base: 0, disp: u*mr*4 + r*4, bcast: true})
				}
				continue
			}
			g.p("\tVBROADCASTSS %d(AX), %s", u*mr*4+r*4, bc)
			for v := range nv {
				g.p("\tVFMADD231PS %s, %s, %s", breg(v), bc, acc(r, v))
			}
		}
	}
	// advance moves A, B (and pf) on by n steps.
	advance := func(n int) {
		g.p("\tADDQ $%d, AX", n*mr*4)
		g.p("\tADDQ $%d, BX", n*nr*4)
		if pfB {
			g.p("\tADDQ $%d, R13", n*64)
		}
	}
	if bf16 {
		g.p("\tINCQ CX") // steps of bf16 pairs: (k+1)/2
		g.p("\tSHRQ $1, CX")
	}
	g.p("\tMOVQ CX, R8")
	g.p("\tSHRQ $2, R8")
	g.p("\tJZ %s_tail", name)
	g.p("%s_loop4:", name)
	for u := range unroll {
		step(u)
	}
	advance(unroll)
	g.p("\tDECQ R8")
	g.p("\tJNZ %s_loop4", name)
	g.p("%s_tail:", name)
	g.p("\tANDQ $3, CX")
	g.p("\tJZ %s_store", name)
	g.p("%s_loop1:", name)
	step(0)
	advance(1)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s_loop1", name)

	g.epilogue(name, mr, nv, reg, bf16)
}

// epilogue emits a kernel's end: C = alpha*acc + beta*C, or alpha*acc when
// beta is ±0 (C not read). The fp32 kernels fuse it, alpha*acc + (beta*C)
// in one FMA; the bf16 ones round alpha*acc and beta*C each and add them,
// steps the Go kernel can take exactly.
func (g *gen) epilogue(name string, mr, nv int, reg string, bf16 bool) {
	lanes, nregs := regFile(reg)
	vb := lanes * 4
	acc := func(r, v int) string { return fmt.Sprintf("%s%d", reg, r*nv+v) }
	al, be, t := fmt.Sprintf("%s%d", reg, nregs-1), fmt.Sprintf("%s%d", reg, nregs-2), fmt.Sprintf("%s%d", reg, nregs-3)
	g.p("%s_store:", name)
	g.p("\tVBROADCASTSS alpha+40(FP), %s", al)
	g.betaZero("R9", "JZ", name+"_beta0")
	// tile emits body for each vector of the tile, row by row down C.
	tile := func(body func(a, c string)) {
		for r := range mr {
			for v := range nv {
				body(acc(r, v), fmt.Sprintf("%d(DI)", v*vb))
			}
			if r < mr-1 {
				g.p("\tADDQ DX, DI")
			}
		}
		g.ret()
	}
	g.p("\tVBROADCASTSS beta+44(FP), %s", be)
	tile(func(a, c string) {
		g.p("\tVMULPS %s, %s, %s", c, be, t)
		if bf16 {
			g.p("\tVMULPS %s, %s, %s", a, al, a)
			g.p("\tVADDPS %s, %s, %s", t, a, t)
		} else {
			g.p("\tVFMADD231PS %s, %s, %s", a, al, t)
		}
		g.p("\tVMOVUPS %s, %s", t, c)
	})
	g.p("%s_beta0:", name)
	tile(func(a, c string) {
		g.p("\tVMULPS %s, %s, %s", a, al, a)
		g.p("\tVMOVUPS %s, %s", a, c)
	})
	g.p("")
}

// Registers by number for amxOp.
const (
	rAX, rCX, rDX, rBX, rSP, rBP, rSI, rDI = 0, 1, 2, 3, 4, 5, 6, 7
	rR8, rR9, rR10                         = 8, 9, 10
)

// amxKernel emits kern16xNAMX, N = 16·nv (nv = 1 or 2), a micro-kernel on
// AMX tiles as amxConfigure sets them: C tiles 0 (and 1) of 16×16 fp32,
// A's in tile 4 (16 rows of 16 pairs), B's in tiles 6 (and 7), 16 pairs of
// 16 columns. The A panel holds its steps in chunks of 32, each 16 rows of
// 16 pairs; the B panel is the pair panel of nv·16 lanes; both are padded
// with zero pairs to whole chunks. One call sums in tiles and stores them:
// no sums live across calls. With alpha = 1 and beta = ±0 (C = acc) the
// tiles go straight to C, its lines prefetched first (TILESTORED to lines
// not in L1 is slow); else to the frame, for the bf16 kernels' epilogue
// (alpha*acc and beta*C rounded apart).
func (g *gen) amxKernel(nv int) {
	name := fmt.Sprintf("kern16x%dAMX", 16*nv)
	pw := 16 * nv
	g.p("// func %s(k int, a, b, c *float32, ldc int, alpha, beta float32)", name)
	g.p("TEXT ·%s(SB), 0, $%d-48", name, 16*pw*4)
	g.kernArgs("SI")
	g.p("\tADDQ $31, CX")
	g.p("\tSHRQ $5, CX") // chunks
	g.p("\tMOVQ DI, R10")
	for range 16 {
		for v := range nv {
			g.p("\tPREFETCHT0 %d(R10)", 64*v)
		}
		g.p("\tADDQ DX, R10")
	}
	for v := range nv {
		g.raw(fmt.Sprintf("tilezero tmm%d", v), amxOp(0x49, 3, v, 0, 0, 0, 0, 0))
	}
	g.p("\tMOVQ $64, R8")
	g.p("\tMOVQ $%d, R9", pw*4)
	g.p("%s_loop:", name)
	g.tileLoad(4, rSI, rR8, 0)
	for v := range nv {
		g.tileLoad(6+v, rBX, rR9, 64*v)
		g.tdpbf16(v, 4, 6+v)
	}
	g.p("\tADDQ $1024, SI")
	g.p("\tADDQ $%d, BX", 16*pw*4)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s_loop", name)
	g.betaZero("R10", "JNZ", name+"_frame")
	g.p("\tCMPL alpha+40(FP), $0x3f800000")
	g.p("\tJNE %s_frame", name)
	for v := range nv {
		g.tileStore(v, rDI, rDX, 64*v)
	}
	g.p("\tRET")
	g.p("%s_frame:", name)
	g.p("\tMOVQ SP, SI")
	for v := range nv {
		g.tileStore(v, rSI, rR9, 64*v)
	}
	g.amxEpilogue(name, nv)
}

// amxStrip emits kernStripAMX(panels int, a, b, c *float32, ldc, bstep int):
// kern16x32AMX with alpha = 1, beta = ±0 and k of one chunk, over panels
// 16×32 tiles of C side by side, B's panels bstep floats apart. A call per
// tile waited for its own stores (about 210 cycles a tile at k ≤ 32); here
// A's tile is loaded once and two pairs of C tiles take turns, a panel's
// stored after the next one's products are issued, as the tile unit runs in
// order and a store waits for its products. The sums and so the bits are
// kern16x32AMX's. C's lines are prefetched stripAhead panels ahead, on into
// the next row of tiles.
func (g *gen) amxStrip() {
	const name = "kernStripAMX"
	pairs := [2][2]int{{0, 1}, {2, 3}}
	g.p("// func %s(panels int, a, b, c *float32, ldc, bstep int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.p("\tMOVQ panels+0(FP), CX") // panels to compute
	g.p("\tMOVQ CX, AX")           // panels to store
	g.p("\tMOVQ a+8(FP), SI")
	g.p("\tMOVQ b+16(FP), BX")
	g.p("\tMOVQ c+24(FP), R13") // the next panel to store
	g.p("\tMOVQ ldc+32(FP), DX")
	g.p("\tSHLQ $2, DX")
	g.p("\tMOVQ bstep+40(FP), R11")
	g.p("\tSHLQ $2, R11")
	g.p("\tMOVQ $64, R8")
	g.p("\tMOVQ $128, R9")
	g.tileLoad(4, rSI, rR8, 0)
	// R14 is the next panel to prefetch, R15 the panels left in its row of
	// tiles; the first stripAhead go before any product.
	g.p("\tMOVQ R13, R14")
	g.p("\tMOVQ CX, R15")
	g.p("\tMOVQ $%d, R8", stripAhead)
	g.p("%s_ahead:", name)
	g.prefetchNext(name + "_pf")
	g.p("\tDECQ R8")
	g.p("\tJNZ %s_ahead", name)
	for u := range 2 {
		g.p("%s_slot%d:", name, u)
		g.p("\tTESTQ CX, CX")
		g.p("\tJZ %s_drain%d", name, u)
		g.prefetchNext(fmt.Sprintf("%s_pf%d", name, u))
		for v, t := range pairs[u] {
			g.raw(fmt.Sprintf("tilezero tmm%d", t), amxOp(0x49, 3, t, 0, 0, 0, 0, 0))
			g.tileLoad(6+v, rBX, rR9, 64*v)
			g.tdpbf16(t, 4, 6+v)
		}
		g.p("\tADDQ R11, BX")
		g.p("\tDECQ CX")
		// The panel before this one, if any, is now stored.
		g.p("\tMOVQ AX, R12")
		g.p("\tSUBQ CX, R12")
		g.p("\tCMPQ R12, $2")
		g.p("\tJLT %s_slot%d", name, 1-u)
		g.stripStore(pairs[1-u])
		if u == 1 { // slot 0 runs on into slot 1
			g.p("\tJMP %s_slot0", name)
		}
	}
	// Nothing left to compute at slot u: the panel before, if any, is in
	// pair 1-u.
	for u := range 2 {
		g.p("%s_drain%d:", name, u)
		g.p("\tTESTQ AX, AX")
		g.p("\tJZ %s_done", name)
		g.stripStore(pairs[1-u])
		g.p("\tRET")
	}
	g.p("%s_done:", name)
	g.p("\tRET")
	g.p("")
}

// stripAhead is how many panels ahead kernStripAMX prefetches C: with the
// tiles fitted to k, 2, 3, 4 and 6 measured slower, and no prefetch slower
// still.
const stripAhead = 1

// stripStore emits kernStripAMX's store of a pair of C tiles at R13, the
// oldest panel not stored, and the step to the next.
func (g *gen) stripStore(pair [2]int) {
	g.tileStore(pair[0], 13, rDX, 0)
	g.tileStore(pair[1], 13, rDX, 64)
	g.p("\tADDQ $128, R13")
	g.p("\tDECQ AX")
}

// prefetchNext emits kernStripAMX's prefetch of the panel of C at R14, its
// 16 rows of two lines, and R14's step to the next panel: the next row of
// tiles after the last (R15 panels left in the row), through R10 and R12.
func (g *gen) prefetchNext(loop string) {
	g.p("\tMOVQ R14, R10")
	g.p("\tMOVQ $16, R12")
	g.p("%s:", loop)
	g.p("\tPREFETCHT0 (R10)")
	g.p("\tPREFETCHT0 64(R10)")
	g.p("\tADDQ DX, R10")
	g.p("\tDECQ R12")
	g.p("\tJNZ %s", loop)
	g.p("\tADDQ $128, R14")
	g.p("\tDECQ R15")
	g.p("\tJNZ %s_on", loop)
	g.p("\tMOVQ panels+0(FP), R15")
	g.p("\tMOVQ R15, R12")
	g.p("\tSHLQ $7, R12")
	g.p("\tSUBQ R12, R14") // back to the row's first panel
	g.p("\tMOVQ DX, R12")
	g.p("\tSHLQ $4, R12")
	g.p("\tADDQ R12, R14") // and 16 rows down
	g.p("%s_on:", loop)
}

// amxFMAKernel emits kern16xNAMXFMA, N = 16·nv: the amx kernels' sums
// (kernAMXGo's steps) in VFMADD231PS on the amx sets' panels, for CPUs
// without AMX. MXCSR's FTZ flushes each denormal sum as TDPBF16PS does (the
// packed operands hold no denormals), and is restored for the amx
// epilogue. Per chunk of 16 pairs and block of 8/nv rows, the even and odd
// sums (Z0-Z15) start at zero and take one FMA a pair, A's pair broadcast
// and split into its two halves as B's lanes are; then the tile in the
// frame takes acc += even + odd, each operand order the Go model's.
func (g *gen) amxFMAKernel(nv int) {
	name := fmt.Sprintf("kern16x%dAMXFMA", 16*nv)
	pw, rows := 16*nv, 8/nv
	frame := 16 * pw * 4
	ev := func(r, v int) int { return 2 * (r*nv + v) }
	g.p("// func %s(k int, a, b, c *float32, ldc int, alpha, beta float32)", name)
	g.p("TEXT ·%s(SB), 0, $%d-48", name, frame+16)
	g.kernArgs("SI")
	g.p("\tADDQ $31, CX")
	g.p("\tSHRQ $5, CX") // chunks
	g.p("\tSTMXCSR %d(SP)", frame)
	g.p("\tMOVL %d(SP), AX", frame)
	g.p("\tORL $0x8000, AX") // FTZ
	g.p("\tMOVL AX, %d(SP)", frame+4)
	g.p("\tLDMXCSR %d(SP)", frame+4)
	g.p("\tVPXORD Z0, Z0, Z0")
	for i := range 16 * nv {
		g.p("\tVMOVUPS Z0, %d(SP)", 64*i)
	}
	g.p("\tMOVL $0xffff0000, AX")
	g.p("\tVPBROADCASTD AX, Z31")
	g.p("%s_chunk:", name)
	for rb := range 16 / rows {
		for i := range 2 * rows * nv {
			g.p("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
		}
		g.p("\tLEAQ %d(SI), AX", 64*rows*rb)
		g.p("\tMOVQ BX, R10")
		g.p("\tMOVQ $16, R9")
		loop := fmt.Sprintf("%s_rows%d", name, rb)
		g.p("%s:", loop)
		for v := range nv {
			be, bo := 16+2*v, 17+2*v
			g.p("\tVMOVDQU32 %d(R10), Z%d", 64*v, be)
			g.p("\tVPANDD Z31, Z%d, Z%d", be, bo)
			g.p("\tVPSLLD $16, Z%d, Z%d", be, be)
		}
		for r := range rows {
			g.p("\tVPBROADCASTD %d(AX), Z20", 64*r)
			g.p("\tVPSLLD $16, Z20, Z21")
			g.p("\tVPANDD Z31, Z20, Z22")
			for v := range nv {
				g.p("\tVFMADD231PS Z%d, Z21, Z%d", 16+2*v, ev(r, v))
				g.p("\tVFMADD231PS Z%d, Z22, Z%d", 17+2*v, ev(r, v)+1)
			}
		}
		g.p("\tADDQ $4, AX")
		g.p("\tADDQ $%d, R10", pw*4)
		g.p("\tDECQ R9")
		g.p("\tJNZ %s", loop)
		for r := range rows {
			for v := range nv {
				off := (rows*rb+r)*pw*4 + 64*v
				g.p("\tVADDPS Z%d, Z%d, Z%d", ev(r, v)+1, ev(r, v), ev(r, v))
				g.p("\tVMOVUPS %d(SP), Z23", off)
				g.p("\tVADDPS Z%d, Z23, Z23", ev(r, v))
				g.p("\tVMOVUPS Z23, %d(SP)", off)
			}
		}
	}
	g.p("\tADDQ $1024, SI")
	g.p("\tADDQ $%d, BX", 16*pw*4)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s_chunk", name)
	g.p("\tLDMXCSR %d(SP)", frame)
	g.p("\tMOVQ SP, SI")
	g.amxEpilogue(name, nv)
}

// amxConfigure emits amxConfigure(pairs int): LDTILECFG of the amx
// kernels' tiles (palette 1; colsb at 16+2t, rows at 48+t for tile t),
// unless STTILECFG finds them so: C tiles 0-3 16 rows of 64 bytes, A's
// tile 4 16 rows of pairs·4 bytes, B's 5-7 pairs rows of 64 bytes. With
// fewer than 16 pairs (a k of one chunk) the tiles read only k's pairs,
// all a B panel then holds (bDepth): the bits are those of 16 pairs with
// zero padding, whose products add +0 to sums that are never -0.
func (g *gen) amxConfigure() {
	g.p("// func amxConfigure(pairs int)")
	g.p("TEXT ·amxConfigure(SB), NOSPLIT, $128-8")
	g.p("\tVPXORD Z0, Z0, Z0")
	g.p("\tVMOVDQU64 Z0, 0(SP)")
	g.p("\tMOVB $1, 0(SP)")
	g.p("\tMOVQ pairs+0(FP), AX")
	for t := range 8 {
		switch {
		case t == 4:
			g.p("\tLEAQ (AX*4), BX")
			g.p("\tMOVW BX, %d(SP)", 16+2*t)
			g.p("\tMOVB $16, %d(SP)", 48+t)
		case t > 4:
			g.p("\tMOVW $64, %d(SP)", 16+2*t)
			g.p("\tMOVB AX, %d(SP)", 48+t)
		default:
			g.p("\tMOVW $64, %d(SP)", 16+2*t)
			g.p("\tMOVB $16, %d(SP)", 48+t)
		}
	}
	// The thread's tiles may still hold this configuration from a last
	// run (amxEnd leaves them): LDTILECFG costs ~190 cycles, STTILECFG
	// and a compare much less.
	g.raw("sttilecfg [rsp+64]", amxOp(0x49, 1, 0, 0, -1, rSP, -1, 64))
	g.p("\tVMOVDQU64 0(SP), Z0")
	g.p("\tVMOVDQU64 64(SP), Z1")
	g.p("\tVPCMPEQQ Z0, Z1, K1")
	g.p("\tKORTESTB K1, K1")
	g.p("\tJCS amxConfigure_same")
	g.p("\tMOVQ SP, AX")
	g.raw("ldtilecfg [rax]", amxOp(0x49, 0, 0, 0, -1, rAX, -1, 0))
	g.p("amxConfigure_same:")
	g.ret()
	g.p("")
}

// transpose16 emits the transpose of Z0..Z15 (rows of 16 lanes) into
// Z0..Z15 (columns), with Z16..Z31 as scratch.
func (g *gen) transpose16() {
	g.unpack4x4(16, 0, 16, 0)
	// Now Z(4i+j) lane L holds column 4L+j of rows 4i..4i+3.
	for j := range 4 {
		s := 16 + 4*j
		g.shuf128(0x44, 0xEE, 4+j, j, s, s+1)
		g.shuf128(0x44, 0xEE, 12+j, 8+j, s+2, s+3)
	}
	for j := range 4 {
		s := 16 + 4*j
		g.shuf128(0x88, 0xDD, s+2, s, j, 4+j)
		g.shuf128(0x88, 0xDD, s+3, s+1, 8+j, 12+j)
	}
}

// unpack4x4 emits the in-lane steps of a transpose of the n rows (n a
// multiple of 4) in Z(src).., through Z(tmp)..: after it Z(dst+4i+j) lane
// L (of 128 bits) holds column 4L+j of rows 4i..4i+3.
func (g *gen) unpack4x4(n, src, tmp, dst int) {
	// Go operand order is reversed: OP src2, src1, dst.
	for i := range n / 2 {
		g.p("\tVUNPCKLPS Z%d, Z%d, Z%d", src+2*i+1, src+2*i, tmp+2*i)
		g.p("\tVUNPCKHPS Z%d, Z%d, Z%d", src+2*i+1, src+2*i, tmp+2*i+1)
	}
	for i := range n / 4 {
		t := tmp + 4*i
		g.p("\tVUNPCKLPD Z%d, Z%d, Z%d", t+2, t, dst+4*i)
		g.p("\tVUNPCKHPD Z%d, Z%d, Z%d", t+2, t, dst+4*i+1)
		g.p("\tVUNPCKLPD Z%d, Z%d, Z%d", t+3, t+1, dst+4*i+2)
		g.p("\tVUNPCKHPD Z%d, Z%d, Z%d", t+3, t+1, dst+4*i+3)
	}
}

// shuf128 emits VSHUFF32X4 of Z hi and Z lo by imm0 into Z d0 and by imm1
// into Z d1, the two halves of a 128-bit-lane shuffle.
func (g *gen) shuf128(imm0, imm1, hi, lo, d0, d1 int) {
	g.p("\tVSHUFF32X4 $0x%02X, Z%d, Z%d, Z%d", imm0, hi, lo, d0)
	g.p("\tVSHUFF32X4 $0x%02X, Z%d, Z%d, Z%d", imm1, hi, lo, d1)
}

// amxCols emits amxColsAVX512(dst, src *float32, lds, kc, nn int), the amx
// set's A packer from columns of steps (op(A) = Aᵀ): amxRowsAVX512's
// layout, step p of row r at src[p*lds+r]. A chunk's rows 2q and 2q+1 make
// pair vector q (VCVTNE2PS2BF16, VPERMW, as copyPairsAVX512), and the 16
// pair vectors transposed are the chunk's 16 rows.
func (g *gen) amxCols() {
	const name = "amxColsAVX512"
	g.packHeader(name, false)
	g.p("\tMOVQ nn+32(FP), CX")
	g.ones("L", "AX")
	g.p("\tKMOVW AX, K1") // the nn columns
	g.p("%s_chunk:", name)
	g.amxChunk(name)
	g.p("\tVMOVDQU64 pairIdx<>(SB), Z31")
	g.p("\tMOVQ SI, AX")
	for q := range 16 {
		g.p("\tCMPQ CX, $%d", 2*q)
		g.p("\tJLE %s_zero%d", name, q)
		g.p("\tVMOVUPS.Z (AX), K1, Z%d", q)
		g.p("\tVPXORD Z16, Z16, Z16")
		g.p("\tCMPQ CX, $%d", 2*q+1)
		g.p("\tJLE %s_cvt%d", name, q)
		g.p("\tVMOVUPS.Z (AX)(R8*1), K1, Z16")
		g.p("%s_cvt%d:", name, q)
		g.cvt2(q, 16, q)
		g.p("\tVPERMW Z%d, Z31, Z%d", q, q)
		g.p("\tLEAQ (AX)(R8*2), AX")
		g.p("\tJMP %s_next%d", name, q)
		g.p("%s_zero%d:", name, q)
		g.p("\tVPXORD Z%d, Z%d, Z%d", q, q, q)
		g.p("%s_next%d:", name, q)
	}
	g.transpose16()
	for r := range 16 {
		g.p("\tVMOVDQU32 Z%d, %d(DI)", r, 64*r)
	}
	g.p("\tADDQ $1024, DI")
	g.p("\tMOVQ R8, AX")
	g.p("\tSHLQ $5, AX")
	g.p("\tADDQ AX, SI") // 32 steps on
	g.nextChunk(name)
}

// packHeader emits the start of a packer func(dst, src *float32, lds, kc,
// nn int), or with pw func(dst, src *float32, lds, kc, nn, pw int): DI =
// dst, SI = src, R8 = lds in bytes, R9 = kc.
func (g *gen) packHeader(name string, pw bool) {
	if pw {
		g.p("// func %s(dst, src *float32, lds, kc, nn, pw int)", name)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	} else {
		g.p("// func %s(dst, src *float32, lds, kc, nn int)", name)
		g.p("TEXT ·%s(SB), NOSPLIT, $0-40", name)
	}
	g.packArgs()
	g.p("\tMOVQ kc+24(FP), R9")
}

// packArgs loads a packer's first arguments: DI = dst, SI = src, R8 = lds
// in bytes.
func (g *gen) packArgs() {
	g.p("\tMOVQ dst+0(FP), DI")
	g.p("\tMOVQ src+8(FP), SI")
	g.p("\tMOVQ lds+16(FP), R8")
	g.p("\tSHLQ $2, R8")
}

// amxChunk emits CX = min(32, R9), the steps of the chunk at hand.
func (g *gen) amxChunk(name string) {
	g.p("\tMOVQ R9, CX")
	g.minCX(32, name+"_n")
}

// nextChunk closes an amx packer's loop over chunks (amxChunk): kc less
// the chunk's CX steps, on while any remain.
func (g *gen) nextChunk(name string) {
	g.p("\tSUBQ CX, R9")
	g.p("\tJNZ %s_chunk", name)
	g.ret()
	g.p("")
}

// amxRows emits amxRowsAVX512(dst, src *float32, lds, kc, nn int), the amx
// set's A packer from rows of steps (op(A) = A): 16 rows (rows nn..15
// zero) of kc steps, src's row r at src[r*lds:], in chunks of 32 steps at
// word 256·chunk, each 16 rows of 16 pairs (zero past kc): a row's 32
// floats rounded to bf16 by one VCVTNE2PS2BF16 are its pairs.
func (g *gen) amxRows() {
	const name = "amxRowsAVX512"
	g.packHeader(name, false)
	g.p("\tMOVQ nn+32(FP), R10")
	g.p("\tVPXORD Z3, Z3, Z3")
	g.p("%s_chunk:", name)
	g.amxChunk(name)
	g.ones("Q", "DX")
	g.asm(name, `
	KMOVW DX, K1
	SHRQ $16, DX
	KMOVW DX, K2
	MOVQ SI, AX
	MOVQ DI, BX
	XORQ R11, R11
NAME_row:
	CMPQ R11, R10
	JGE NAME_zero
	VMOVUPS.Z (AX), K1, Z0
	VMOVUPS.Z 64(AX), K2, Z1`)
	g.cvt2(2, 1, 0)
	// 32 floats of each row on, a chunk of 16 rows of 16 pairs written
	g.asm(name, `
	VMOVDQU32 Z2, (BX)
	JMP NAME_next
NAME_zero:
	VMOVDQU32 Z3, (BX)
NAME_next:
	ADDQ R8, AX
	ADDQ $64, BX
	INCQ R11
	CMPQ R11, $16
	JLT NAME_row
	ADDQ $128, SI
	ADDQ $1024, DI`)
	g.nextChunk(name)
}

// amxEpilogue emits C = alpha*acc + beta*C for a kernel whose 16 rows of
// nv vectors of acc lie at SI (its frame), as the bf16 epilogue does it.
func (g *gen) amxEpilogue(name string, nv int) {
	g.p("\tVBROADCASTSS alpha+40(FP), Z31")
	g.p("\tMOVQ $16, CX")
	g.betaZero("R9", "JZ", name+"_beta0")
	g.p("\tVBROADCASTSS beta+44(FP), Z30")
	g.p("%s_row:", name)
	for v := range nv {
		g.p("\tVMULPS %d(DI), Z30, Z1", 64*v)
		g.p("\tVMULPS %d(SI), Z31, Z0", 64*v)
		g.p("\tVADDPS Z1, Z0, Z1")
		g.p("\tVMOVUPS Z1, %d(DI)", 64*v)
	}
	g.amxNextRow(name+"_row", nv)
	g.p("%s_beta0:", name)
	for v := range nv {
		g.p("\tVMULPS %d(SI), Z31, Z0", 64*v)
		g.p("\tVMOVUPS Z0, %d(DI)", 64*v)
	}
	g.amxNextRow(name+"_beta0", nv)
	g.p("")
}

func (g *gen) amxNextRow(loop string, nv int) {
	g.p("\tADDQ DX, DI")
	g.p("\tADDQ $%d, SI", 64*nv)
	g.p("\tDECQ CX")
	g.p("\tJNZ %s", loop)
	g.ret()
}

// transPanel emits transPanelAVX512(dst, src *float32, lds, kc, nn, pw int):
// dst[p*pw+c] = src[c*lds+p] for p < kc and c < nn, and 0 for nn <= c < pw. It
// packs a B micro-panel from Bᵀ storage and an A micro-panel from A storage,
// 16×16 blocks at a time, with masked loads and stores at the edges.
//
// With bf16 it emits transPairsAVX512, the same with steps p in bf16 pairs:
// dst[q*pw+c] holds src[c*lds+2q] and src[c*lds+2q+1] rounded to bf16 (low
// and high half; 0 past kc), 32 floats of a row becoming 16 pairs.
func (g *gen) transPanel(bf16 bool) {
	name := "transPanelAVX512"
	if bf16 {
		name = "transPairsAVX512"
	}
	g.packHeader(name, true)
	g.pwArg()
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
	g.ones("L", "AX")
	g.p("\tKMOVW AX, K3")
	// AX = src + c0*lds (first row of this block of columns); BX = dst + c0*4.
	g.p("\tMOVQ R12, AX")
	g.p("\tIMULQ R8, AX")
	g.p("\tADDQ SI, AX")
	g.p("\tLEAQ (DI)(R12*4), BX")
	g.ploop(name, "_cnext")
	g.loadRows(name, 16, "AX", bf16)
	g.transpose16()
	// Store columns j < cnt (Zj holds step p0+j, or pair p0/2+j) at
	// dst[(p0+j)*pw + c0].
	g.p("\tMOVQ R13, DX")
	if bf16 {
		g.p("\tSHRQ $1, DX")
	}
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
	g.p("\tADDQ $%d, R13", g.rowFloats(bf16))
	g.p("\tJMP %s_ploop", name)
	g.p("%s_cnext:", name)
	g.p("\tADDQ $16, R12")
	g.p("\tJMP %s_cloop", name)
	g.p("%s_done:", name)
	g.ret()
	g.p("")
}

// pwArg loads a packer's pw: R11 = pw, R15 = dst's row stride in bytes.
func (g *gen) pwArg() {
	g.p("\tMOVQ pw+40(FP), R11")
	g.p("\tMOVQ R11, R15")
	g.p("\tSHLQ $2, R15")
}

// nextRow steps copyPanel a row on (R8 bytes in src, R15 in dst) and loops
// to label while R9 rows remain.
func (g *gen) nextRow(label string) {
	g.p("\tADDQ R8, SI")
	g.p("\tADDQ R15, DI")
	g.p("\tDECQ R9")
	g.p("\tJNZ %s", label)
}

// rowFloats is how many floats of a source row the transposing packers
// read at a time: 16 steps, or 16 pairs of steps.
func (g *gen) rowFloats(bf16 bool) int {
	if bf16 {
		return 32
	}
	return 16
}

// ploop opens a transposing packer's loop over its blocks of steps, from
// p0 (R13) = 0 while p0 < kc (R9), leaving to name+exit.
func (g *gen) ploop(name, exit string) {
	g.p("\tXORQ R13, R13")
	g.p("%s_ploop:", name)
	g.p("\tCMPQ R13, R9")
	g.p("\tJGE %s%s", name, exit)
}

// loadRows emits a transposing packer's load of one block: rows i < R14
// (of rows) from base+4*p0, then on by R8 a row, each 16 floats (masked to the CX left in
// the row, kc-p0 with p0 in R13), into Zi; rows past R14 zero. With bf16
// each row is 32 floats (masks K1, K4), rounded to 16 bf16 pairs, and CX is
// left as the pairs: (floats+1)/2. The block is then at name_t.
func (g *gen) loadRows(name string, rows int, base string, bf16 bool) {
	span := g.rowFloats(bf16)
	g.p("\tMOVQ R9, CX")
	g.p("\tSUBQ R13, CX")
	g.minCX(span, name+"_lm")
	// K1 = lanes of the CX floats left (K4: of floats 16-31, with bf16).
	g.ones("Q", "DX")
	g.p("\tKMOVW DX, K1")
	if bf16 {
		g.p("\tSHRQ $16, DX")
		g.p("\tKMOVW DX, K4")
	}
	// Load rows i < rows (masked to cnt), zero the rest; whole blocks
	// without masks.
	g.p("\tLEAQ (%s)(R13*4), DX", base)
	load := func(i int, masked bool) {
		switch {
		case !bf16 && masked:
			g.p("\tVMOVUPS.Z (DX), K1, Z%d", i)
		case !bf16:
			g.p("\tVMOVUPS (DX), Z%d", i)
		case masked:
			g.p("\tVMOVUPS.Z (DX), K1, Z%d", i)
			g.p("\tVMOVUPS.Z 64(DX), K4, Z31")
			g.cvt2(i, 31, i)
		default:
			g.p("\tVMOVUPS (DX), Z%d", i)
			g.p("\tVMOVUPS 64(DX), Z31")
			g.cvt2(i, 31, i)
		}
	}
	g.p("\tCMPQ CX, $%d", span)
	g.p("\tJNE %s_lmasked", name)
	g.p("\tCMPQ R14, $%d", rows)
	g.p("\tJLT %s_lmasked", name)
	for i := range rows {
		load(i, false)
		if i < rows-1 {
			g.p("\tADDQ R8, DX")
		}
	}
	g.p("\tJMP %s_t", name)
	g.p("%s_lmasked:", name)
	for i := range rows {
		g.p("\tCMPQ R14, $%d", i)
		g.p("\tJLE %s_z%d", name, i)
		load(i, true)
		if i < rows-1 {
			g.p("\tADDQ R8, DX")
		}
	}
	g.p("\tJMP %s_t", name)
	for i := range rows {
		g.p("%s_z%d:", name, i)
		g.p("\tVPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	g.p("%s_t:", name)
	if bf16 {
		g.p("\tINCQ CX")
		g.p("\tSHRQ $1, CX")
	}
}

// transPanel8 emits transPanel8AVX512(dst, src *float32, lds, kc, nn int),
// transPanel for pw = 8 (an A micro-panel from A storage): 8 rows of 16 steps
// become 8 full vectors of 2 steps each, so no store is masked but the last.
// With bf16 it emits transPairs8AVX512, transPairsAVX512 for pw = 8.
func (g *gen) transPanel8(bf16 bool) {
	name := "transPanel8AVX512"
	if bf16 {
		name = "transPairs8AVX512"
	}
	g.packHeader(name, false)
	g.p("\tMOVQ nn+32(FP), R14")
	g.p("\tMOVL $0xff, AX")
	g.p("\tKMOVW AX, K2")
	g.ploop(name, "_done")
	g.loadRows(name, 8, "SI", bf16)
	g.unpack4x4(8, 0, 8, 16)
	// Z(16+j) lane L: column 4L+j of rows 0..3; Z(20+j): of rows 4..7.
	for j := range 4 {
		g.shuf128(0x44, 0xEE, 20+j, 16+j, 24+2*j, 24+2*j+1)
	}
	// Output q (columns 2q, 2q+1) for j pair (0,1) and (2,3).
	for pair := range 2 {
		a, b := 24+4*pair, 26+4*pair // shuffles of j = 2·pair and 2·pair+1
		// columns 4L + 2·pair, 4L + 2·pair + 1 for L = 0..3 → q = 2L + pair
		g.shuf128(0x88, 0xDD, b, a, 0*2+pair, 1*2+pair)
		g.shuf128(0x88, 0xDD, b+1, a+1, 2*2+pair, 3*2+pair)
	}
	// Store: dst + p0*32 + q*64 (p0/2 pairs: dst + p0*16 + q*64).
	g.p("\tMOVQ R13, DX")
	if bf16 {
		g.p("\tSHLQ $4, DX")
	} else {
		g.p("\tSHLQ $5, DX")
	}
	g.p("\tADDQ DI, DX")
	g.p("\tCMPQ CX, $16")
	g.p("\tJLT %s_tail", name)
	for q := range 8 {
		g.p("\tVMOVUPS Z%d, %d(DX)", q, 64*q)
	}
	g.p("\tADDQ $%d, R13", g.rowFloats(bf16))
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
	g.p("%s_done:", name)
	g.ret()
	g.p("")
}

// copyHeader emits the start of copyPanelAVX512 or copyPairsAVX512: the
// arguments (DI dst, SI src, R8 src's row stride in bytes, R9 kc, R10 nn,
// R11 pw, R15 dst's row stride in bytes) and the masks of the vectors of a
// row: K1..K3 load lanes (columns < nn), K4..K6 store lanes (columns < pw).
func (g *gen) copyHeader(name string) {
	g.packHeader(name, true)
	g.p("\tMOVQ nn+32(FP), R10")
	g.pwArg()
	// lanes(x, v) = clamp(x-16v, 0, 16).
	mask := func(src string, v int, k string) {
		g.p("\tMOVQ %s, CX", src)
		g.p("\tSUBQ $%d, CX", 16*v)
		g.p("\tXORQ AX, AX")
		g.p("\tCMPQ CX, $0")
		g.p("\tJLE %s_m%s", name, k)
		g.p("\tMOVQ $0xffff, AX")
		g.p("\tCMPQ CX, $16")
		g.p("\tJGE %s_m%s", name, k)
		g.ones("L", "AX")
		g.p("%s_m%s:", name, k)
		g.p("\tKMOVW AX, %s", k)
	}
	for v := range 3 {
		mask("R10", v, fmt.Sprintf("K%d", 1+v))
		mask("R11", v, fmt.Sprintf("K%d", 4+v))
	}
}

// copyPairsLoop emits the loop of copyPairs for panels of nv vectors,
// from label name: over R9 steps from SI (R8 bytes a step) into DI (R15
// bytes a pair of steps), loads and stores masked by K1-K3 and K4-K6
// unless whole, then end.
func (g *gen) copyPairsLoop(name string, nv int, whole bool, end func()) {
	load := func(v int, base string) {
		if whole {
			g.p("\tVMOVUPS %d(%s), Z%d", 64*v, base, v)
		} else {
			g.p("\tVMOVUPS.Z %d(%s), K%d, Z%d", 64*v, base, 1+v, v)
		}
	}
	g.p("%s:", name)
	g.p("\tCMPQ R9, $2")
	g.p("\tJLT %s_tail", name)
	g.p("\tLEAQ (SI)(R8*1), AX")
	for v := range nv {
		load(v, "SI")
		if whole {
			g.p("\tVMOVUPS %d(AX), Z%d", 64*v, 3+v)
		} else {
			g.p("\tVMOVUPS.Z %d(AX), K%d, Z%d", 64*v, 1+v, 3+v)
		}
	}
	g.p("%s_body:", name)
	for v := range nv {
		g.cvt2(v, 3+v, v)
		g.p("\tVPERMW Z%d, Z6, Z%d", v, v)
		if whole {
			g.p("\tVMOVUPS Z%d, %d(DI)", v, 64*v)
		} else {
			g.p("\tVMOVUPS Z%d, K%d, %d(DI)", v, 4+v, 64*v)
		}
	}
	g.p("\tLEAQ (SI)(R8*2), SI")
	g.p("\tADDQ R15, DI")
	g.p("\tSUBQ $2, R9")
	g.p("\tJMP %s", name)
	// An odd last step pairs with zeros.
	g.p("%s_tail:", name)
	g.p("\tCMPQ R9, $1")
	g.p("\tJNE %s_done", name)
	for v := range nv {
		load(v, "SI")
		g.p("\tVPXORD Z%d, Z%d, Z%d", 3+v, 3+v, 3+v)
	}
	g.p("\tJMP %s_body", name)
	g.p("%s_done:", name)
	end()
}

// copyPairs emits copyPairsAVX512(dst, src *float32, lds, kc, nn, pw int),
// copyPanel in bf16 pairs: dst[q*pw+c] holds src[2q*lds+c] and
// src[(2q+1)*lds+c] rounded to bf16 (low and high half; 0 past kc) for
// c < nn, and 0 for nn <= c < pw, with pw <= 48. It packs a B micro-panel
// from B storage and an A micro-panel from Aᵀ storage: two rows of 16
// floats become one vector of 32 bf16 (VCVTNE2PS2BF16), interleaved into
// pairs by VPERMW.
func (g *gen) copyPairs() {
	const name = "copyPairsAVX512"
	g.copyHeader(name)
	g.p("\tVMOVDQU64 pairIdx<>(SB), Z6")
	// A panel narrower than 48 columns converts only its vectors:
	// VCVTNE2PS2BF16 is slow here, and the amx set's panels are 32 wide.
	g.p("\tCMPQ R11, $16")
	g.p("\tJLE %s_1", name)
	g.p("\tCMPQ R11, $32")
	g.p("\tJLE %s_2", name)
	for nv := 3; nv >= 1; nv-- {
		g.copyPairsLoop(fmt.Sprintf("%s_%d", name, nv), nv, false, g.ret)
	}
	g.p("")
	// Word 2j of a pair vector is word j of the converted rows (row 2q),
	// word 2j+1 is word 16+j (row 2q+1).
	for c := range 8 {
		var x uint64
		for w := range 4 {
			i := 4*c + w
			x |= uint64(i/2+16*(i%2)) << (16 * w)
		}
		g.p("DATA pairIdx<>+%d(SB)/8, $0x%016x", 8*c, x)
	}
	g.p("GLOBL pairIdx<>(SB), RODATA|NOPTR, $64")
	g.p("")
}

// copyPairs32 emits copyPairs32AVX512(dst, src *float32, lds, kc, panels,
// dstep int): copyPairs of panels whole panels of 32 columns side by side,
// the panels dstep floats apart in dst, in one call: at small k a call a
// panel cost more than its conversions.
func (g *gen) copyPairs32() {
	const name = "copyPairs32AVX512"
	g.p("// func %s(dst, src *float32, lds, kc, panels, dstep int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.packArgs()
	g.p("\tMOVQ panels+32(FP), R10")
	g.p("\tMOVQ dstep+40(FP), R11")
	g.p("\tSHLQ $2, R11")
	g.p("\tMOVQ $128, R15")
	g.p("\tVMOVDQU64 pairIdx<>(SB), Z6")
	g.p("%s_panel:", name)
	g.p("\tMOVQ DI, R12")
	g.p("\tMOVQ SI, R13")
	g.p("\tMOVQ kc+24(FP), R9")
	g.copyPairsLoop(name+"_row", 2, true, func() {
		g.p("\tLEAQ (R12)(R11*1), DI")
		g.p("\tLEAQ 128(R13), SI")
		g.p("\tDECQ R10")
		g.p("\tJNZ %s_panel", name)
		g.ret()
	})
	g.p("")
}

// copyPanel emits copyPanelAVX512(dst, src *float32, lds, kc, nn, pw int):
// dst[p*pw+c] = src[p*lds+c] for p < kc and c < nn, and 0 for nn <= c < pw,
// with pw <= 48. It packs a B micro-panel from B storage and an A micro-panel
// from Aᵀ storage.
func (g *gen) copyPanel() {
	const name = "copyPanelAVX512"
	g.copyHeader(name)
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
		g.nextRow(fmt.Sprintf("%s_full%d", name, nv))
		g.p("\tJMP %s_done", name)
	}
	g.p("%s_loop:", name)
	for v := range 3 {
		g.p("\tVMOVUPS.Z %d(SI), K%d, Z%d", 64*v, 1+v, v)
	}
	for v := range 3 {
		g.p("\tVMOVUPS Z%d, K%d, %d(DI)", v, 4+v, 64*v)
	}
	g.nextRow(name + "_loop")
	g.p("%s_done:", name)
	g.ret()
	g.p("")
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
		g.kernel(fmt.Sprintf("kern8x%dAVX512", nv*16), 8, nv, "Z", false, 0, true, false, false)
	}
	g.kernel("kern8x48PfAVX512", 8, 3, "Z", false, 0, true, true, false)
	g.kernel("kern8x48PackAVX512", 8, 3, "Z", true, 8, true, false, false)
	g.transPanel(false)
	g.transPanel8(false)
	g.copyPanel()
	// AVX2 + FMA: 6 rows × 16 or 8 columns (12 or 6 accumulators).
	for nv := 2; nv >= 1; nv-- {
		g.kernel(fmt.Sprintf("kern6x%dAVX2", nv*8), 6, nv, "Y", false, 0, false, false, false)
	}
	// AVX512_BF16: the same 8×48, 8×32 and 8×16 tiles over bf16 pairs, and
	// the packers that round to them.
	for nv := 3; nv >= 1; nv-- {
		g.kernel(fmt.Sprintf("kern8x%dBF16", nv*16), 8, nv, "Z", false, 0, true, false, true)
	}
	g.transPanel(true)
	g.transPanel8(true)
	g.copyPairs()
	g.copyPairs32()
	// AMX: 16×32 and 16×16 tiles of TDPBF16PS.
	g.amxKernel(2)
	g.amxKernel(1)
	g.amxStrip()
	// The amx sets' sums without AMX, in FMAs.
	g.amxFMAKernel(2)
	g.amxFMAKernel(1)
	g.amxConfigure()
	g.amxRows()
	g.amxCols()
	if err := os.WriteFile("kernels_amd64.s", g.Bytes(), 0o644); err != nil {
		panic(err)
	}
}
