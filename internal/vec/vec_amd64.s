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
