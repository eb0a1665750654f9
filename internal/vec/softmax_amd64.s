//go:build !purego

#include "textflag.h"

// func maxAVX2(x *float32, n int) float32
//
// Four running maxima of 8 lanes over 32 floats a step, then one over 8;
// max is the same whatever the order, but for which zero or NaN it keeps.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVUPS (SI), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	ADDQ    $32, SI
	SUBQ    $8, CX
	CMPQ    CX, $32
	JB      max8

max32:
	VMAXPS (SI), Y0, Y0
	VMAXPS 32(SI), Y1, Y1
	VMAXPS 64(SI), Y2, Y2
	VMAXPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $32, CX
	CMPQ   CX, $32
	JAE    max32

max8:
	TESTQ CX, CX
	JZ    maxDone
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    max8

maxDone:
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+16(FP)
	RET

// func scaleF64AVX2(x *float32, n int, c float64)
//
// x[i] = float32(float64(x[i])·c), 8 floats a step as two halves of 4
// widened to float64.
TEXT ·scaleF64AVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD c+16(FP), Y4

scaleLoop:
	VCVTPS2PD  (SI), Y0
	VCVTPS2PD  16(SI), Y1
	VMULPD     Y4, Y0, Y0
	VMULPD     Y4, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS    X0, (SI)
	VMOVUPS    X1, 16(SI)
	ADDQ       $32, SI
	SUBQ       $8, CX
	JNZ        scaleLoop
	VZEROUPPER
	RET

// func softmaxGradAVX2(x, y *float32, n int, c, dot float64)
//
// x[i] = float32((c·float64(y[i]))·(float64(x[i]) − dot)), 8 floats a step.
TEXT ·softmaxGradAVX2(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), DI
	MOVQ         y+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD c+24(FP), Y4
	VBROADCASTSD dot+32(FP), Y5

gradLoop:
	VCVTPS2PD  (SI), Y0
	VCVTPS2PD  16(SI), Y1
	VCVTPS2PD  (DI), Y2
	VCVTPS2PD  16(DI), Y3
	VMULPD     Y4, Y0, Y0
	VMULPD     Y4, Y1, Y1
	VSUBPD     Y5, Y2, Y2
	VSUBPD     Y5, Y3, Y3
	VMULPD     Y2, Y0, Y0
	VMULPD     Y3, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ       $32, SI
	ADDQ       $32, DI
	SUBQ       $8, CX
	JNZ        gradLoop
	VZEROUPPER
	RET
