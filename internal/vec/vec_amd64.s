//go:build !purego

#include "textflag.h"

// Each kernel runs 32 floats (4 YMM) per step, then 8 at a time; n is a
// positive multiple of 8. Go operand order is Intel's reversed:
// VCMPPS $p, b, a, m sets m = a <p> b; VSUBPS b, a, d sets d = a - b.
// The gradient argument is named grad: g is a register name in Go assembly.

// func reluAVX2(dst, x *float32, n int)
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y15, Y15, Y15
	CMPQ CX, $32
	JB   tail

loop32:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	// mask = !(x <= 0) (NLE_UQ): true for x > 0 and for NaN.
	VCMPPS $0x16, Y15, Y0, Y4
	VCMPPS $0x16, Y15, Y1, Y5
	VCMPPS $0x16, Y15, Y2, Y6
	VCMPPS $0x16, Y15, Y3, Y7
	VANDPS Y0, Y4, Y0
	VANDPS Y1, Y5, Y1
	VANDPS Y2, Y6, Y2
	VANDPS Y3, Y7, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	CMPQ CX, $32
	JAE  loop32

tail:
	TESTQ CX, CX
	JZ    done

loop8:
	VMOVUPS 0(SI), Y0
	VCMPPS  $0x16, Y15, Y0, Y4
	VANDPS  Y0, Y4, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     loop8

done:
	VZEROUPPER
	RET

// func reluBackwardAVX2(dst, dy, x *float32, n int)
TEXT ·reluBackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dy+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	VXORPS Y15, Y15, Y15
	CMPQ CX, $32
	JB   tail

loop32:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	// mask = x > 0 (GT_OQ): false for NaN.
	VCMPPS $0x1e, Y15, Y0, Y0
	VCMPPS $0x1e, Y15, Y1, Y1
	VCMPPS $0x1e, Y15, Y2, Y2
	VCMPPS $0x1e, Y15, Y3, Y3
	VANDPS 0(DX), Y0, Y0
	VANDPS 32(DX), Y1, Y1
	VANDPS 64(DX), Y2, Y2
	VANDPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	SUBQ $32, CX
	CMPQ CX, $32
	JAE  loop32

tail:
	TESTQ CX, CX
	JZ    done

loop8:
	VMOVUPS 0(SI), Y0
	VCMPPS  $0x1e, Y15, Y0, Y0
	VANDPS  0(DX), Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     loop8

done:
	VZEROUPPER
	RET

