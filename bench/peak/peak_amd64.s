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
