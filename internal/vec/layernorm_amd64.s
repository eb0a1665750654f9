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

// The statistics of 16 rows, a row a lane of Z8 (rows 0 to 7) and Z9 (8
// to 15), so that every row's sum runs in element order while the rows
// overlap their additions' latencies. R8 holds the row stride in bytes,
// R9, R10 and R11 three, five and seven strides.

// TRANSPOSE8x4 loads four floats of each of the eight rows from B on and
// leaves them widened in Z0 to Z3, a column each, row k in lane k: the
// halves of Y0 to Y3 hold rows k and k+4, whose floats two rounds of
// unpacking within 128-bit lanes sort into columns.
#define TRANSPOSE8x4(B) \
	VMOVUPS     (B), X0; \
	VINSERTF128 $1, (B)(R8*4), Y0, Y0; \
	VMOVUPS     (B)(R8*1), X1; \
	VINSERTF128 $1, (B)(R10*1), Y1, Y1; \
	VMOVUPS     (B)(R8*2), X2; \
	VINSERTF128 $1, (B)(R9*2), Y2, Y2; \
	VMOVUPS     (B)(R9*1), X3; \
	VINSERTF128 $1, (B)(R11*1), Y3, Y3; \
	VUNPCKLPS   Y1, Y0, Y4; \
	VUNPCKHPS   Y1, Y0, Y5; \
	VUNPCKLPS   Y3, Y2, Y6; \
	VUNPCKHPS   Y3, Y2, Y7; \
	VUNPCKLPD   Y6, Y4, Y0; \
	VUNPCKHPD   Y6, Y4, Y1; \
	VUNPCKLPD   Y7, Y5, Y2; \
	VUNPCKHPD   Y7, Y5, Y3; \
	VCVTPS2PD   Y0, Z0; \
	VCVTPS2PD   Y1, Z1; \
	VCVTPS2PD   Y2, Z2; \
	VCVTPS2PD   Y3, Z3

// STORESUM4 stores columns Z0 to Z3 at OFF, OFF+128, ... of DI and adds
// them into ACC in order.
#define STORESUM4(OFF, ACC) \
	VMOVUPD Z0, OFF(DI); \
	VMOVUPD Z1, OFF+128(DI); \
	VMOVUPD Z2, OFF+256(DI); \
	VMOVUPD Z3, OFF+384(DI); \
	VADDPD  Z0, ACC, ACC; \
	VADDPD  Z1, ACC, ACC; \
	VADDPD  Z2, ACC, ACC; \
	VADDPD  Z3, ACC, ACC

// func layerNormSumsAVX512(x *float32, f, n int, t *float64, s *[16]float64)
//
// s[k] = Σ float64(x[k·f+j]) over j < n in order, and t[16j+k] that
// element widened.
TEXT ·layerNormSumsAVX512(SB), NOSPLIT, $0-40
	MOVQ   x+0(FP), SI
	MOVQ   f+8(FP), R8
	SHLQ   $2, R8
	MOVQ   n+16(FP), CX
	MOVQ   t+24(FP), DI
	LEAQ   (R8)(R8*2), R9
	LEAQ   (R8)(R8*4), R10
	LEAQ   (R9)(R8*4), R11
	LEAQ   (SI)(R8*8), DX
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9

sumsLoop:
	TRANSPOSE8x4(SI)
	STORESUM4(0, Z8)
	TRANSPOSE8x4(DX)
	STORESUM4(64, Z9)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $512, DI
	SUBQ $4, CX
	JNZ  sumsLoop
	MOVQ s+32(FP), AX
	VMOVUPD Z8, (AX)
	VMOVUPD Z9, 64(AX)
	VZEROUPPER
	RET

// SQDEV adds (t − m)² of the column at OFF of DI into ACC, m in M.
#define SQDEV(OFF, M, ACC) \
	VMOVUPD OFF(DI), Z0; \
	VSUBPD  M, Z0, Z0; \
	VMULPD  Z0, Z0, Z0; \
	VADDPD  Z0, ACC, ACC

// func layerNormSqDevsAVX512(t *float64, n int, m, q *[16]float64)
//
// q[k] = Σ (t[16j+k] − m[k])² over j < n in order.
TEXT ·layerNormSqDevsAVX512(SB), NOSPLIT, $0-32
	MOVQ    t+0(FP), DI
	MOVQ    n+8(FP), CX
	MOVQ    m+16(FP), AX
	VMOVUPD (AX), Z10
	VMOVUPD 64(AX), Z11
	VXORPS  X8, X8, X8
	VXORPS  X9, X9, X9

