//go:build !purego

#include "textflag.h"

// Each kernel runs 32 floats (4 YMM) per step, then 8 at a time; n is a
// positive multiple of 8. Go operand order is Intel's reversed:
// VCMPPS $p, b, a, m sets m = a <p> b; VSUBPS b, a, d sets d = a - b.
// The gradient argument is named grad: g is a register name in Go assembly.

// A kernel's loop body is a list of lane steps s(o, a, b), each on the
// bytes at offset o of its pointers and the registers a and b. The 32-float
// loop runs each step on all four lanes before the next step (lanes), the
// 8-float loop on lane 0 alone (lane0): the tail computes as the main loop.
#define lanes(s) s(0, Y0, Y4); s(32, Y1, Y5); s(64, Y2, Y6); s(96, Y3, Y7)
#define lane0(s) s(0, Y0, Y4)

// loop runs body32 while CX >= 32 floats remain, then body8 while any do,
// and ends at label done with the upper halves cleared.
#define loop(body32, body8) \
	CMPQ CX, $32; \
	JB   tail; \
loop32: \
	body32; \
	SUBQ $32, CX; \
	CMPQ CX, $32; \
	JAE  loop32; \
tail: \
	TESTQ CX, CX; \
	JZ    done; \
loop8: \
	body8; \
	SUBQ $8, CX; \
	JNZ  loop8; \
done: \
	VZEROUPPER

// stream ends a kernel whose body(each) runs its lane steps with each and
// whose next(bytes) advances its pointers.
#define stream(body, next) loop(body(lanes); next(128), body(lane0); next(32)); RET

// Pointer advances by n bytes.
#define nextDI(n)     ADDQ $n, DI
#define nextSIDI(n)   ADDQ $n, SI; ADDQ $n, DI
#define nextSIDXDI(n) ADDQ $n, SI; ADDQ $n, DX; ADDQ $n, DI

// Lane steps more than one kernel takes.
#define loadSI(o, a, b)  VMOVUPS o(SI), a
#define loadDI(o, a, b)  VMOVUPS o(DI), a
#define addSI(o, a, b)   VADDPS o(SI), a, a
#define storeDI(o, a, b) VMOVUPS a, o(DI)

// mask = !(x <= 0) (NLE_UQ): true for x > 0 and for NaN.
#define reluMask(o, a, b) VCMPPS $0x16, Y15, a, b
#define reluAnd(o, a, b)  VANDPS a, b, a
#define relu(each)        each(loadSI); each(reluMask); each(reluAnd); each(storeDI)

// func reluAVX2(dst, x *float32, n int)
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y15, Y15, Y15
	stream(relu, nextSIDI)

// mask = x > 0 (GT_OQ): false for NaN.
#define reluBackMask(o, a, b) VCMPPS $0x1e, Y15, a, a
#define reluBackAnd(o, a, b)  VANDPS o(DX), a, a
#define reluBack(each)        each(loadSI); each(reluBackMask); each(reluBackAnd); each(storeDI)

// func reluBackwardAVX2(dst, dy, x *float32, n int)
TEXT ·reluBackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dy+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	VXORPS Y15, Y15, Y15
	stream(reluBack, nextSIDXDI)

// Lanes whose exponent bits are all set become all ones; the 32-float body
// ORs its four lanes into Y0 to test them at once.
#define finiteAnd(o, a, b) VPAND o(SI), Y15, a
#define finiteCmp(o, a, b) VPCMPEQD Y15, a, a
#define finite(each)       each(finiteAnd); each(finiteCmp)
#define finiteOr           VPOR Y1, Y0, Y0; VPOR Y3, Y2, Y2; VPOR Y2, Y0, Y0
#define finiteTest(n)      VPTEST Y0, Y0; JNZ notfinite; ADDQ $n, SI

