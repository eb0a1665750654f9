//go:build !purego

#include "textflag.h"

// func hasRDTSCP() bool
TEXT ·hasRDTSCP(SB), NOSPLIT, $0-1
	MOVL $0x80000000, AX
	CPUID
	CMPL AX, $0x80000001
	JB   no
	MOVL $0x80000001, AX
	CPUID
	BTL  $27, DX
	SETCS ret+0(FP)
	RET
no:
	MOVB $0, ret+0(FP)
	RET

// func rdtscpAux() uint32
TEXT ·rdtscpAux(SB), NOSPLIT, $0-4
	RDTSCP
	MOVL CX, ret+0(FP)
	RET