sqDevLoop:
	SQDEV(0, Z10, Z8)
	SQDEV(64, Z11, Z9)
	SQDEV(128, Z10, Z8)
	SQDEV(192, Z11, Z9)
	ADDQ $256, DI
	SUBQ $2, CX
	JNZ  sqDevLoop
	MOVQ    q+24(FP), AX
	VMOVUPD Z8, (AX)
	VMOVUPD Z9, 64(AX)
	VZEROUPPER
	RET

// The row gradient again on AVX-512, 8 elements a step in one register.

// func layerNormRowGradAVX512(xh, dh, gw, gb *float64, x, dy *float32, w *float64, n int, m, rs float64)
TEXT ·layerNormRowGradAVX512(SB), NOSPLIT, $0-80
	MOVQ         xh+0(FP), DI
	MOVQ         dh+8(FP), DX
	MOVQ         gw+16(FP), R10
	MOVQ         gb+24(FP), R11
	MOVQ         x+32(FP), SI
	MOVQ         dy+40(FP), BX
	MOVQ         w+48(FP), R8
	MOVQ         n+56(FP), CX
	VBROADCASTSD m+64(FP), Z14
	VBROADCASTSD rs+72(FP), Z15

grad512Loop:
	VCVTPS2PD (SI), Z0
	VCVTPS2PD (BX), Z2
	VSUBPD    Z14, Z0, Z0
	VMULPD    Z15, Z0, Z0
	VMOVUPD   Z0, (DI)
	VMULPD    (R8), Z2, Z4
	VMOVUPD   Z4, (DX)
	VMULPD    Z0, Z2, Z0
	VADDPD    (R10), Z0, Z0
	VMOVUPD   Z0, (R10)
	VADDPD    (R11), Z2, Z2
	VMOVUPD   Z2, (R11)
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $64, DI
	ADDQ      $64, DX
	ADDQ      $64, R8
	ADDQ      $64, R10
	ADDQ      $64, R11
	SUBQ      $8, CX
	JNZ       grad512Loop
	VZEROUPPER
	RET


// TRANSPOSE8x4D loads four float64s of each of the eight rows from B on
// (strides as in TRANSPOSE8x4) and leaves them in O0 to O3, a column each,
// with rows 0, 1, 4, 5, 2, 3, 6, 7 in lanes 0 to 7: the halves of Z0 to Z3
// hold rows k and k+4, unpacking pairs the rows, and shuffling 128-bit
// lanes gathers each column.
#define TRANSPOSE8x4D(B, O0, O1, O2, O3) \
	VMOVUPD      (B), Y0; \
	VINSERTF64X4 $1, (B)(R8*4), Z0, Z0; \
	VMOVUPD      (B)(R8*1), Y1; \
	VINSERTF64X4 $1, (B)(R10*1), Z1, Z1; \
	VMOVUPD      (B)(R8*2), Y2; \
	VINSERTF64X4 $1, (B)(R9*2), Z2, Z2; \
	VMOVUPD      (B)(R9*1), Y3; \
	VINSERTF64X4 $1, (B)(R11*1), Z3, Z3; \
	VUNPCKLPD    Z1, Z0, Z4; \
	VUNPCKHPD    Z1, Z0, Z5; \
	VUNPCKLPD    Z3, Z2, Z6; \
	VUNPCKHPD    Z3, Z2, Z7; \
	VSHUFF64X2   $0x88, Z6, Z4, O0; \
	VSHUFF64X2   $0x88, Z7, Z5, O1; \
	VSHUFF64X2   $0xdd, Z6, Z4, O2; \
	VSHUFF64X2   $0xdd, Z7, Z5, O3

// GRADSUM adds column E of dh into Z8 and E times column H of xh into Z9.
#define GRADSUM(E, H) \
	VADDPD E, Z8, Z8; \
	VMULPD H, E, E; \
	VADDPD E, Z9, Z9

// func layerNormGradSumsAVX512(xh, dh *float64, stride, n int, sd, sx *[8]float64)
//
// In lane l, for row k as TRANSPOSE8x4D sorts them: sd[l] = Σ dh[k·stride+j]
// and sx[l] = Σ dh[k·stride+j]·xh[k·stride+j] over j < n in order.
TEXT ·layerNormGradSumsAVX512(SB), NOSPLIT, $0-48
	MOVQ   xh+0(FP), SI
	MOVQ   dh+8(FP), DX
	MOVQ   stride+16(FP), R8
	SHLQ   $3, R8
	MOVQ   n+24(FP), CX
	LEAQ   (R8)(R8*2), R9
	LEAQ   (R8)(R8*4), R10
	LEAQ   (R9)(R8*4), R11
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9