// func allFiniteAVX2(x *float32, n int) bool
TEXT ·allFiniteAVX2(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	MOVD AX, X15
	VPBROADCASTD X15, Y15
	loop(finite(lanes); finiteOr; finiteTest(128), finite(lane0); finiteTest(32))
	MOVB $1, ret+16(FP)
	RET

notfinite:
	VZEROUPPER
	MOVB $0, ret+16(FP)
	RET

#define add(each) each(loadDI); each(addSI); each(storeDI)

// func addAVX2(dst, x *float32, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	stream(add, nextSIDI)

// t = lr*g (rounded), then w = w - t.
#define sgdMul(o, a, b) VMULPS o(SI), Y15, b
#define sgdSub(o, a, b) VSUBPS b, a, a
#define sgd(each)       each(sgdMul); each(loadDI); each(sgdSub); each(storeDI)

// func sgdAVX2(w, grad *float32, n int, lr float32)
TEXT ·sgdAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS lr+24(FP), Y15
	stream(sgd, nextSIDI)

// buf = mom*buf (rounded) + g, then w = w - lr*buf (rounded). w is loaded
// after buf is stored, as in the reference, so w == buf works.
// func sgdMomentumAVX2(w, grad, buf *float32, n int, lr, mom float32, tiny uint32)
//
// As sgdMomentumRef, bit for bit, but without denormal float32 results in
// the common case, which this kind of CPU computes in a microcode assist of
// about 30 ns each: momentum entries that shrink towards 0 (a weight whose
// gradient stays 0) pass through the denormals. Each 32 floats go through
// the plain steps unless a buf among them is not 0 and below tiny (its bits)
// in magnitude; those 8-float steps where one is take momExact instead.
//
// The test is in integers: with x = (bits AND 0x7fffffff) + 0x7fffffff (mod
// 2³²), the magnitude's bits minus 1 with the sign bit flipped, a signed
// x < tiny - 1 - 2³¹ is the unsigned |bits| - 1 < tiny - 1.
#define momRisky(r, t) VPAND Y12, r, t; VPADDD Y12, t, t; VPCMPGTD t, Y13, t
#define momFast(o, r) VMULPS r, Y15, r; VADDPS o(SI), r, r; VMOVUPS r, o(DX)
#define momFastW(o, r) VMULPS r, Y14, r; VMOVUPS o(DI), Y8; VSUBPS r, Y8, Y8; VMOVUPS Y8, o(DI)

// momRound rounds the 4 float64 of Yx to float32 into Xo, to nearest, ties
// to even, as VCVTPD2PS does, but builds denormal results from their bits:
// |x|·2¹⁴⁹ + 2⁵² holds the result's steps of the least denormal in its low
// bits (2²³ is the least normal, whose bits these are too), and x's sign
// bit goes on top. Y10 holds momPick; Y7 to Y9 are clobbered.
#define momRound(Yx, Xo) \
	VANDPD     momAbs<>(SB), Yx, Y7; \
	VCMPPD     $0x11, momMin<>(SB), Y7, Y8; \
	VMULPD     momScale<>(SB), Y7, Y9; \
	VADDPD     momMagic<>(SB), Y9, Y9; \
	VPSRLQ     $32, Yx, Y7; \
	VPAND      momSign<>(SB), Y7, Y7; \
	VPOR       Y7, Y9, Y9; \
	VANDNPD    Yx, Y8, Y7; \
	VCVTPD2PSY Y7, Xo; \
	VPERMD     Y9, Y10, Y9; \
	VPERMD     Y8, Y10, Y8; \
	VBLENDVPS  X8, X9, Xo, Xo

// |x|, 2⁻¹²⁶, 2¹⁴⁹, 2⁵² and the sign's place in a low half, as float64;
// momPick gathers the low halves of 4 float64 lanes.
#define momConst(name, v) \
	DATA name<>+0(SB)/8, v; DATA name<>+8(SB)/8, v; DATA name<>+16(SB)/8, v; DATA name<>+24(SB)/8, v; \
	GLOBL name<>(SB), RODATA|NOPTR, $32
momConst(momAbs, $0x7fffffffffffffff)
momConst(momMin, $0x3810000000000000)
momConst(momScale, $0x4940000000000000)
momConst(momMagic, $0x4330000000000000)
momConst(momSign, $0x0000000080000000)
DATA momPick<>+0(SB)/8, $0x0000000200000000
DATA momPick<>+8(SB)/8, $0x0000000600000004
DATA momPick<>+16(SB)/8, $0x0000000200000000
DATA momPick<>+24(SB)/8, $0x0000000600000004
GLOBL momPick<>(SB), RODATA|NOPTR, $32

TEXT ·sgdMomentumAVX2(SB), NOSPLIT, $0-44
	MOVQ         w+0(FP), DI
	MOVQ         grad+8(FP), SI
	MOVQ         buf+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS lr+32(FP), Y14
	VBROADCASTSS mom+36(FP), Y15
	MOVL         tiny+40(FP), AX
	SUBL         $1, AX
	XORL         $0x80000000, AX
	MOVD         AX, X13
	VPBROADCASTD X13, Y13
	MOVL         $0x7fffffff, AX
	MOVD         AX, X12
	VPBROADCASTD X12, Y12
	VMOVDQU      momPick<>(SB), Y10

mom32:
	CMPQ    CX, $32
	JB      momTail
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	momRisky(Y0, Y4)
	momRisky(Y1, Y5)
	momRisky(Y2, Y6)
	momRisky(Y3, Y7)
	VPOR    Y5, Y4, Y4
	VPOR    Y7, Y6, Y6
	VPOR    Y6, Y4, Y4
	VPTEST  Y4, Y4
	JNZ     momSteps
	momFast(0, Y0)
	momFast(32, Y1)
	momFast(64, Y2)
	momFast(96, Y3)
	momFastW(0, Y0)
	momFastW(32, Y1)
	momFastW(64, Y2)
	momFastW(96, Y3)
	ADDQ    $128, DI
	ADDQ    $128, SI
	ADDQ    $128, DX
	SUBQ    $32, CX
	JMP     mom32

momSteps:
	MOVQ $4, R9
	JMP  momStep

momTail:
	TESTQ CX, CX
	JZ    momDone
	MOVQ  $1, R9

// momStep runs 8 floats, then R9 more counts down: back to mom32 at 0.
momStep:
	VMOVUPS (DX), Y0
	momRisky(Y0, Y2)
	VPTEST  Y2, Y2
	JNZ     momExact
	VMULPS  Y0, Y15, Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DX)
	VMULPS  Y0, Y14, Y0
	VMOVUPS (DI), Y4
	VSUBPS  Y0, Y4, Y4
	VMOVUPS Y4, (DI)

