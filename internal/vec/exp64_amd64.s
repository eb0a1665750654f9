//go:build !purego

#include "textflag.h"

// The constants of the Go library's math.Exp (its FMA path), bit for bit.
DATA exp64<>+0(SB)/8, $0x3ff71547652b82fe  // log2(e)
DATA exp64<>+8(SB)/8, $0x3fe62e42fefa3000  // ln 2, upper half
DATA exp64<>+16(SB)/8, $0x3d53de6af278ece6 // ln 2, lower half
DATA exp64<>+24(SB)/8, $0x3fb0000000000000 // 1/16
DATA exp64<>+32(SB)/8, $0x3efa01a01a01a01a // 1/9!
DATA exp64<>+40(SB)/8, $0x3f2a01a01a01a01a // 1/8!
DATA exp64<>+48(SB)/8, $0x3f56c16c16c16c17 // 1/7!
DATA exp64<>+56(SB)/8, $0x3f81111111111111 // 1/5!
DATA exp64<>+64(SB)/8, $0x3fa5555555555555 // 1/4!
DATA exp64<>+72(SB)/8, $0x3fc5555555555555 // 1/3!
DATA exp64<>+80(SB)/8, $0x3fe0000000000000 // 1/2
DATA exp64<>+88(SB)/8, $0x3ff0000000000000 // 1
DATA exp64<>+96(SB)/8, $0x4000000000000000 // 2
DATA exp64<>+104(SB)/8, $0xc086200000000000 // -708: below, the result may be subnormal
DATA exp64<>+112(SB)/8, $0x4085e00000000000 // 700: above, it may overflow
DATA exp64<>+120(SB)/8, $1023              // the exponent's bias
GLOBL exp64<>(SB), RODATA, $128

// func expShifted64AVX512(dst *float64, x *float32, n int, m float64) int
//
// dst[i] = math.Exp(float64(x[i]) - m), 8 at a time, for n a multiple of 8:
// the steps of math.Exp's FMA path in 8 lanes. It stops before the first 8
// with an argument outside [-708, 700] (or NaN), where math.Exp takes other
// paths, and returns how many it did.
TEXT ·expShifted64AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD m+24(FP), Z9
	VBROADCASTSD exp64<>+0(SB), Z10
	VBROADCASTSD exp64<>+8(SB), Z11
	VBROADCASTSD exp64<>+16(SB), Z12
	VBROADCASTSD exp64<>+24(SB), Z13
	VBROADCASTSD exp64<>+32(SB), Z14
	VBROADCASTSD exp64<>+40(SB), Z15
	VBROADCASTSD exp64<>+48(SB), Z16
	VBROADCASTSD exp64<>+56(SB), Z17
	VBROADCASTSD exp64<>+64(SB), Z18
	VBROADCASTSD exp64<>+72(SB), Z19
	VBROADCASTSD exp64<>+80(SB), Z20
	VBROADCASTSD exp64<>+88(SB), Z21
	VBROADCASTSD exp64<>+96(SB), Z22
	VBROADCASTSD exp64<>+104(SB), Z23
	VBROADCASTSD exp64<>+112(SB), Z24
	VPBROADCASTQ exp64<>+120(SB), Z25
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VCVTPS2PD (SI)(AX*4), Z1
	VSUBPD    Z9, Z1, Z1
	VCMPPD    $0x1d, Z23, Z1, K1 // x >= -708, false for NaN
	VCMPPD    $0x12, Z24, Z1, K2 // x <= 700
	KANDB     K2, K1, K1
	KMOVB     K1, BX
	CMPB      BX, $0xff
	JNE       done

	VMULPD      Z10, Z1, Z5       // x·log2(e)
	VCVTPD2DQ   Z5, Y6            // k, rounded to nearest
	VCVTDQ2PD   Y6, Z5
	VFNMADD231PD Z11, Z5, Z1      // x − k·ln2 (upper)
	VFNMADD231PD Z12, Z5, Z1      // − k·ln2 (lower)
	VMULPD      Z13, Z1, Z1       // r/16
	VMOVAPD     Z14, Z7
	VFMADD213PD Z15, Z1, Z7
	VFMADD213PD Z16, Z1, Z7
	VFMADD213PD Z17, Z1, Z7
	VFMADD213PD Z18, Z1, Z7
	VFMADD213PD Z19, Z1, Z7
	VFMADD213PD Z20, Z1, Z7
	VFMADD213PD Z21, Z1, Z7
	VMULPD      Z7, Z1, Z1        // e^(r/16) − 1, then squared four times:
	VADDPD      Z22, Z1, Z7       // (e^a − 1)(e^a + 1) = e^2a − 1
	VMULPD      Z7, Z1, Z1
	VADDPD      Z22, Z1, Z7
	VMULPD      Z7, Z1, Z1
	VADDPD      Z22, Z1, Z7
	VMULPD      Z7, Z1, Z1
	VADDPD      Z22, Z1, Z7
	VFMADD213PD Z21, Z7, Z1       // e^r
	VPMOVSXDQ   Y6, Z6            // 2^k
	VPADDQ      Z25, Z6, Z6
	VPSLLQ      $52, Z6, Z6
	VMULPD      Z6, Z1, Z1
	VMOVUPD     Z1, (DI)(AX*8)
	ADDQ        $8, AX
	JMP         loop

done:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET
