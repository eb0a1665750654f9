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

// ---- The arithmetic, once for both widths ----------------------------------

// The macros below are expanded where a kernel uses them, with the
// spellings its width section defines: KLD loads a constant row, KB is the
// suffix of a constant operand (.BCST on AVX-512), MAGICLD and MAGIC give
// 1.5·2^23, SIGN holds -0 and XLO/XHI exp's clamp bounds; SCALE, CLAMPT and
// PICKNEG are the steps the widths do differently.

// EXPRED1 sets A = A - n·LN2HI, exact by FMA, with Z = 1.5·2^23 + n (n in
// its low bits) and NF = n as a float, n = round(A·log2 e).
#define EXPRED1(A, Z, NF) \
	MAGICLD(Z); \
	VFMADD231PS  KB TAB(MT_LOG2E), A, Z; \
	VSUBPS       MAGIC, Z, NF; \
	VFNMADD231PS KB TAB(MT_LN2HI), NF, A

// HORNERn steps P = P·T + c for n constants c in turn: with P loaded
// with the leading coefficient, P becomes the polynomial at T.
#define HORNER1(T, P, a)             VFMADD213PS KB TAB(a), T, P
#define HORNER3(T, P, a, b, c)       HORNER1(T, P, a); HORNER1(T, P, b); HORNER1(T, P, c)
#define HORNER4(T, P, a, b, c, d)    HORNER3(T, P, a, b, c); HORNER1(T, P, d)
#define HORNER5(T, P, a, b, c, d, e) HORNER4(T, P, a, b, c, d); HORNER1(T, P, e)

// EXPPOLYQ sets P = q(R) with e^R = 1 + R·q(R), |R| ≤ ln2/2.
#define EXPPOLYQ(R, P) \
	KLD TAB(MT_C6), P; \
	HORNER5(R, P, MT_C5, MT_C4, MT_C3, MT_C2, MT_ONE)

// EXP sets X = e^X (Z, NF, P clobbered). X goes second into VMAXPS and
// VMINPS, which return their second operand for NaN.
#define EXP(X, Z, NF, P) \
	VMAXPS       X, XLO, X; \
	VMINPS       X, XHI, X; \
	EXPRED1(X, Z, NF); \
	VFNMADD231PS KB TAB(MT_LN2LO), NF, X; \
	EXPPOLYQ(X, P); \
	VFMADD213PS  KB TAB(MT_ONE), X, P; \
	SCALE(P, Z, NF, X)

// GELUTAIL sets T = t = |X| clamped to 7 for x ≥ 0, 18 for x < 0 (NaN
// kept), and, for e^{-t²/2} = 2^n·(1 + A·N), A = r and N = q(r), with Z
// and NF as for SCALE; L is clobbered. t² = H + L exactly (H in A first),
// and -L/2 - n·LN2LO, tiny, joins r in one rounding.
#define GELUTAIL(X, T, A, L, Z, NF, N) \
	CLAMPT(X, T, A, L); \
	VMULPS       T, T, A; \
	VMOVAPS      A, L; \
	VFMSUB231PS  T, T, L; \
	VMULPS       KB TAB(MT_NHALF), A, A; \
	VMULPS       KB TAB(MT_NHALF), L, L; \
	EXPRED1(A, Z, NF); \
	VFNMADD231PS KB TAB(MT_LN2LO), NF, L; \
	VADDPS       L, A, A; \
	EXPPOLYQ(A, N)

// EXPMUL sets Q = W·e^{-t²/2} from GELUTAIL's A, N, Z and NF, as
// 2^n·(W + (W·r)·q(r)): one rounding where the last step of e^r and the
// product with W would take two.
#define EXPMUL(W, A, Z, NF, N, Q) \
	VMULPS      A, W, Q; \
	VFMADD213PS W, Q, N; \
	SCALE(N, Z, NF, Q)

