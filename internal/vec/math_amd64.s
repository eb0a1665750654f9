//go:build !purego

#include "textflag.h"

// Exp, GELU and GELUBackward as math.go describes them, on 8 lanes (AVX2
// and FMA) or 16 (AVX-512), any n > 0, the last n%8 or n%16 through masked
// loads and stores. Go operand order is Intel's reversed: VFMADD213PS c, b,
// a sets a = b·a + c; VFMADD231PS c, b, a sets a = b·c + a; VFNMADD231PS
// c, b, a sets a = a - b·c. The AVX2 and AVX-512 kernels run the same
// operations in the same order and give the same bits.

// Byte offsets of the rows of ·mathTab (math.go's mathTabRows, in order;
// TestMathTabLayout checks them).
#define MT_SIGN 0
#define MT_ONE 32
#define MT_XLO 64
#define MT_XHI 96
#define MT_TPOS 128
#define MT_TNEG 160
#define MT_TNEGMAX 192
#define MT_NMIN 224
#define MT_NHALF 256
#define MT_LOG2E 288
#define MT_MAGIC 320
#define MT_LN2HI 352
#define MT_LN2LO 384
#define MT_BIAS 416
#define MT_C6 448
#define MT_C5 480
#define MT_C4 512
#define MT_C3 544
#define MT_C2 576
#define MT_S2PI 608
#define MT_MP5 640
#define MT_MP4 672
#define MT_MP3 704
#define MT_MP2 736
#define MT_MP1 768
#define MT_MP0 800
#define MT_MA4 832
#define MT_MA3 864
#define MT_MA2 896
#define MT_MA1 928
#define MT_DP5 960
#define MT_DP4 992
#define MT_DP3 1024
#define MT_DP2 1056
#define MT_DP1 1088
#define MT_DP0 1120
#define MT_DA4 1152
#define MT_DA3 1184
#define MT_DA2 1216
#define MT_DA1 1248
#define MT_T0HI 1280
#define MT_NT0LO 1312
#define MT_TAILONES 1344
#define MT_TAILZEROS 1376

#define TAB(off) ·mathTab+off(SB)

// ---- AVX2 + FMA -----------------------------------------------------------

// EXPRED1 sets A = A - n·LN2HI, exact by FMA, with Z = 1.5·2^23 + n (n in
// its low bits) and N = n as a float, n = round(A·log2 e).
#define EXPRED1(A, Z, N) \
	VMOVUPS      TAB(MT_MAGIC), Z; \
	VFMADD231PS  TAB(MT_LOG2E), A, Z; \
	VSUBPS       TAB(MT_MAGIC), Z, N; \
	VFNMADD231PS TAB(MT_LN2HI), N, A

// EXPPOLYQ sets P = q(R) with e^R = 1 + R·q(R), |R| ≤ ln2/2.
#define EXPPOLYQ(R, P) \
	VMOVUPS     TAB(MT_C6), P; \
	VFMADD213PS TAB(MT_C5), R, P; \
	VFMADD213PS TAB(MT_C4), R, P; \
	VFMADD213PS TAB(MT_C3), R, P; \
	VFMADD213PS TAB(MT_C2), R, P; \
	VFMADD213PS TAB(MT_ONE), R, P

// SCALE2 sets P = P·2^n, n from EXPRED1's Z, as P·2^⌊n/2⌋·2^(n-⌊n/2⌋):
// both factors are normal for n in [-252, 128] and the first product is
// exact, so the result is rounded once, also when subnormal. For a NaN
// input Z holds garbage, but P is NaN and stays so.
#define SCALE2(P, Z, T) \
	VPSUBD TAB(MT_MAGIC), Z, Z; \
	VPSRAD $1, Z, T; \
	VPSUBD T, Z, Z; \
	VPADDD TAB(MT_BIAS), T, T; \
	VPSLLD $23, T, T; \
	VPADDD TAB(MT_BIAS), Z, Z; \
	VPSLLD $23, Z, Z; \
	VMULPS T, P, P; \
	VMULPS Z, P, P

// EXP8 sets N = e^X (X, Z clobbered). Y14 = XLO, Y15 = XHI; X goes second
// into VMAXPS and VMINPS, which return their second operand for NaN.
#define EXP8(X, Z, N) \
	VMAXPS       X, Y14, X; \
	VMINPS       X, Y15, X; \
	EXPRED1(X, Z, N); \
	VFNMADD231PS TAB(MT_LN2LO), N, X; \
	EXPPOLYQ(X, N); \
	VFMADD213PS  TAB(MT_ONE), X, N; \
	SCALE2(N, Z, X)