momNext:
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	DECQ R9
	JNZ  momStep
	JMP  mom32

momDone:
	VZEROUPPER
	RET

// momExact runs the 8 floats of Y0 (buf) in float64, each float32 result
// rounded by momRound: mom·buf, lr·buf and w - lr·buf; the sum buf = mom·buf
// + g is float32's, but where g is 0 and mom·buf is not, whose sum is
// mom·buf itself, perhaps denormal. A float32 product is exact in float64,
// and a difference rounded to float64 then float32 rounds as in float32
// (53 ≥ 2·24 + 2 bits).
momExact:
	VCVTPS2PD    X15, Y2
	VCVTPS2PD    X0, Y1
	VMULPD       Y2, Y1, Y1
	momRound(Y1, X1)
	VEXTRACTF128 $1, Y0, X3
	VCVTPS2PD    X3, Y3
	VMULPD       Y2, Y3, Y3
	momRound(Y3, X3)
	VINSERTF128  $1, X3, Y1, Y1 // mom·buf
	VMOVUPS      (SI), Y2
	VXORPS       Y4, Y4, Y4
	VCMPPS       $0x00, Y4, Y2, Y5 // g == 0 (EQ_OQ)
	VCMPPS       $0x04, Y4, Y1, Y6 // mom·buf != 0 (NEQ_UQ)
	VANDPS       Y6, Y5, Y5
	VANDNPS      Y1, Y5, Y6
	VADDPS       Y2, Y6, Y6
	VBLENDVPS    Y5, Y1, Y6, Y1 // buf
	VMOVUPS      Y1, (DX)
	VCVTPS2PD    X14, Y2
	VCVTPS2PD    X1, Y3
	VMULPD       Y2, Y3, Y3
	momRound(Y3, X3) // lr·buf, low half
	VEXTRACTF128 $1, Y1, X4
	VCVTPS2PD    X4, Y4
	VMULPD       Y2, Y4, Y4
	momRound(Y4, X4) // high half
	VMOVUPS      (DI), Y5
	VCVTPS2PD    X5, Y6
	VCVTPS2PD    X3, Y3
	VSUBPD       Y3, Y6, Y6
	momRound(Y6, X6)
	VEXTRACTF128 $1, Y5, X5
	VCVTPS2PD    X5, Y5
	VCVTPS2PD    X4, Y4
	VSUBPD       Y4, Y5, Y5
	momRound(Y5, X5)
	VINSERTF128  $1, X5, Y6, Y6
	VMOVUPS      Y6, (DI)
	JMP          momNext

// c stays in Y4, which lane 0's b names but no step here writes.
#define addConstAdd(o, a, b) VADDPS o(DI), Y4, a
#define addConst(each)       each(addConstAdd); each(storeDI)

// func addConstAVX2(dst *float32, c float32, n int)
TEXT ·addConstAVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	VBROADCASTSS c+8(FP), Y4
	MOVQ         n+16(FP), CX
	stream(addConst, nextDI)

// func adamAVX2(w, grad, m, v *float32, n int, s *AdamStep)
//
// As adamRef, 8 floats a step. AdamStep's floats are at 0 to 36 in its
// order, its five flags at 40 to 44 (Decouple, Coupled, Small, Scaled,
// Zero).
TEXT ·adamAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         grad+8(FP), SI
	MOVQ         m+16(FP), DX
	MOVQ         v+24(FP), R8
	MOVQ         n+32(FP), CX
	MOVQ         s+40(FP), R9
	VBROADCASTSS 0(R9), Y7   // Decay
	VBROADCASTSS 4(R9), Y8   // WD
	VBROADCASTSS 8(R9), Y9   // Lerp
	VBROADCASTSS 12(R9), Y10 // OneMinus
	VBROADCASTSS 16(R9), Y11 // Beta2
	VBROADCASTSS 20(R9), Y12 // OmBeta2
	VBROADCASTSS 24(R9), Y13 // BC2Sqrt
	VBROADCASTSS 28(R9), Y14 // Eps
	VBROADCASTSS 32(R9), Y15 // NegStep
	VBROADCASTSS 36(R9), Y6  // Scale
	MOVBQZX      40(R9), R10
	MOVBQZX      41(R9), R11
	MOVBQZX      42(R9), R12
	MOVBQZX      43(R9), R13
	MOVBQZX      44(R9), BX

adamStep:
	VMOVUPS (DI), Y0
	TESTQ   R10, R10
	JZ      adamG
	VMULPS  Y7, Y0, Y0 // w·Decay

adamG:
	VMOVUPS (SI), Y1
	TESTQ   R13, R13
	JZ      adamZero
	VMULPS  Y6, Y1, Y1 // g·Scale
	TESTQ   BX, BX
	JNZ     adamZero
	VMOVUPS Y1, (SI) // the scaled gradient stays

adamZero:
	TESTQ   BX, BX
	JZ      adamWD
	VXORPS  Y5, Y5, Y5 // Y5 is free until the last steps
	VMOVUPS Y5, (SI)

adamWD:
	TESTQ   R11, R11
	JZ      adamM
	VMULPS  Y0, Y8, Y2
	VADDPS  Y2, Y1, Y1 // g + WD·w

adamM:
	VMOVUPS (DX), Y2
	VSUBPS  Y2, Y1, Y3 // g - m
	TESTQ   R12, R12
	JZ      adamLarge
	VMULPS  Y3, Y9, Y3
	VADDPS  Y3, Y2, Y2 // m + Lerp·(g - m)
	JMP     adamV

adamLarge:
	VMULPS Y10, Y3, Y3
	VSUBPS Y3, Y1, Y2 // g - (g - m)·OneMinus

adamV:
	VMOVUPS Y2, (DX)
	VMOVUPS (R8), Y3
	VMULPS  Y11, Y3, Y3 // v·Beta2
	VMULPS  Y1, Y12, Y4
	VMULPS  Y1, Y4, Y4  // (OmBeta2·g)·g
	VADDPS  Y4, Y3, Y3
	VMOVUPS Y3, (R8)
	VSQRTPS Y3, Y4
	VDIVPS  Y13, Y4, Y4
	VADDPS  Y14, Y4, Y4 // denom
	VMULPS  Y2, Y15, Y5
	VDIVPS  Y4, Y5, Y5
	VADDPS  Y5, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	SUBQ    $8, CX
	JNZ     adamStep
	VZEROUPPER
	RET

// Max pooling over 2×2 windows at stride 2, rows of ow windows at a time, 8
// windows (16 floats of each input row) a step and the last ow%8 under
// masks, whose masked-off lanes neither read nor write memory. The input
// rows' even and odd elements are split apart (VSHUFPS, then VPERMPD to order
// the 128-bit halves), and a window's four candidates are taken in PyTorch's
// order: the next replaces the best so far where it is larger or NaN. Only
// VEX instructions: a legacy SSE one after 256-bit work costs a state
// transition on every call.

// poolIota holds the bytes 0 to 15, whence the pool kernels make their
// lane masks and the AVX-512 ones their indices.
DATA poolIota<>+0(SB)/8, $0x0706050403020100
DATA poolIota<>+8(SB)/8, $0x0f0e0d0c0b0a0908
GLOBL poolIota<>(SB), RODATA|NOPTR, $16

// poolConst broadcasts the 32-bit k to all lanes of y.
#define poolConst(k, x, y) MOVL $k, AX; VMOVD AX, x; VPBROADCASTD x, y

// poolMask sets y to the mask of the first n of 8 lanes, none for n <= 0
// (Y7 = 0, 1, ..., 7; Y8 is clobbered).
#define poolMask(n, y) VMOVQ n, X8; VPBROADCASTD X8, Y8; VPCMPGTD Y7, Y8, y

// poolParams loads rows, ow, stride and w, at the same offsets in every pool
// kernel, into R10-R13, stride and w in bytes.
#define poolParams \
	MOVQ rows+24(FP), R10; \
	MOVQ ow+32(FP), R11; \
	MOVQ stride+40(FP), R12; \
	MOVQ w+48(FP), R13; \
	SHLQ $2, R12; \
	SHLQ $2, R13

// poolSetup runs poolParams, then loads the constants 1, 2 and 3 into Y12,
// Y13 and Y14, and the masks of the last rem = ow%8 windows: Y9 and Y10
// the input's two halves (min(2rem, 8) and max(0, 2rem-8) lanes), Y11 the
// output (rem lanes). It leaves rem in R14.
#define poolSetup \
	poolParams; \
	poolConst(1, X12, Y12); \
	poolConst(2, X13, Y13); \
	poolConst(3, X14, Y14); \
	MOVQ      R11, R14; \
	ANDQ      $7, R14; \
	VPMOVZXBD poolIota<>(SB), Y7; \
	poolMask(R14, Y11); \
	LEAQ      (R14)(R14*1), DX; \
	poolMask(DX, Y9); \
	SUBQ      $8, DX; \
	poolMask(DX, Y10)

// poolRows runs R10 rows of ow windows. For each, R9 and R15 point to its
// top and bottom input rows, at base, which then steps by R12; step8 runs
// ow/8 times, then tail once if R14 = ow%8 > 0.
#define poolRows(base, step8, tail) \
row: \
	MOVQ base, R9; \
	LEAQ (base)(R13*1), R15; \
	MOVQ R11, CX; \
	SHRQ $3, CX; \
	JZ   rowTail; \
row8: \
	step8; \
	DECQ CX; \
	JNZ  row8; \
rowTail: \
	TESTQ R14, R14; \
	JZ    rowNext; \
	tail; \
rowNext: \
	ADDQ R12, base; \
	DECQ R10; \
	JNZ  row; \
	VZEROUPPER

// The windows' rows are loaded and their gradients stored whole in the
// loop and under the masks Y9, Y10 in the tail.
#define poolLoad(o, p, m, y)         VMOVUPS o(p), y
#define poolLoadMasked(o, p, m, y)   VMASKMOVPS o(p), m, y
#define poolStore(y, m, o, p)        VMOVUPS y, o(p)
#define poolStoreMasked(y, m, o, p)  VMASKMOVPS y, m, o(p)

// poolPick takes the best so far Y2 and its argument Y6 from the
// candidates Y3, Y4 and Y5 (arguments 1, 2 and 3).
#define poolPick \
	VCMPPS    $0x1E, Y2, Y3, Y7; \
	VCMPPS    $0x03, Y3, Y3, Y8; \
	VORPS     Y8, Y7, Y7; \
	VBLENDVPS Y7, Y3, Y2, Y2; \
	VBLENDVPS Y7, Y12, Y6, Y6; \
	VCMPPS    $0x1E, Y2, Y4, Y7; \
	VCMPPS    $0x03, Y4, Y4, Y8; \
	VORPS     Y8, Y7, Y7; \
	VBLENDVPS Y7, Y4, Y2, Y2; \
	VBLENDVPS Y7, Y13, Y6, Y6; \
	VCMPPS    $0x1E, Y2, Y5, Y7; \
	VCMPPS    $0x03, Y5, Y5, Y8; \
	VORPS     Y8, Y7, Y7; \
	VBLENDVPS Y7, Y5, Y2, Y2; \
	VBLENDVPS Y7, Y14, Y6, Y6

// poolSplit splits the 16 floats in Y0, Y1 into their even elements (into
// the first register given) and odd ones (the second).
#define poolSplit(even, odd) \
	VSHUFPS $0x88, Y1, Y0, even; \
	VSHUFPS $0xDD, Y1, Y0, odd; \
	VPERMPD $0xD8, even, even; \
	VPERMPD $0xD8, odd, odd

// poolMax loads 8 windows with load and leaves their maxima in Y2 and
// their arguments in Y6.
#define poolMax(load) \
	load(0, R9, Y9, Y0); \
	load(32, R9, Y10, Y1); \
	poolSplit(Y2, Y3); \
	load(0, R15, Y9, Y0); \
	load(32, R15, Y10, Y1); \
	poolSplit(Y4, Y5); \
	VPXOR Y6, Y6, Y6; \
	poolPick

// poolPack packs the eight arguments in Y6 into the low 8 bytes of X6
// (twice): VPACKSSDW makes them 16-bit, VPACKUSWB bytes.
#define poolPack \
	VEXTRACTI128 $1, Y6, X7; \
	VPACKSSDW    X7, X6, X6; \
	VPACKUSWB    X6, X6, X6

// pool8 takes 8 windows: maxima to DI, arguments to SI.
#define pool8 \
	poolMax(poolLoad); \
	VMOVUPS Y2, 0(DI); \
	poolPack; \
	VMOVQ   X6, 0(SI); \
	ADDQ    $64, R9; \
	ADDQ    $64, R15; \
	ADDQ    $32, DI; \
	ADDQ    $8, SI

// The last rem windows' arguments are stored a byte at a time.
#define poolTail \
	poolMax(poolLoadMasked); \
	VMASKMOVPS Y2, Y11, 0(DI); \
	poolPack; \
	VMOVQ X6, AX; \
	MOVQ  R14, CX; \
poolArgs: \
	MOVB AL, 0(SI); \
	SHRQ $8, AX; \
	INCQ SI; \
	DECQ CX; \
	JNZ  poolArgs; \
	LEAQ (DI)(R14*4), DI

// func maxPool2x2AVX2(dst *float32, arg *uint8, x *float32, rows, ow, stride, w int)
TEXT ·maxPool2x2AVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ arg+8(FP), SI
	MOVQ x+16(FP), R8
	poolSetup
	poolRows(R8, pool8, poolTail)
	RET

// poolSpread spreads the gradients Y1 over their windows by the arguments
// Y0: each goes where its argument points and +0 to the window's other
// three places. The windows' 32 floats are then stored with store; Y9-Y15
// are kept.
#define poolSpread(store) \
	VPCMPEQD   Y15, Y0, Y2; \
	VPCMPEQD   Y12, Y0, Y3; \
	VPCMPEQD   Y13, Y0, Y4; \
	VPCMPEQD   Y14, Y0, Y5; \
	VANDPS     Y1, Y2, Y2; \
	VANDPS     Y1, Y3, Y3; \
	VANDPS     Y1, Y4, Y4; \
	VANDPS     Y1, Y5, Y5; \
	VUNPCKLPS  Y3, Y2, Y6; \
	VUNPCKHPS  Y3, Y2, Y7; \
	VPERM2F128 $0x20, Y7, Y6, Y2; \
	VPERM2F128 $0x31, Y7, Y6, Y3; \
	VUNPCKLPS  Y5, Y4, Y6; \
	VUNPCKHPS  Y5, Y4, Y7; \
	VPERM2F128 $0x20, Y7, Y6, Y4; \
	VPERM2F128 $0x31, Y7, Y6, Y5; \
	store(Y2, Y9, 0, R9); \
	store(Y3, Y10, 32, R9); \
	store(Y4, Y9, 0, R15); \
	store(Y5, Y10, 32, R15)