// GELU sets A = GELU(X) = max(-0, x) - t·u, that is x - t·u for x ≥ 0
// and -t·u for x < 0, where t·u = e^{-t²/2}·w, w = M/(S·M + A(t)),
// M = t·Pm(t). Pm's constant term (1/2) and A's (1) are added last, M =
// t·(t·P1) + t/2 and S·M + A = (S·M + t·A1) + 1, each in one rounding, not
// two.
#define GELU(X, T, A, Z, NF, N, P, Q) \
	KLD          TAB(MT_MP5), P; \
	GELUTAIL(X, T, A, Q, Z, NF, N); \
	HORNER4(T, P, MT_MP4, MT_MP3, MT_MP2, MT_MP1); \
	VMULPS       T, P, P; \
	VMULPS       KB TAB(MT_NHALF), T, Q; \
	VFMSUB231PS  T, P, Q; \
	KLD          TAB(MT_MA4), P; \
	HORNER3(T, P, MT_MA3, MT_MA2, MT_MA1); \
	VMULPS       T, P, P; \
	VFMADD231PS  KB TAB(MT_S2PI), Q, P; \
	VADDPS       KB TAB(MT_ONE), P, P; \
	VDIVPS       P, Q, P; \
	EXPMUL(P, A, Z, NF, N, Q); \
	VMAXPS       X, SIGN, A; \
	VSUBPS       Q, A, A

// GELUBWD sets N = DYM·GELU'(X): with u = e^{-t²/2}·d, d = (t - t0)·e(t),
// e(t) = Pd/(Ad - S·Pd), GELU' is u for x < 0 (sign bit set) and 1 - u
// otherwise. t - T0HI is exact near t0, and d = (t - T0HI)·e + (-T0LO·e)
// rounds once.
#define GELUBWD(X, DYM, T, A, Z, NF, N, P, Q) \
	KLD          TAB(MT_DP5), P; \
	GELUTAIL(X, T, A, Q, Z, NF, N); \
	HORNER5(T, P, MT_DP4, MT_DP3, MT_DP2, MT_DP1, MT_DP0); \
	KLD          TAB(MT_DA4), Q; \
	HORNER4(T, Q, MT_DA3, MT_DA2, MT_DA1, MT_ONE); \
	VFNMADD231PS KB TAB(MT_S2PI), P, Q; \
	VDIVPS       Q, P, P; \
	VSUBPS       KB TAB(MT_T0HI), T, Q; \
	VMULPS       KB TAB(MT_NT0LO), P, T; \
	VFMADD231PS  Q, P, T; \
	EXPMUL(T, A, Z, NF, N, Q); \
	KLD          TAB(MT_ONE), N; \
	VSUBPS       Q, N, N; \
	PICKNEG(X, Q, N); \
	VMULPS       DYM, N, N

// A kernel's body is a list of lane steps s(o, X, T, A, Z, NF, N, P, Q),
// on the bytes at offset o of its pointers and one vector's registers
// (each width's lanes: NF may share Z's register or N's). KERNEL runs
// body(lanes) on two vectors while 2·VL floats remain, then body(lane0)
// on one, then last(lane0) on the final 1 to VL-1 floats under TAILMASK;
// next(bytes) advances the pointers.
#define KERNEL(body, last, next) \
	CMPQ CX, $(2*VL); \
	JB   one; \
loop2: \
	body(lanes); \
	next(8*VL); \
	SUBQ $(2*VL), CX; \
	CMPQ CX, $(2*VL); \
	JAE  loop2; \
one: \
	CMPQ CX, $VL; \
	JB   tail; \
	body(lane0); \
	next(4*VL); \
	SUBQ $VL, CX; \
tail: \
	TESTQ CX, CX; \
	JZ    done; \
	TAILMASK; \
	lane0(last); \
done: \
	VZEROUPPER; \
	RET

#define nextSIDI(n)   ADDQ $(n), SI; ADDQ $(n), DI
#define nextSIDXDI(n) ADDQ $(n), SI; ADDQ $(n), DX; ADDQ $(n), DI

#define load(o, X, T, A, Z, NF, N, P, Q)    VMOVUPS o(SI), X
#define expRun(o, X, T, A, Z, NF, N, P, Q)  EXP(X, Z, NF, P)
#define storeX(o, X, T, A, Z, NF, N, P, Q)  VMOVUPS X, o(DI)
#define expLast(o, X, T, A, Z, NF, N, P, Q) MLOAD((SI), X); EXP(X, Z, NF, P); MSTORE(X, (DI))
#define exp(each)                           each(load); each(expRun); each(storeX)