// TAILMASK loads M with CX (1 to 7) all-ones lanes, then zeros.
#define TAILMASK(M) \
	LEAQ    TAB(MT_TAILONES), AX; \
	NEGQ    CX; \
	VMOVDQU 32(AX)(CX*4), M

// func expAVX2(dst, x *float32, n int)
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	MOVQ    dst+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVUPS TAB(MT_XLO), Y14
	VMOVUPS TAB(MT_XHI), Y15
	CMPQ    CX, $16
	JB      one

loop16:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y3
	EXP8(Y0, Y1, Y2)
	EXP8(Y3, Y4, Y5)
	VMOVUPS Y2, 0(DI)
	VMOVUPS Y5, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	CMPQ    CX, $16
	JAE     loop16

one:
	CMPQ    CX, $8
	JB      tail
	VMOVUPS 0(SI), Y0
	EXP8(Y0, Y1, Y2)
	VMOVUPS Y2, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX

tail:
	TESTQ      CX, CX
	JZ         done
	TAILMASK(Y12)
	VMASKMOVPS (SI), Y12, Y0
	EXP8(Y0, Y1, Y2)
	VMASKMOVPS Y2, Y12, (DI)

done:
	VZEROUPPER
	RET

// GELUTAIL sets T = t = |X| clamped to 7 for x ≥ 0, 18 for x < 0 (NaN
// kept), and, for e^{-t²/2} = 2^n·(1 + A·N), A = r and N = q(r), with Z as
// for SCALE2; L is clobbered. t² = H + L exactly (H in A first), and
// -L/2 - n·LN2LO, tiny, joins r in one rounding. Y14 = -0 (sign mask).
#define GELUTAIL(X, T, A, L, Z, N) \
	VANDNPS      X, Y14, T; \
	VPSRAD       $31, X, L; \
	VANDPS       TAB(MT_TNEG), L, L; \
	VADDPS       TAB(MT_TPOS), L, L; \
	VMINPS       T, L, T; \
	VMULPS       T, T, A; \
	VMOVAPS      A, L; \
	VFMSUB231PS  T, T, L; \
	VMULPS       TAB(MT_NHALF), A, A; \
	VMULPS       TAB(MT_NHALF), L, L; \
	EXPRED1(A, Z, N); \
	VFNMADD231PS TAB(MT_LN2LO), N, L; \
	VADDPS       L, A, A; \
	EXPPOLYQ(A, N)

// GELU8 sets A = GELU(X) = max(-0, x) - t·u, that is x - t·u for x ≥ 0
// and -t·u for x < 0, where t·u = e^{-t²/2}·w, w = M/(S·M + A(t)),
// M = t·Pm(t). Pm's constant term (1/2) and A's (1) are added last, M =
// t·(t·P1) + t/2 and S·M + A = (S·M + t·A1) + 1, each in one rounding, not
// two. w·e^r is w + (w·r)·q(r): one rounding where the last step of e^r
// and the product with w would take two.
#define GELU8(X, T, A, Z, N, P, Q) \
	VMOVUPS      TAB(MT_MP5), P; \
	GELUTAIL(X, T, A, Q, Z, N); \
	VFMADD213PS  TAB(MT_MP4), T, P; \
	VFMADD213PS  TAB(MT_MP3), T, P; \
	VFMADD213PS  TAB(MT_MP2), T, P; \
	VFMADD213PS  TAB(MT_MP1), T, P; \
	VMULPS       T, P, P; \
	VMULPS       TAB(MT_NHALF), T, Q; \
	VFMSUB231PS  T, P, Q; \
	VMOVUPS      TAB(MT_MA4), P; \
	VFMADD213PS  TAB(MT_MA3), T, P; \
	VFMADD213PS  TAB(MT_MA2), T, P; \
	VFMADD213PS  TAB(MT_MA1), T, P; \
	VMULPS       T, P, P; \
	VFMADD231PS  TAB(MT_S2PI), Q, P; \
	VADDPS       TAB(MT_ONE), P, P; \
	VDIVPS       P, Q, P; \
	VMULPS       A, P, Q; \
	VFMADD213PS  P, Q, N; \
	SCALE2(N, Z, Q); \
	VMAXPS       X, Y14, A; \
	VSUBPS       N, A, A

// GELUBWD8 sets Q = DYM·GELU'(X): with u = e^{-t²/2}·d, d = (t - t0)·e(t),
// e(t) = Pd/(Ad - S·Pd), GELU' is u for x < 0 (sign bit set) and 1 - u
// otherwise. t - T0HI is exact near t0, and d = (t - T0HI)·e + (-T0LO·e)
// rounds once.
#define GELUBWD8(X, DYM, T, A, Z, N, P, Q) \
	VMOVUPS      TAB(MT_DP5), P; \
	GELUTAIL(X, T, A, Q, Z, N); \
	VFMADD213PS  TAB(MT_DP4), T, P; \
	VFMADD213PS  TAB(MT_DP3), T, P; \
	VFMADD213PS  TAB(MT_DP2), T, P; \
	VFMADD213PS  TAB(MT_DP1), T, P; \
	VFMADD213PS  TAB(MT_DP0), T, P; \
	VMOVUPS      TAB(MT_DA4), Q; \
	VFMADD213PS  TAB(MT_DA3), T, Q; \
	VFMADD213PS  TAB(MT_DA2), T, Q; \
	VFMADD213PS  TAB(MT_DA1), T, Q; \
	VFMADD213PS  TAB(MT_ONE), T, Q; \
	VFNMADD231PS TAB(MT_S2PI), P, Q; \
	VDIVPS       Q, P, P; \
	VSUBPS       TAB(MT_T0HI), T, Q; \
	VMULPS       TAB(MT_NT0LO), P, T; \
	VFMADD231PS  Q, P, T; \
	VMULPS       A, T, Q; \
	VFMADD213PS  T, Q, N; \
	SCALE2(N, Z, Q); \
	VMOVUPS      TAB(MT_ONE), Q; \
	VSUBPS       N, Q, Q; \
	VBLENDVPS    X, N, Q, Q; \
	VMULPS       DYM, Q, Q

// func geluAVX2(dst, x *float32, n int)
TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ    dst+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVUPS TAB(MT_SIGN), Y14
	CMPQ    CX, $16
	JB      one

loop16:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y7
	GELU8(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	GELU8(Y7, Y8, Y9, Y10, Y11, Y12, Y13)
	VMOVUPS Y2, 0(DI)
	VMOVUPS Y9, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	CMPQ    CX, $16
	JAE     loop16

one:
	CMPQ    CX, $8
	JB      tail
	VMOVUPS 0(SI), Y0
	GELU8(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	VMOVUPS Y2, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX

tail:
	TESTQ      CX, CX
	JZ         done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	GELU8(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	VMASKMOVPS Y2, Y15, (DI)

done:
	VZEROUPPER
	RET

// func geluBackwardAVX2(dst, dy, x *float32, n int)
TEXT ·geluBackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ    dst+0(FP), DI
	MOVQ    dy+8(FP), DX
	MOVQ    x+16(FP), SI
	MOVQ    n+24(FP), CX
	VMOVUPS TAB(MT_SIGN), Y14
	CMPQ    CX, $16
	JB      one

loop16:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y7
	GELUBWD8(Y0, 0(DX), Y1, Y2, Y3, Y4, Y5, Y6)
	GELUBWD8(Y7, 32(DX), Y8, Y9, Y10, Y11, Y12, Y13)
	VMOVUPS Y6, 0(DI)
	VMOVUPS Y13, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX
	CMPQ    CX, $16
	JAE     loop16

one:
	CMPQ    CX, $8
	JB      tail
	VMOVUPS 0(SI), Y0
	GELUBWD8(Y0, 0(DX), Y1, Y2, Y3, Y4, Y5, Y6)
	VMOVUPS Y6, 0(DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX

tail:
	TESTQ      CX, CX
	JZ         done
	TAILMASK(Y15)
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (DX), Y15, Y7
	GELUBWD8(Y0, Y7, Y1, Y2, Y3, Y4, Y5, Y6)
	VMASKMOVPS Y6, Y15, (DI)

done:
	VZEROUPPER
	RET

// ---- AVX-512 ----------------------------------------------------------------

// The same arithmetic on 16 lanes, with constants broadcast from the first
// float of their row, a mask register for VBLENDVPS, masked loads and
// stores for the last n%16, and VSCALEFPS for SCALE2. VSCALEFPS takes a
// microcode assist whenever it underflows, so lanes whose result is 0
// anyway (n < -155) are zeroed by the mask instead.

#define EXPRED1Z(A, NF) \
	VMOVAPS           Z29, NF; \
	VFMADD231PS.BCST  TAB(MT_LOG2E), A, NF; \
	VSUBPS            Z29, NF, NF; \
	VFNMADD231PS.BCST TAB(MT_LN2HI), NF, A

#define EXPPOLYQZ(R, P) \
	VBROADCASTSS     TAB(MT_C6), P; \
	VFMADD213PS.BCST TAB(MT_C5), R, P; \
	VFMADD213PS.BCST TAB(MT_C4), R, P; \
	VFMADD213PS.BCST TAB(MT_C3), R, P; \
	VFMADD213PS.BCST TAB(MT_C2), R, P; \
	VFMADD213PS.BCST TAB(MT_ONE), R, P

// SCALEZ sets D = P·2^NF, or ±0 (P's sign, as SCALE2 rounds) where
// NF < -155, not for NaN: predicate 5 is not-less-than, true when
// unordered.
#define SCALEZ(P, NF, D) \
	VPANDD.BCST TAB(MT_SIGN), P, D; \
	VCMPPS.BCST $5, TAB(MT_NMIN), NF, K3; \
	VSCALEFPS   NF, P, K3, D

// EXP16 sets X = e^X (NF, P clobbered). Z30 = XLO, Z31 = XHI, Z29 = MAGIC.
#define EXP16(X, NF, P) \
	VMAXPS            X, Z30, X; \
	VMINPS            X, Z31, X; \
	EXPRED1Z(X, NF); \
	VFNMADD231PS.BCST TAB(MT_LN2LO), NF, X; \
	EXPPOLYQZ(X, P); \
	VFMADD213PS.BCST  TAB(MT_ONE), X, P; \
	SCALEZ(P, NF, X)

// ZTAILMASK sets K2 to the low CX (1 to 15) lanes.
#define ZTAILMASK \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX; \
	KMOVW AX, K2

// func expAVX512(dst, x *float32, n int)
TEXT ·expAVX512(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS TAB(MT_XLO), Z30
	VBROADCASTSS TAB(MT_XHI), Z31
	VBROADCASTSS TAB(MT_MAGIC), Z29
	CMPQ         CX, $32
	JB           one

loop32:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z3
	EXP16(Z0, Z1, Z2)
	EXP16(Z3, Z4, Z5)
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z3, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop32

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS 0(SI), Z0
	EXP16(Z0, Z1, Z2)
	VMOVUPS Z0, 0(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX

tail:
	TESTQ     CX, CX
	JZ        done
	ZTAILMASK
	VMOVUPS.Z (SI), K2, Z0
	EXP16(Z0, Z1, Z2)
	VMOVUPS   Z0, K2, (DI)

done:
	VZEROUPPER
	RET

// GELUTAILZ is GELUTAIL with NF = n as a float and K1 = the lanes with
// x < 0 (sign set). Z30 = -0, Z27 = 7, Z28 = 18, Z29 = MAGIC.
#define GELUTAILZ(X, T, A, L, NF, N) \
	VPANDND           X, Z30, A; \
	VPTESTMD          Z30, X, K1; \
	VMINPS            A, Z27, T; \
	VMINPS            A, Z28, K1, T; \
	VMULPS            T, T, A; \
	VMOVAPS           A, L; \
	VFMSUB231PS       T, T, L; \
	VMULPS.BCST       TAB(MT_NHALF), A, A; \
	VMULPS.BCST       TAB(MT_NHALF), L, L; \
	EXPRED1Z(A, NF); \
	VFNMADD231PS.BCST TAB(MT_LN2LO), NF, L; \
	VADDPS            L, A, A; \
	EXPPOLYQZ(A, N)

// GELU16 sets A = GELU(X), as GELU8.
#define GELU16(X, T, A, NF, N, P, Q) \
	VBROADCASTSS     TAB(MT_MP5), P; \
	GELUTAILZ(X, T, A, Q, NF, N); \
	VFMADD213PS.BCST TAB(MT_MP4), T, P; \
	VFMADD213PS.BCST TAB(MT_MP3), T, P; \
	VFMADD213PS.BCST TAB(MT_MP2), T, P; \
	VFMADD213PS.BCST TAB(MT_MP1), T, P; \
	VMULPS           T, P, P; \
	VMULPS.BCST      TAB(MT_NHALF), T, Q; \
	VFMSUB231PS      T, P, Q; \
	VBROADCASTSS     TAB(MT_MA4), P; \
	VFMADD213PS.BCST TAB(MT_MA3), T, P; \
	VFMADD213PS.BCST TAB(MT_MA2), T, P; \
	VFMADD213PS.BCST TAB(MT_MA1), T, P; \
	VMULPS           T, P, P; \
	VFMADD231PS.BCST TAB(MT_S2PI), Q, P; \
	VADDPS.BCST      TAB(MT_ONE), P, P; \
	VDIVPS           P, Q, P; \
	VMULPS           A, P, Q; \
	VFMADD213PS      P, Q, N; \
	SCALEZ(N, NF, Q); \
	VMAXPS           X, Z30, A; \
	VSUBPS           Q, A, A

// GELUBWD16 sets N = DYM·GELU'(X), as GELUBWD8 sets Q.
#define GELUBWD16(X, DYM, T, A, NF, N, P, Q) \
	VBROADCASTSS      TAB(MT_DP5), P; \
	GELUTAILZ(X, T, A, Q, NF, N); \
	VFMADD213PS.BCST  TAB(MT_DP4), T, P; \
	VFMADD213PS.BCST  TAB(MT_DP3), T, P; \
	VFMADD213PS.BCST  TAB(MT_DP2), T, P; \
	VFMADD213PS.BCST  TAB(MT_DP1), T, P; \
	VFMADD213PS.BCST  TAB(MT_DP0), T, P; \
	VBROADCASTSS      TAB(MT_DA4), Q; \
	VFMADD213PS.BCST  TAB(MT_DA3), T, Q; \
	VFMADD213PS.BCST  TAB(MT_DA2), T, Q; \
	VFMADD213PS.BCST  TAB(MT_DA1), T, Q; \
	VFMADD213PS.BCST  TAB(MT_ONE), T, Q; \
	VFNMADD231PS.BCST TAB(MT_S2PI), P, Q; \
	VDIVPS            Q, P, P; \
	VSUBPS.BCST       TAB(MT_T0HI), T, Q; \
	VMULPS.BCST       TAB(MT_NT0LO), P, T; \
	VFMADD231PS       Q, P, T; \
	VMULPS            A, T, Q; \
	VFMADD213PS       T, Q, N; \
	SCALEZ(N, NF, Q); \
	VBROADCASTSS      TAB(MT_ONE), N; \
	VSUBPS            Q, N, N; \
	VMOVAPS           Q, K1, N; \
	VMULPS            DYM, N, N

// GELUCONSTZ loads the registers GELUTAILZ uses.
#define GELUCONSTZ \
	VBROADCASTSS TAB(MT_SIGN), Z30; \
	VBROADCASTSS TAB(MT_TPOS), Z27; \
	VBROADCASTSS TAB(MT_TNEGMAX), Z28; \
	VBROADCASTSS TAB(MT_MAGIC), Z29

// func geluAVX512(dst, x *float32, n int)
TEXT ·geluAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	GELUCONSTZ
	CMPQ CX, $32
	JB   one

loop32:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z7
	GELU16(Z0, Z1, Z2, Z3, Z4, Z5, Z6)
	GELU16(Z7, Z8, Z9, Z10, Z11, Z12, Z13)
	VMOVUPS Z2, 0(DI)
	VMOVUPS Z9, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop32

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS 0(SI), Z0
	GELU16(Z0, Z1, Z2, Z3, Z4, Z5, Z6)
	VMOVUPS Z2, 0(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX

tail:
	TESTQ     CX, CX
	JZ        done
	ZTAILMASK
	VMOVUPS.Z (SI), K2, Z0
	GELU16(Z0, Z1, Z2, Z3, Z4, Z5, Z6)
	VMOVUPS   Z2, K2, (DI)

done:
	VZEROUPPER
	RET

// func geluBackwardAVX512(dst, dy, x *float32, n int)
TEXT ·geluBackwardAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dy+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	GELUCONSTZ
	CMPQ CX, $32
	JB   one

loop32:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z7
	GELUBWD16(Z0, 0(DX), Z1, Z2, Z3, Z4, Z5, Z6)
	GELUBWD16(Z7, 64(DX), Z8, Z9, Z10, Z11, Z12, Z13)
	VMOVUPS Z4, 0(DI)
	VMOVUPS Z11, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop32

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS 0(SI), Z0
	GELUBWD16(Z0, 0(DX), Z1, Z2, Z3, Z4, Z5, Z6)
	VMOVUPS Z4, 0(DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX

tail:
	TESTQ     CX, CX
	JZ        done
	ZTAILMASK
	VMOVUPS.Z (SI), K2, Z0
	VMOVUPS.Z (DX), K2, Z7
	GELUBWD16(Z0, Z7, Z1, Z2, Z3, Z4, Z5, Z6)
	VMOVUPS   Z4, K2, (DI)

done:
	VZEROUPPER
	RET