// scatter8 spreads 8 windows' gradients from R8 by the arguments at SI.
#define scatter8 \
	VPMOVZXBD 0(SI), Y0; \
	VMOVUPS   0(R8), Y1; \
	poolSpread(poolStore); \
	ADDQ      $64, R9; \
	ADDQ      $64, R15; \
	ADDQ      $32, R8; \
	ADDQ      $8, SI

// The last rem arguments are gathered a byte at a time.
#define scatterTail \
	XORQ  AX, AX; \
	MOVQ  R14, CX; \
scatterArgs: \
	DECQ    CX; \
	SHLQ    $8, AX; \
	MOVBQZX (SI)(CX*1), DX; \
	ORQ     DX, AX; \
	TESTQ   CX, CX; \
	JNZ     scatterArgs; \
	VMOVQ      AX, X0; \
	VPMOVZXBD  X0, Y0; \
	VMASKMOVPS 0(R8), Y11, Y1; \
	poolSpread(poolStoreMasked); \
	ADDQ       R14, SI; \
	LEAQ       (R8)(R14*4), R8

// func maxPool2x2BackwardAVX2(dx, grad *float32, arg *uint8, rows, ow, stride, w int)
TEXT ·maxPool2x2BackwardAVX2(SB), NOSPLIT, $0-56
	MOVQ dx+0(FP), DI
	MOVQ grad+8(FP), R8
	MOVQ arg+16(FP), SI
	poolSetup
	VPXOR Y15, Y15, Y15
	poolRows(DI, scatter8, scatterTail)
	RET

// The 2×2 max pooling kernels on AVX-512: 16 windows a step, and the
// windows left at a row's end (14 of conv outputs 28 wide, 7 of 14) under
// opmasks in the same step, where the AVX2 kernels take them a byte at a
// time. Go operand order is Intel's reversed; VPERMT2PS t2, idx, t1 sets
// t1[i] = (t1 ++ t2)[idx[i]].

// pool16Setup runs poolParams, then makes the index vectors: Z8 and Z9
// the even and the odd lanes of two registers, 2i and 2i+1; Z10 and Z11
// two registers' lanes interleaved, the first eight pairs and the last,
// i/2 + 16(i&1) and that + 8. Z12-Z14 hold 1, 2 and 3, Z15 zero, and R14
// 0xffff, whose first n bits (BZHI, all 16 for n > 16) mask n lanes.
#define pool16Setup \
	poolParams; \
	poolConst(1, X12, Z12); \
	poolConst(2, X13, Z13); \
	poolConst(3, X14, Z14); \
	VPXORD    Z15, Z15, Z15; \
	VPMOVZXBD poolIota<>(SB), Z8; \
	VPSRLD    $1, Z8, Z10; \
	VPANDD    Z12, Z8, Z7; \
	VPSLLD    $4, Z7, Z7; \
	VPADDD    Z7, Z10, Z10; \
	VPSLLD    $3, Z12, Z7; \
	VPADDD    Z7, Z10, Z11; \
	VPADDD    Z8, Z8, Z8; \
	VPADDD    Z12, Z8, Z9; \
	MOVQ      $0xffff, R14

// pool16Rows runs R10 rows of R11 windows, step at a time on up to 16
// windows: for each row R9 and R15 point to its top and bottom input rows,
// at base, which then steps by R12. Before a step, BX holds its m windows,
// K1 masks m lanes, K2 and K3 the min(2m, 16) and max(0, 2m-16) lanes of
// the input's two registers a row; after it, R9 and R15 have moved on by
// 2m floats.
#define pool16Rows(base, step) \
row: \
	MOVQ base, R9; \
	LEAQ (base)(R13*1), R15; \
	MOVQ R11, CX; \