#define geluRun(o, X, T, A, Z, NF, N, P, Q)  GELU(X, T, A, Z, NF, N, P, Q)
#define storeA(o, X, T, A, Z, NF, N, P, Q)   VMOVUPS A, o(DI)
#define geluLast(o, X, T, A, Z, NF, N, P, Q) MLOAD((SI), X); GELU(X, T, A, Z, NF, N, P, Q); MSTORE(A, (DI))
#define gelu(each)                           each(load); each(geluRun); each(storeA)

// The last step's dy goes to DYT, a register of the unused second vector.
#define bwdRun(o, X, T, A, Z, NF, N, P, Q)  GELUBWD(X, o(DX), T, A, Z, NF, N, P, Q)
#define storeN(o, X, T, A, Z, NF, N, P, Q)  VMOVUPS N, o(DI)
#define bwdLast(o, X, T, A, Z, NF, N, P, Q) \
	MLOAD((SI), X); \
	MLOAD((DX), DYT); \
	GELUBWD(X, DYT, T, A, Z, NF, N, P, Q); \
	MSTORE(N, (DI))
#define bwd(each) each(load); each(bwdRun); each(storeN)

// The constants a kernel keeps in registers.
#define EXPCONST  KLD TAB(MT_XLO), XLO; KLD TAB(MT_XHI), XHI; MAGICINIT
#define GELUCONST KLD TAB(MT_SIGN), SIGN; CLAMPINIT; MAGICINIT

// KERNELS defines the three functions at the width its section spells;
// exp and GELU take (dst, x *float32, n int), through FUNC3.
#define FUNC3(name, setup, body, last) \
TEXT name(SB), NOSPLIT, $0-24; \
	MOVQ dst+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	setup; \
	KERNEL(body, last, nextSIDI)

#define KERNELS(expName, geluName, bwdName) \
	FUNC3(expName, EXPCONST, exp, expLast); \
	FUNC3(geluName, GELUCONST, gelu, geluLast); \
TEXT bwdName(SB), NOSPLIT, $0-32; \
	MOVQ dst+0(FP), DI; \
	MOVQ dy+8(FP), DX; \
	MOVQ x+16(FP), SI; \
	MOVQ n+24(FP), CX; \
	GELUCONST; \
	KERNEL(bwd, bwdLast, nextSIDXDI)

// ---- AVX2 + FMA: 8 lanes ----------------------------------------------------

#define VL 8
#define KLD VMOVUPS
#define KB
#define MAGIC TAB(MT_MAGIC)
#define MAGICLD(r) VMOVUPS TAB(MT_MAGIC), r
#define MAGICINIT
#define SIGN Y14
#define XLO Y14
#define XHI Y15
#define CLAMPINIT
#define lanes(s) s(0, Y0, Y1, Y2, Y3, Y4, Y4, Y5, Y6); s(32, Y7, Y8, Y9, Y10, Y11, Y11, Y12, Y13)
#define lane0(s) s(0, Y0, Y1, Y2, Y3, Y4, Y4, Y5, Y6)
#define DYT Y7

// SCALE sets D = P·2^n, n from EXPRED1's Z, as P·2^⌊n/2⌋·2^(n-⌊n/2⌋):
// both factors are normal for n in [-252, 128] and the first product is
// exact, so the result is rounded once, also when subnormal. For a NaN
// input Z holds garbage, but P is NaN and stays so.
#define SCALE(P, Z, NF, D) \
	VPSUBD TAB(MT_MAGIC), Z, Z; \
	VPSRAD $1, Z, D; \
	VPSUBD D, Z, Z; \
	VPADDD TAB(MT_BIAS), D, D; \
	VPSLLD $23, D, D; \
	VPADDD TAB(MT_BIAS), Z, Z; \
	VPSLLD $23, Z, Z; \
	VMULPS D, P, P; \
	VMULPS Z, P, D

