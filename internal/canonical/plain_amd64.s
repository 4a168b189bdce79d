//go:build amd64 && !purego

#include "textflag.h"

// SPECIAL sets the bits of r for the bytes of x that are not plain:
// '"' (X0), '\\' (X1), or below 0x20 as signed bytes (X2), which takes in
// both control bytes and bytes >= 0x80. t and u are scratch.
#define SPECIAL(x, t, u, r) \
	MOVOU    x, t    \
	PCMPEQB  X0, t   \
	MOVOU    x, u    \
	PCMPEQB  X1, u   \
	POR      u, t    \
	MOVOU    X2, u   \
	PCMPGTB  x, u    \
	POR      u, t    \
	PMOVMSKB t, r

// func copyPlainSSE2(dst []byte, s string) int
//
// Requires len(s) >= 16 and len(dst) >= len(s). Each block is stored to dst
// before it is checked; the stored bytes are bytes of s at their own index.
TEXT ·copyPlainSSE2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ s_base+24(FP), SI
	MOVQ s_len+32(FP), R9

	MOVQ       $0x2222222222222222, AX
	MOVQ       AX, X0
	PUNPCKLQDQ X0, X0
	MOVQ       $0x5c5c5c5c5c5c5c5c, AX
	MOVQ       AX, X1
	PUNPCKLQDQ X1, X1
	MOVQ       $0x2020202020202020, AX
	MOVQ       AX, X2
	PUNPCKLQDQ X2, X2

	XORQ AX, AX // index of the next unchecked byte

loop32:
	LEAQ  32(AX), DX
	CMPQ  DX, R9
	JA    block16
	MOVOU (SI)(AX*1), X3
	MOVOU 16(SI)(AX*1), X4
	MOVOU X3, (DI)(AX*1)
	MOVOU X4, 16(DI)(AX*1)
	SPECIAL(X3, X5, X6, BX)
	SPECIAL(X4, X7, X8, R8)
	SHLQ  $16, R8
	ORQ   R8, BX
	JNZ   found
	MOVQ  DX, AX
	JMP   loop32

block16:
	LEAQ  16(AX), DX
	CMPQ  DX, R9
	JA    last16
	MOVOU (SI)(AX*1), X3
	MOVOU X3, (DI)(AX*1)
	SPECIAL(X3, X5, X6, BX)
	TESTQ BX, BX
	JNZ   found
	MOVQ  DX, AX

last16:
	// Fewer than 16 bytes are left: check the last 16 bytes of s, whose
	// bytes before AX are plain and already copied, and drop their bits.
	CMPQ  AX, R9
	JEQ   all
	LEAQ  -16(R9), DX
	MOVOU (SI)(DX*1), X3
	MOVOU X3, (DI)(DX*1)
	SPECIAL(X3, X5, X6, BX)
	MOVQ  AX, CX
	SUBQ  DX, CX
	SHRQ  CX, BX
	TESTQ BX, BX
	JZ    all

found:
	BSFQ BX, BX
	ADDQ BX, AX
	MOVQ AX, ret+40(FP)
	RET

all:
	MOVQ R9, ret+40(FP)
	RET