block: \
	MOVQ    $16, BX; \
	CMPQ    CX, BX; \
	CMOVQLT CX, BX; \
	BZHIQ   BX, R14, AX; \
	KMOVW   AX, K1; \
	LEAQ    (BX)(BX*1), DX; \
	BZHIQ   DX, R14, AX; \
	KMOVW   AX, K2; \
	LEAQ    -16(BX)(BX*1), DX; \
	XORQ    AX, AX; \
	CMPQ    DX, AX; \
	CMOVQLT AX, DX; \
	BZHIQ   DX, R14, AX; \
	KMOVW   AX, K3; \
	step; \
	LEAQ (R9)(BX*8), R9; \
	LEAQ (R15)(BX*8), R15; \
	SUBQ BX, CX; \
	JNZ  block; \
	ADDQ R12, base; \
	DECQ R10; \
	JNZ  row; \
	VZEROUPPER

// pool16Run sets up and runs a kernel of the steps step from base.
#define pool16Run(base, step) pool16Setup; pool16Rows(base, step); RET

// pool16Split leaves the even floats of the 2m at p in even, the odd ones
// in odd.
#define pool16Split(p, even, odd) \
	VMOVUPS.Z  0(p), K2, even; \
	VMOVUPS.Z  64(p), K3, Z7; \
	VMOVAPS    even, odd; \
	VPERMT2PS  Z7, Z8, even; \
	VPERMT2PS  Z7, Z9, odd

// pool16Pick takes candidate c, with argument a, over the best so far Z2
// (argument Z6) where c is larger or NaN: the reference's comparisons.
#define pool16Pick(c, a) \
	VCMPPS    $0x1E, Z2, c, K4; \
	VCMPPS    $0x03, c, c, K5; \
	KORW      K4, K5, K4; \
	VMOVAPS   c, K4, Z2; \
	VMOVDQA32 a, K4, Z6

// pool16 pools m windows: maxima to DI, arguments to SI.
#define pool16 \
	pool16Split(R9, Z2, Z3); \
	pool16Split(R15, Z4, Z5); \
	VPXORD Z6, Z6, Z6; \
	pool16Pick(Z3, Z12); \
	pool16Pick(Z4, Z13); \
	pool16Pick(Z5, Z14); \
	VMOVUPS Z2, K1, 0(DI); \
	VPMOVDB Z6, K1, 0(SI); \
	LEAQ    (DI)(BX*4), DI; \
	ADDQ    BX, SI

// func maxPool2x2AVX512(dst *float32, arg *uint8, x *float32, rows, ow, stride, w int)
TEXT ·maxPool2x2AVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ arg+8(FP), SI
	MOVQ x+16(FP), R8
	pool16Run(R8, pool16)

// pool16Store interleaves a and b, a window's two places in a row, and
// stores the 2m floats at p.
#define pool16Store(a, b, p) \
	VMOVAPS   a, Z6; \
	VMOVAPS   a, Z7; \
	VPERMT2PS b, Z10, Z6; \
	VPERMT2PS b, Z11, Z7; \
	VMOVUPS   Z6, K2, 0(p); \
	VMOVUPS   Z7, K3, 64(p)

// scatter16 spreads m windows' gradients from R8 by their arguments at
// SI: each to where its argument points, +0 to the window's other three.
#define scatter16 \
	VPMOVZXBD.Z 0(SI), K1, Z0; \
	VMOVUPS.Z   0(R8), K1, Z1; \
	VPCMPEQD    Z15, Z0, K4; \
	VMOVAPS.Z   Z1, K4, Z2; \
	VPCMPEQD    Z12, Z0, K4; \
	VMOVAPS.Z   Z1, K4, Z3; \
	VPCMPEQD    Z13, Z0, K4; \
	VMOVAPS.Z   Z1, K4, Z4; \
	VPCMPEQD    Z14, Z0, K4; \
	VMOVAPS.Z   Z1, K4, Z5; \
	pool16Store(Z2, Z3, R9); \
	pool16Store(Z4, Z5, R15); \
	LEAQ (R8)(BX*4), R8; \
	ADDQ BX, SI

// func maxPool2x2BackwardAVX512(dx, grad *float32, arg *uint8, rows, ow, stride, w int)
TEXT ·maxPool2x2BackwardAVX512(SB), NOSPLIT, $0-56
	MOVQ dx+0(FP), DI
	MOVQ grad+8(FP), R8
	MOVQ arg+16(FP), SI
	pool16Run(DI, scatter16)