gradSumsLoop:
	TRANSPOSE8x4D(SI, Z16, Z17, Z18, Z19)
	TRANSPOSE8x4D(DX, Z20, Z21, Z22, Z23)
	GRADSUM(Z20, Z16)
	GRADSUM(Z21, Z17)
	GRADSUM(Z22, Z18)
	GRADSUM(Z23, Z19)
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $4, CX
	JNZ  gradSumsLoop
	MOVQ    sd+32(FP), AX
	VMOVUPD Z8, (AX)
	MOVQ    sx+40(FP), AX
	VMOVUPD Z9, (AX)
	VZEROUPPER
	RET

// ROWGRAD is layerNormRowGradAVX512's step for one row, its x and dy at XA
// and GA, its xh and dh at HA and EA, its mean and rstd in M and RS, w in
// Z2: it adds into the weight and bias gradients in Z4 and Z5.
#define ROWGRAD(XA, GA, HA, EA, M, RS) \
	VCVTPS2PD XA, Z0; \
	VCVTPS2PD GA, Z1; \
	VSUBPD    M, Z0, Z0; \
	VMULPD    RS, Z0, Z0; \
	VMOVUPD   Z0, HA; \
	VMULPD    Z2, Z1, Z3; \
	VMOVUPD   Z3, EA; \
	VMULPD    Z0, Z1, Z0; \
	VADDPD    Z0, Z4, Z4; \
	VADDPD    Z1, Z5, Z5

// func layerNormRowGradsAVX512(t, gwb *float64, x, dy *float32, w *float64, f, n int, m, rs *[8]float64)
//
// layerNormRowGradAVX512 on 8 rows at once, 8 columns a step, keeping
// those columns' weight and bias gradients in registers from row to row.
// Row k's x and dy start at k·f, its xh and dh at 2k·f and (2k+1)·f of t;
// gb follows gw at f. R8 is the stride of x in bytes, 4f, and R9 to R12
// three, five, seven and sixteen of it; t's rows are 4·R8 apart.
TEXT ·layerNormRowGradsAVX512(SB), NOSPLIT, $0-72
	MOVQ         m+56(FP), AX
	VBROADCASTSD (AX), Z16
	VBROADCASTSD 8(AX), Z17
	VBROADCASTSD 16(AX), Z18
	VBROADCASTSD 24(AX), Z19
	VBROADCASTSD 32(AX), Z20
	VBROADCASTSD 40(AX), Z21
	VBROADCASTSD 48(AX), Z22
	VBROADCASTSD 56(AX), Z23
	MOVQ         rs+64(FP), AX
	VBROADCASTSD (AX), Z24
	VBROADCASTSD 8(AX), Z25
	VBROADCASTSD 16(AX), Z26
	VBROADCASTSD 24(AX), Z27
	VBROADCASTSD 32(AX), Z28
	VBROADCASTSD 40(AX), Z29
	VBROADCASTSD 48(AX), Z30
	VBROADCASTSD 56(AX), Z31
	MOVQ         t+0(FP), DI
	MOVQ         gwb+8(FP), R13
	MOVQ         x+16(FP), SI
	MOVQ         dy+24(FP), BX
	MOVQ         w+32(FP), AX
	MOVQ         f+40(FP), R8
	MOVQ         n+48(FP), CX
	LEAQ         (DI)(R8*8), DX
	SHLQ         $2, R8
	LEAQ         (R8)(R8*2), R9
	LEAQ         (R8)(R8*4), R10
	LEAQ         (R9)(R8*4), R11
	MOVQ         R8, R12
	SHLQ         $4, R12

rowGradsLoop:
	VMOVUPD (AX), Z2
	VMOVUPD (R13), Z4
	VMOVUPD (R13)(R8*2), Z5
	ROWGRAD((SI), (BX), (DI), (DX), Z16, Z24)
	ROWGRAD((SI)(R8*1), (BX)(R8*1), (DI)(R8*4), (DX)(R8*4), Z17, Z25)
	ROWGRAD((SI)(R8*2), (BX)(R8*2), (DI)(R8*8), (DX)(R8*8), Z18, Z26)
	ROWGRAD((SI)(R9*1), (BX)(R9*1), (DI)(R9*4), (DX)(R9*4), Z19, Z27)
	ROWGRAD((SI)(R8*4), (BX)(R8*4), (DI)(R12*1), (DX)(R12*1), Z20, Z28)
	ROWGRAD((SI)(R10*1), (BX)(R10*1), (DI)(R10*4), (DX)(R10*4), Z21, Z29)
	ROWGRAD((SI)(R9*2), (BX)(R9*2), (DI)(R9*8), (DX)(R9*8), Z22, Z30)
	ROWGRAD((SI)(R11*1), (BX)(R11*1), (DI)(R11*4), (DX)(R11*4), Z23, Z31)
	VMOVUPD Z4, (R13)
	VMOVUPD Z5, (R13)(R8*2)
	ADDQ    $32, SI
	ADDQ    $32, BX
	ADDQ    $64, DI
	ADDQ    $64, DX
	ADDQ    $64, AX
	ADDQ    $64, R13
	SUBQ    $8, CX
	JNZ     rowGradsLoop
	VZEROUPPER
	RET

// func layerNormOutsAVX512(out, x *float32, w, b *float64, f, n, rows int, m, rs *float64)
//
// layerNormOutAVX2 on AVX-512, 8 elements a step, on rows rows f apart,
// with m and rs a row each.
TEXT ·layerNormOutsAVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ b+24(FP), R9
	MOVQ f+32(FP), R10
	SHLQ $2, R10
	MOVQ n+40(FP), R11
	MOVQ rows+48(FP), R12
	MOVQ m+56(FP), AX
	MOVQ rs+64(FP), BX

outsRow:
	VBROADCASTSD (AX), Z6
	VBROADCASTSD (BX), Z7
	XORQ         DX, DX

outsCol:
	VCVTPS2PD (SI)(DX*4), Z0
	VSUBPD    Z6, Z0, Z0
	VMULPD    Z7, Z0, Z0
	VMULPD    (R8)(DX*8), Z0, Z0
	VADDPD    (R9)(DX*8), Z0, Z0
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (DI)(DX*4)
	ADDQ      $8, DX
	CMPQ      DX, R11
	JB        outsCol
	ADDQ      R10, SI
	ADDQ      R10, DI
	ADDQ      $8, AX
	ADDQ      $8, BX
	DECQ      R12
	JNZ       outsRow
	VZEROUPPER
	RET

// func layerNormInputGradsAVX512(gx *float32, t *float64, f, n, rows int, k, sd, sx *float64, ff float64)
//
// layerNormInputGradAVX2 on AVX-512, 8 elements a step, on rows rows:
// gx's f apart, their xh and dh 2f apart from t and t+f, with k, sd and sx
// a row each.
TEXT ·layerNormInputGradsAVX512(SB), NOSPLIT, $0-72
	MOVQ         gx+0(FP), DI
	MOVQ         t+8(FP), SI
	MOVQ         f+16(FP), R10
	LEAQ         (SI)(R10*8), R9
	SHLQ         $2, R10
	MOVQ         n+24(FP), R11
	MOVQ         rows+32(FP), R12
	MOVQ         k+40(FP), AX
	MOVQ         sd+48(FP), BX
	MOVQ         sx+56(FP), R13
	VBROADCASTSD ff+64(FP), Z13

inGradsRow:
	VBROADCASTSD (AX), Z12
	VBROADCASTSD (BX), Z14
	VBROADCASTSD (R13), Z15
	XORQ         DX, DX

inGradsCol:
	VMULPD    (R9)(DX*8), Z13, Z0
	VSUBPD    Z14, Z0, Z0
	VMULPD    (SI)(DX*8), Z15, Z2
	VSUBPD    Z2, Z0, Z0
	VMULPD    Z12, Z0, Z0
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (DI)(DX*4)
	ADDQ      $8, DX
	CMPQ      DX, R11
	JB        inGradsCol
	ADDQ      R10, DI
	LEAQ      (SI)(R10*4), SI
	LEAQ      (R9)(R10*4), R9
	ADDQ      $8, AX
	ADDQ      $8, BX
	ADDQ      $8, R13
	DECQ      R12
	JNZ       inGradsRow
	VZEROUPPER
	RET

// func layerNormAddRoundedAVX2(dst *float32, src *float64, n int)
//
// dst[j] += float32(src[j]), rounded and then added in float32.
TEXT ·layerNormAddRoundedAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

addRoundedLoop:
	VCVTPD2PSY (SI), X0
	VCVTPD2PSY 32(SI), X1
	VADDPS     (DI), X0, X0
	VADDPS     16(DI), X1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ       $64, SI
	ADDQ       $32, DI
	SUBQ       $8, CX
	JNZ        addRoundedLoop
	VZEROUPPER
	RET