// CLAMPT: the bound, 7 or 18, from the sign bit spread over the lane.
#define CLAMPT(X, T, A, L) \
	VANDNPS X, SIGN, T; \
	VPSRAD  $31, X, L; \
	VANDPS  TAB(MT_TNEG), L, L; \
	VADDPS  TAB(MT_TPOS), L, L; \
	VMINPS  T, L, T

// PICKNEG sets D = S in the lanes where X's sign bit is set.
#define PICKNEG(X, S, D) VBLENDVPS X, S, D, D

// TAILMASK loads Y13 with CX (1 to 7) all-ones lanes, then zeros.
#define TAILMASK \
	LEAQ    TAB(MT_TAILONES), AX; \
	NEGQ    CX; \
	VMOVDQU 32(AX)(CX*4), Y13
#define MLOAD(m, r)  VMASKMOVPS m, Y13, r
#define MSTORE(r, m) VMASKMOVPS r, Y13, m

// func expAVX2(dst, x *float32, n int)
// func geluAVX2(dst, x *float32, n int)
// func geluBackwardAVX2(dst, dy, x *float32, n int)
KERNELS(·expAVX2, ·geluAVX2, ·geluBackwardAVX2)

// ---- AVX-512: 16 lanes ------------------------------------------------------

// The same arithmetic with constants broadcast from the first float of
// their row, a mask register for PICKNEG, masked loads and stores for the
// last n%16, and VSCALEFPS for SCALE. VSCALEFPS takes a microcode assist
// whenever it underflows, so lanes whose result is 0 anyway (n < -155) are
// zeroed by the mask instead. Z29 = MAGIC, Z30 = -0 or XLO, Z31 = XHI,
// Z27 = 7, Z28 = 18.

#undef VL
#undef KLD
#undef KB
#undef MAGIC
#undef MAGICLD
#undef MAGICINIT
#undef SIGN
#undef XLO
#undef XHI
#undef CLAMPINIT
#undef lanes
#undef lane0
#undef DYT
#undef SCALE
#undef CLAMPT
#undef PICKNEG
#undef TAILMASK
#undef MLOAD
#undef MSTORE

#define VL 16
#define KLD VBROADCASTSS
#define KB .BCST
#define MAGIC Z29
#define MAGICLD(r) VMOVAPS Z29, r
#define MAGICINIT VBROADCASTSS TAB(MT_MAGIC), Z29
#define SIGN Z30
#define XLO Z30
#define XHI Z31
#define CLAMPINIT VBROADCASTSS TAB(MT_TPOS), Z27; VBROADCASTSS TAB(MT_TNEGMAX), Z28
#define lanes(s) s(0, Z0, Z1, Z2, Z3, Z3, Z4, Z5, Z6); s(64, Z7, Z8, Z9, Z10, Z10, Z11, Z12, Z13)
#define lane0(s) s(0, Z0, Z1, Z2, Z3, Z3, Z4, Z5, Z6)
#define DYT Z7

// SCALE sets D = P·2^NF, or ±0 (P's sign, as the AVX2 SCALE rounds) where
// NF < -155, not for NaN: predicate 5 is not-less-than, true when
// unordered.
#define SCALE(P, Z, NF, D) \
	VPANDD.BCST TAB(MT_SIGN), P, D; \
	VCMPPS.BCST $5, TAB(MT_NMIN), NF, K3; \
	VSCALEFPS   NF, P, K3, D

// CLAMPT also sets K1 = the lanes with x < 0 (sign set), for PICKNEG.
#define CLAMPT(X, T, A, L) \
	VPANDND  X, Z30, A; \
	VPTESTMD Z30, X, K1; \
	VMINPS   A, Z27, T; \
	VMINPS   A, Z28, K1, T

#define PICKNEG(X, S, D) VMOVAPS S, K1, D

// TAILMASK sets K2 to the low CX (1 to 15) lanes.
#define TAILMASK \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX; \
	KMOVW AX, K2
#define MLOAD(m, r)  VMOVUPS.Z m, K2, r
#define MSTORE(r, m) VMOVUPS r, K2, m

// func expAVX512(dst, x *float32, n int)
// func geluAVX512(dst, x *float32, n int)
// func geluBackwardAVX512(dst, dy, x *float32, n int)
KERNELS(·expAVX512, ·geluAVX512, ·geluBackwardAVX512)