// func allFiniteAVX2(x *float32, n int) bool
TEXT ·allFiniteAVX2(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	MOVD AX, X15
	VPBROADCASTD X15, Y15
	CMPQ CX, $32
	JB   tail

loop32:
	// Lanes whose exponent bits are all set become all ones.
	VPAND    0(SI), Y15, Y0
	VPAND    32(SI), Y15, Y1
	VPAND    64(SI), Y15, Y2
	VPAND    96(SI), Y15, Y3
	VPCMPEQD Y15, Y0, Y0
	VPCMPEQD Y15, Y1, Y1
	VPCMPEQD Y15, Y2, Y2
	VPCMPEQD Y15, Y3, Y3
	VPOR     Y1, Y0, Y0
	VPOR     Y3, Y2, Y2
	VPOR     Y2, Y0, Y0
	VPTEST   Y0, Y0
	JNZ      notfinite
	ADDQ     $128, SI
	SUBQ     $32, CX
	CMPQ     CX, $32
	JAE      loop32

tail:
	TESTQ CX, CX
	JZ    finite

loop8:
	VPAND    0(SI), Y15, Y0
	VPCMPEQD Y15, Y0, Y0
	VPTEST   Y0, Y0
	JNZ      notfinite
	ADDQ     $32, SI
	SUBQ     $8, CX
	JNZ      loop8

finite:
	VZEROUPPER
	MOVB $1, ret+16(FP)
	RET

notfinite:
	VZEROUPPER
	MOVB $0, ret+16(FP)
	RET

// func addAVX2(dst, x *float32, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JB   tail

loop32:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  0(SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop32

tail:
	TESTQ CX, CX
	JZ    done

loop8:
	VMOVUPS 0(DI), Y0
	VADDPS  0(SI), Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     loop8

done:
	VZEROUPPER
	RET

// func sgdAVX2(w, grad *float32, n int, lr float32)
TEXT ·sgdAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS lr+24(FP), Y15
	CMPQ CX, $32
	JB   tail

loop32:
	// t = lr*g (rounded), then w = w - t.
	VMULPS  0(SI), Y15, Y4
	VMULPS  32(SI), Y15, Y5
	VMULPS  64(SI), Y15, Y6
	VMULPS  96(SI), Y15, Y7
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VSUBPS  Y4, Y0, Y0
	VSUBPS  Y5, Y1, Y1
	VSUBPS  Y6, Y2, Y2
	VSUBPS  Y7, Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop32

tail:
	TESTQ CX, CX
	JZ    done

loop8:
	VMULPS  0(SI), Y15, Y4
	VMOVUPS 0(DI), Y0
	VSUBPS  Y4, Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     loop8

done:
	VZEROUPPER
	RET

// func sgdMomentumAVX2(w, grad, buf *float32, n int, lr, mom float32)
// w is loaded after buf is stored, as in the reference, so w == buf works.
TEXT ·sgdMomentumAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ buf+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS lr+32(FP), Y14
	VBROADCASTSS mom+36(FP), Y15
	CMPQ CX, $32
	JB   tail

loop32:
	// buf = mom*buf (rounded) + g
	VMULPS  0(DX), Y15, Y0
	VMULPS  32(DX), Y15, Y1
	VMULPS  64(DX), Y15, Y2
	VMULPS  96(DX), Y15, Y3
	VADDPS  0(SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	// w = w - lr*buf (rounded)
	VMULPS  Y0, Y14, Y0
	VMULPS  Y1, Y14, Y1
	VMULPS  Y2, Y14, Y2
	VMULPS  Y3, Y14, Y3
	VMOVUPS 0(DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS 96(DI), Y7
	VSUBPS  Y0, Y4, Y4
	VSUBPS  Y1, Y5, Y5
	VSUBPS  Y2, Y6, Y6
	VSUBPS  Y3, Y7, Y7
	VMOVUPS Y4, 0(DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop32

tail:
	TESTQ CX, CX
	JZ    done

loop8:
	VMULPS  0(DX), Y15, Y0
	VADDPS  0(SI), Y0, Y0
	VMOVUPS Y0, 0(DX)
	VMULPS  Y0, Y14, Y0
	VMOVUPS 0(DI), Y4
	VSUBPS  Y0, Y4, Y4
	VMOVUPS Y4, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     loop8

done:
	VZEROUPPER
	RET

// func addConstAVX2(dst *float32, c float32, n int)
TEXT ·addConstAVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	VBROADCASTSS c+8(FP), Y4
	MOVQ         n+16(FP), CX
	CMPQ         CX, $32
	JB           addcTail

addc32:
	VADDPS  0(DI), Y4, Y0
	VADDPS  32(DI), Y4, Y1
	VADDPS  64(DI), Y4, Y2
	VADDPS  96(DI), Y4, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     addc32

addcTail:
	TESTQ CX, CX
	JZ    addcDone

addc8:
	VADDPS  0(DI), Y4, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     addc8

addcDone:
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

DATA poolMasks<>+0(SB)/8, $0xffffffffffffffff
DATA poolMasks<>+8(SB)/8, $0xffffffffffffffff
DATA poolMasks<>+16(SB)/8, $0xffffffffffffffff
DATA poolMasks<>+24(SB)/8, $0xffffffffffffffff
DATA poolMasks<>+32(SB)/8, $0
DATA poolMasks<>+40(SB)/8, $0
DATA poolMasks<>+48(SB)/8, $0
DATA poolMasks<>+56(SB)/8, $0
GLOBL poolMasks<>(SB), RODATA|NOPTR, $64

// poolSetup loads the constants 1, 2 and 3 into Y12, Y13 and Y14, and the
// masks of the last rem = ow%8 windows: Y9 and Y10 the input's two halves
// (min(2rem, 8) and max(0, 2rem-8) lanes), Y11 the output (rem lanes). It
// takes ow in R11 and leaves rem in R14.
#define poolSetup \
	MOVL         $1, AX; \
	VMOVD        AX, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL         $2, AX; \
	VMOVD        AX, X13; \
	VPBROADCASTD X13, Y13; \
	MOVL         $3, AX; \
	VMOVD        AX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVQ         R11, R14; \
	ANDQ         $7, R14; \
	LEAQ         poolMasks<>(SB), AX; \
	MOVQ         $8, BX; \
	SUBQ         R14, BX; \
	VMOVDQU      (AX)(BX*4), Y11; \
	MOVQ         R14, DX; \
	SHLQ         $1, DX; \
	MOVQ         $8, BX; \
	CMPQ         DX, BX; \
	CMOVQGT      BX, DX; \
	SUBQ         DX, BX; \
	VMOVDQU      (AX)(BX*4), Y9; \
	MOVQ         R14, DX; \
	SHLQ         $1, DX; \
	SUBQ         $8, DX; \
	MOVQ         $0, BX; \
	CMPQ         DX, BX; \
	CMOVQLT      BX, DX; \
	MOVQ         $8, BX; \
	SUBQ         DX, BX; \
	VMOVDQU      (AX)(BX*4), Y10

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

// func maxPool2x2AVX2(dst *float32, arg *uint8, x *float32, rows, ow, stride, w int)
TEXT ·maxPool2x2AVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ arg+8(FP), SI
	MOVQ x+16(FP), R8
	MOVQ rows+24(FP), R10
	MOVQ ow+32(FP), R11
	MOVQ stride+40(FP), R12
	MOVQ w+48(FP), R13
	SHLQ $2, R12
	SHLQ $2, R13
	poolSetup

poolRow:
	MOVQ R8, R9              // top row
	LEAQ (R8)(R13*1), R15    // bottom row
	MOVQ R11, CX
	SHRQ $3, CX
	JZ   poolTail

pool8:
	VMOVUPS 0(R9), Y0
	VMOVUPS 32(R9), Y1
	poolSplit(Y2, Y3)
	VMOVUPS 0(R15), Y0
	VMOVUPS 32(R15), Y1
	poolSplit(Y4, Y5)
	VPXOR   Y6, Y6, Y6
	poolPick
	VMOVUPS      Y2, 0(DI)
	VEXTRACTI128 $1, Y6, X7
	VPACKSSDW    X7, X6, X6 // eight 16-bit arguments
	VPACKUSWB    X6, X6, X6 // eight bytes, twice
	VMOVQ        X6, 0(SI)
	ADDQ         $64, R9
	ADDQ         $64, R15
	ADDQ         $32, DI
	ADDQ         $8, SI
	DECQ         CX
	JNZ          pool8

poolTail:
	TESTQ R14, R14
	JZ    poolNext
	VMASKMOVPS 0(R9), Y9, Y0
	VMASKMOVPS 32(R9), Y10, Y1
	poolSplit(Y2, Y3)
	VMASKMOVPS 0(R15), Y9, Y0
	VMASKMOVPS 32(R15), Y10, Y1
	poolSplit(Y4, Y5)
	VPXOR      Y6, Y6, Y6
	poolPick
	VMASKMOVPS   Y2, Y11, 0(DI)
	VEXTRACTI128 $1, Y6, X7
	VPACKSSDW    X7, X6, X6
	VPACKUSWB    X6, X6, X6
	VMOVQ        X6, AX
	MOVQ         R14, CX

poolArgs:
	MOVB AL, 0(SI)
	SHRQ $8, AX
	INCQ SI
	DECQ CX
	JNZ  poolArgs
	LEAQ (DI)(R14*4), DI

poolNext:
	ADDQ R12, R8
	DECQ R10
	JNZ  poolRow
	VZEROUPPER
	RET

// poolSpread spreads the gradients Y1 over their windows by the arguments
// Y0: each goes where its argument points and +0 to the window's other
// three places. The top row's 16 floats come out in Y2, Y3 and the bottom
// row's in Y4, Y5; Y9-Y15 are kept.
#define poolSpread \
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
	VPERM2F128 $0x31, Y7, Y6, Y5

// func maxPool2x2BackwardAVX2(dx, grad *float32, arg *uint8, rows, ow, stride, w int)
TEXT ·maxPool2x2BackwardAVX2(SB), NOSPLIT, $0-56
	MOVQ dx+0(FP), DI
	MOVQ grad+8(FP), R8
	MOVQ arg+16(FP), SI
	MOVQ rows+24(FP), R10
	MOVQ ow+32(FP), R11
	MOVQ stride+40(FP), R12
	MOVQ w+48(FP), R13
	SHLQ $2, R12
	SHLQ $2, R13
	poolSetup
	VPXOR Y15, Y15, Y15

scatterRow:
	MOVQ DI, R9              // top row
	LEAQ (DI)(R13*1), R15    // bottom row
	MOVQ R11, CX
	SHRQ $3, CX
	JZ   scatterTail

scatter8:
	VPMOVZXBD 0(SI), Y0
	VMOVUPS   0(R8), Y1
	poolSpread
	VMOVUPS   Y2, 0(R9)
	VMOVUPS   Y3, 32(R9)
	VMOVUPS   Y4, 0(R15)
	VMOVUPS   Y5, 32(R15)
	ADDQ      $64, R9
	ADDQ      $64, R15
	ADDQ      $32, R8
	ADDQ      $8, SI
	DECQ      CX
	JNZ       scatter8

scatterTail:
	TESTQ R14, R14
	JZ    scatterNext
	XORQ  AX, AX             // the last rem arguments, a byte at a time
	MOVQ  R14, CX

scatterArgs:
	DECQ    CX
	SHLQ    $8, AX
	MOVBQZX (SI)(CX*1), DX
	ORQ     DX, AX
	TESTQ   CX, CX
	JNZ     scatterArgs
	VMOVQ      AX, X0
	VPMOVZXBD  X0, Y0
	VMASKMOVPS 0(R8), Y11, Y1
	poolSpread
	VMASKMOVPS Y2, Y9, 0(R9)
	VMASKMOVPS Y3, Y10, 32(R9)
	VMASKMOVPS Y4, Y9, 0(R15)
	VMASKMOVPS Y5, Y10, 32(R15)
	ADDQ       R14, SI
	LEAQ       (R8)(R14*4), R8

scatterNext:
	ADDQ R12, DI
	DECQ R10
	JNZ  scatterRow
	VZEROUPPER
	RET
