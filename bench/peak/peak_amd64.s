#include "textflag.h"

// Both loops clear their accumulators and two sources, then run CX rounds
// of one VFMADD231PS into each accumulator: independent chains, so that FMA
// throughput, not latency, bounds them. acc(op, x, y) lists the accumulators.
#define clear(r)      VXORPS r, r, r
#define zero(r, x, y) clear(r)
#define fma(r, x, y)  VFMADD231PS x, y, r
#define fmaLoop(acc, x, y) \
	acc(zero, x, y); \
	clear(x); \
	clear(y); \
loop: \
	acc(fma, x, y); \
	DECQ CX; \
	JNZ  loop; \
	VZEROUPPER; \
	RET

#define zmm16(op, x, y) \
	op(Z0, x, y); op(Z1, x, y); op(Z2, x, y); op(Z3, x, y); \
	op(Z4, x, y); op(Z5, x, y); op(Z6, x, y); op(Z7, x, y); \
	op(Z8, x, y); op(Z9, x, y); op(Z10, x, y); op(Z11, x, y); \
	op(Z12, x, y); op(Z13, x, y); op(Z14, x, y); op(Z15, x, y)

// AVX2 has 16 YMM registers: 14 accumulators and the two sources.
#define ymm14(op, x, y) \
	op(Y0, x, y); op(Y1, x, y); op(Y2, x, y); op(Y3, x, y); \
	op(Y4, x, y); op(Y5, x, y); op(Y6, x, y); op(Y7, x, y); \
	op(Y8, x, y); op(Y9, x, y); op(Y10, x, y); op(Y11, x, y); \
	op(Y12, x, y); op(Y13, x, y)

// func fmaZMM(n int): 16 accumulators, 512 floating-point operations a round.
TEXT ·fmaZMM(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	fmaLoop(zmm16, Z16, Z17)

// func fmaYMM(n int): 14 accumulators, 224 floating-point operations a round.
TEXT ·fmaYMM(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	fmaLoop(ymm14, Y14, Y15)

// Go's assembler has no VDPBF16PS: dp(i) is VDPBF16PS Z17, Z16, Zi (Zi +=
// bf16 pairs of Z16 · Z17) in EVEX bytes, 62 [R̄X̄B̄R̄'00 10] [W0 v̄=16 1 F3]
// [0 512 0 V̄'] 52 [11 i 001]; objdump -d shows them.
#define dpLo(i) BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $(0xc1+8*i)
#define dpHi(i) BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $(0xc1+8*i)
#define dpbf16(op) \
	op(dpLo(0)); op(dpLo(1)); op(dpLo(2)); op(dpLo(3)); \
	op(dpLo(4)); op(dpLo(5)); op(dpLo(6)); op(dpLo(7)); \
	op(dpHi(0)); op(dpHi(1)); op(dpHi(2)); op(dpHi(3)); \
	op(dpHi(4)); op(dpHi(5)); op(dpHi(6)); op(dpHi(7))
#define indep(x) x
#define chain(x) dpLo(0)
#define chainLoop(body) \
	clear(Z0); \
	clear(Z16); \
	clear(Z17); \
loop: \
	body; \
	DECQ CX; \
	JNZ  loop; \
	VZEROUPPER; \
	RET

// func dpbf16ZMM(n int): 16 accumulators, 1024 floating-point operations a round.
TEXT ·dpbf16ZMM(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	chainLoop(dpbf16(indep))

// func dpbf16Chain(n int): 16 dependent VDPBF16PS into Z0 a round.
TEXT ·dpbf16Chain(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	chainLoop(dpbf16(chain))

#define fmaZ0(r, x, y) fma(Z0, x, y)

// func fmaChain(n int): 16 dependent VFMADD231PS into Z0 a round.
TEXT ·fmaChain(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	chainLoop(zmm16(fmaZ0, Z16, Z17))

// func addChain(n int): 16 dependent ADDQ a round, one cycle each (ADDQ AX,
// AX: a chain of immediate adds may be folded at rename).
TEXT ·addChain(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	XORQ AX, AX
loop:
	ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX
	ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX
	ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX
	ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX; ADDQ AX, AX
	DECQ CX
	JNZ  loop
	RET

// AMX in VEX bytes (Go's assembler has none; objdump -d shows them), tile
// registers by number, SI the base and DX the stride of a tile's rows.
#define ldtilecfgSI   BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x06
#define tileloadd(t)  BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $(0x04+8*t); BYTE $0x16
#define tilezero(t)   BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $(0xc0+8*t)
#define tilerelease   BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
// tdp(c, a, b) is TDPBF16PS tmm c, tmm a, tmm b: c += a·b (b in VEX.vvvv).
#define tdp(c, a, b)  BYTE $0xc4; BYTE $0xe2; BYTE $(8*(15-b)+2); BYTE $0x5c; BYTE $(0xc0+8*c+a)
#define tdpLoop(body) \
	ldtilecfgSI; \
	ADDQ $64, SI; \
	MOVQ $64, DX; \
	tileloadd(4); \
	tileloadd(5); \
	tileloadd(6); \
	tileloadd(7); \
	tilezero(0); \
	tilezero(1); \
	tilezero(2); \
	tilezero(3); \
loop: \
	body; \
	DECQ CX; \
	JNZ  loop; \
	tilerelease; \
	RET

// func tdpTiles(n int, tiles *byte): 4 TDPBF16PS into 4 C tiles a round
// (A tiles 4, 5 and B tiles 6, 7, 16 rows of 64 bytes each, from the 4 KB
// after the 64-byte configuration at tiles), 4·16·16·32·2 flops.
TEXT ·tdpTiles(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	MOVQ tiles+8(FP), SI
	tdpLoop(tdp(0, 4, 6); tdp(1, 4, 7); tdp(2, 5, 6); tdp(3, 5, 7))

// func tdpChain(n int, tiles *byte): 4 dependent TDPBF16PS into tile 0 a round.
TEXT ·tdpChain(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	MOVQ tiles+8(FP), SI
	tdpLoop(tdp(0, 4, 6); tdp(0, 4, 6); tdp(0, 4, 6); tdp(0, 4, 6))

// tilestored [rdi+rdx], t and [rdi+rdx+64], t: a 16×32 tile of C as two
// 16×16 halves side by side, rows DX bytes apart.
#define tilestored(t)   BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $(0x04+8*t); BYTE $0x17
#define tilestored64(t) BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $(0x44+8*t); BYTE $0x17; BYTE $0x40

// func tileCall(n int, tiles, c *byte): n times what the GEMM's amx kernel
// does for a 16×32 tile of C at k ≤ 32: clear two C tiles, load an A tile
// and two B tiles, two TDPBF16PS, store the C tiles (rows 128 bytes apart,
// into the 2 KB at c).
TEXT ·tileCall(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ tiles+8(FP), SI
	MOVQ c+16(FP), DI
	ldtilecfgSI
	ADDQ $64, SI
	MOVQ $128, DX
call:
	tilezero(0)
	tilezero(1)
	tileloadd(4)
	tileloadd(6)
	tdp(0, 4, 6)
	tileloadd(7)
	tdp(1, 4, 7)
	tilestored(0)
	tilestored64(1)
	DECQ CX
	JNZ  call
	tilerelease
	RET
