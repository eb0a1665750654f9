//go:build !purego

#include "textflag.h"

// The layer-norm kernels, 8 elements a step as two halves of 4 in float64:
// each element takes the operations of the Go reference in its order, no
// FMA, so the bits are the reference's.

// func layerNormOutAVX2(out, x *float32, w, b *float64, n int, m, rs float64)
//
// out[j] = float32((float64(x[j]) − m)·rs·w[j] + b[j]).
TEXT ·layerNormOutAVX2(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), R8
	MOVQ         b+24(FP), R9
	MOVQ         n+32(FP), CX
	VBROADCASTSD m+40(FP), Y6
	VBROADCASTSD rs+48(FP), Y7

outLoop:
	VCVTPS2PD  (SI), Y0
	VCVTPS2PD  16(SI), Y1
	VSUBPD     Y6, Y0, Y0
	VSUBPD     Y6, Y1, Y1
	VMULPD     Y7, Y0, Y0
	VMULPD     Y7, Y1, Y1
	VMULPD     (R8), Y0, Y0
	VMULPD     32(R8), Y1, Y1
	VADDPD     (R9), Y0, Y0
	VADDPD     32(R9), Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ       $32, SI
	ADDQ       $32, DI
	ADDQ       $64, R8
	ADDQ       $64, R9
	SUBQ       $8, CX
	JNZ        outLoop
	VZEROUPPER
	RET

// func layerNormRowGradAVX2(xh, dh, gw, gb *float64, x, dy *float32, w *float64, n int, m, rs float64)
//
// h = (float64(x[j]) − m)·rs, d = float64(dy[j]): xh[j] = h, dh[j] = d·w[j],
// gw[j] += d·h, gb[j] += d.
TEXT ·layerNormRowGradAVX2(SB), NOSPLIT, $0-80
	MOVQ         xh+0(FP), DI
	MOVQ         dh+8(FP), DX
	MOVQ         gw+16(FP), R10
	MOVQ         gb+24(FP), R11
	MOVQ         x+32(FP), SI
	MOVQ         dy+40(FP), BX
	MOVQ         w+48(FP), R8
	MOVQ         n+56(FP), CX
	VBROADCASTSD m+64(FP), Y14
	VBROADCASTSD rs+72(FP), Y15

gradLoop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VCVTPS2PD (BX), Y2
	VCVTPS2PD 16(BX), Y3
	VSUBPD    Y14, Y0, Y0
	VSUBPD    Y14, Y1, Y1
	VMULPD    Y15, Y0, Y0
	VMULPD    Y15, Y1, Y1
	VMOVUPD   Y0, (DI)
	VMOVUPD   Y1, 32(DI)
	VMULPD    (R8), Y2, Y4
	VMULPD    32(R8), Y3, Y5
	VMOVUPD   Y4, (DX)
	VMOVUPD   Y5, 32(DX)
	VMULPD    Y0, Y2, Y0
	VMULPD    Y1, Y3, Y1
	VADDPD    (R10), Y0, Y0
	VADDPD    32(R10), Y1, Y1
	VMOVUPD   Y0, (R10)
	VMOVUPD   Y1, 32(R10)
	VADDPD    (R11), Y2, Y2
	VADDPD    32(R11), Y3, Y3
	VMOVUPD   Y2, (R11)
	VMOVUPD   Y3, 32(R11)
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $64, DI
	ADDQ      $64, DX
	ADDQ      $64, R8
	ADDQ      $64, R10
	ADDQ      $64, R11
	SUBQ      $8, CX
	JNZ       gradLoop
	VZEROUPPER
	RET

// func layerNormInputGradAVX2(gx *float32, xh, dh *float64, n int, k, ff, sd, sx float64)
//
// gx[j] = float32(k·((ff·dh[j] − sd) − xh[j]·sx)).
TEXT ·layerNormInputGradAVX2(SB), NOSPLIT, $0-64
	MOVQ         gx+0(FP), DI
	MOVQ         xh+8(FP), SI
	MOVQ         dh+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSD k+32(FP), Y12
	VBROADCASTSD ff+40(FP), Y13
	VBROADCASTSD sd+48(FP), Y14
	VBROADCASTSD sx+56(FP), Y15

inLoop:
	VMULPD     (DX), Y13, Y0
	VMULPD     32(DX), Y13, Y1
	VSUBPD     Y14, Y0, Y0
	VSUBPD     Y14, Y1, Y1
	VMULPD     (SI), Y15, Y2
	VMULPD     32(SI), Y15, Y3
	VSUBPD     Y2, Y0, Y0
	VSUBPD     Y3, Y1, Y1
	VMULPD     Y12, Y0, Y0
	VMULPD     Y12, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ       $32, DI
	ADDQ       $64, SI
	ADDQ       $64, DX
	SUBQ       $8, CX
	JNZ        inLoop
	VZEROUPPER
	RET
