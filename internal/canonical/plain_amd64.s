//go:build amd64 && !purego

#include "textflag.h"

// SPECIAL sets the bits of r for the bytes of x that are not copied
// verbatim: '"' (X0), '\\' (X1), or below 0x20 as signed bytes (X2), which
// takes in both control bytes and bytes >= 0x80. t and u are scratch.
#define SPECIAL(x, t, u, r) \
	MOVOU    x, t  \
	PCMPEQB  X0, t \
	MOVOU    x, u  \
	PCMPEQB  X1, u \
	POR      u, t  \
	MOVOU    X2, u \
	PCMPGTB  x, u  \
	POR      u, t  \
	PMOVMSKB t, r

// func escapeASCII(dst []byte, s string) (read, written int)
//
// See escapeASCII in plain_amd64.go for the contract. Registers:
// SI, R9 = s, len(s); DI = dst; AX = bytes read; DX = bytes written;
// R11 = slack, the room in dst beyond a verbatim copy of the unread bytes;
// R10 = &shortEscape.
//
// Plain text is handled 32 or 16 bytes at a time: each block is stored to
// dst before it is checked, and only the bytes before its first special
// byte count as written. The room for the unread bytes always covers a whole
// block. The last bytes (fewer than 16) are loaded in smaller pieces that
// end at the end of s, so s is never read past its end.
TEXT ·escapeASCII(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R11
	MOVQ s_base+24(FP), SI
	MOVQ s_len+32(FP), R9
	SUBQ R9, R11

	MOVQ       $0x2222222222222222, AX
	MOVQ       AX, X0
	PUNPCKLQDQ X0, X0
	MOVQ       $0x5c5c5c5c5c5c5c5c, AX
	MOVQ       AX, X1
	PUNPCKLQDQ X1, X1
	MOVQ       $0x2020202020202020, AX
	MOVQ       AX, X2
	PUNPCKLQDQ X2, X2
	LEAQ       ·shortEscape(SB), R10

	XORQ AX, AX
	XORQ DX, DX

block32:
	LEAQ  32(AX), BX
	CMPQ  BX, R9
	JA    block16
	MOVOU (SI)(AX*1), X3
	MOVOU 16(SI)(AX*1), X4
	MOVOU X3, (DI)(DX*1)
	MOVOU X4, 16(DI)(DX*1)
	SPECIAL(X3, X5, X6, BX)
	SPECIAL(X4, X7, X8, R8)
	SHLQ  $16, R8
	ORQ   R8, BX
	JNZ   found
	ADDQ  $32, AX
	ADDQ  $32, DX
	JMP   block32

block16:
	LEAQ  16(AX), BX
	CMPQ  BX, R9
	JA    tail
	MOVOU (SI)(AX*1), X3
	MOVOU X3, (DI)(DX*1)
	SPECIAL(X3, X5, X6, BX)
	TESTQ BX, BX
	JNZ   found
	ADDQ  $16, AX
	ADDQ  $16, DX

tail:
	// Fewer than 16 bytes are left (CX of them). From 4 up they are copied
	// and checked as two overlapping loads, the first at AX and the second
	// ending at the end of s; the special bits of the second are moved to
	// the places of its bytes, which may overlap bits of the first.
	MOVQ R9, CX
	SUBQ AX, CX
	JZ   done
	LEAQ (DI)(DX*1), R13
	CMPQ CX, $8
	JB   tail4
	MOVQ (SI)(AX*1), R8
	MOVQ -8(SI)(R9*1), R12
	MOVQ R8, (R13)
	MOVQ R12, -8(R13)(CX*1)
	MOVQ R8, X3
	MOVQ R12, X4
	PUNPCKLQDQ X4, X3
	SPECIAL(X3, X5, X6, BX)
	MOVQ BX, R8
	ANDQ $0xFF, BX
	SHRQ $8, R8
	SUBQ $8, CX
	SHLQ CX, R8
	ADDQ $8, CX
	ORQ  R8, BX
	JNZ  found
	ADDQ CX, AX
	ADDQ CX, DX
	JMP  done

tail4:
	CMPQ CX, $4
	JB   tail1
	MOVL (SI)(AX*1), R8
	MOVL -4(SI)(R9*1), R12
	MOVL R8, (R13)
	MOVL R12, -4(R13)(CX*1)
	SHLQ $32, R12
	ORQ  R12, R8
	MOVQ R8, X3 // the upper eight bytes are zero, so flagged: masked off
	SPECIAL(X3, X5, X6, BX)
	MOVQ BX, R8
	ANDQ $0xF, BX
	SHRQ $4, R8
	ANDQ $0xF, R8
	SUBQ $4, CX
	SHLQ CX, R8
	ADDQ $4, CX
	ORQ  R8, BX
	JNZ  found
	ADDQ CX, AX
	ADDQ CX, DX
	JMP  done

tail1:
	// One to three bytes: one at a time.
	MOVBLZX (SI)(AX*1), BX
	CMPQ    BX, $0x80
	JAE     done               // not ASCII: the caller validates UTF-8
	MOVBLZX (R10)(BX*1), CX
	TESTQ   CX, CX
	JNZ     escape
	MOVB    BX, (DI)(DX*1)
	INCQ    AX
	INCQ    DX
	JMP     tail

found:
	// BX holds the block's special-byte bits; the lowest is the first.
	BSFQ    BX, BX
	ADDQ    BX, AX
	ADDQ    BX, DX
	MOVBLZX (SI)(AX*1), BX
	CMPQ    BX, $0x80
	JAE     done
	MOVBLZX (R10)(BX*1), CX

escape:
	// BX is an ASCII byte to escape and CX its shortEscape letter. An
	// escape uses up to five bytes of slack; with less, the caller grows
	// dst and calls again.
	CMPQ R11, $5
	JLT  done
	CMPQ CX, $'u'
	JEQ  unicode
	SHLQ $8, CX
	ORQ  $'\\', CX
	MOVW CX, (DI)(DX*1)
	INCQ AX
	ADDQ $2, DX
	DECQ R11
	JMP  block32

unicode:
	// \u00XX with uppercase hex; BX < 0x20, so the high digit is 0 or 1.
	MOVL $0x3030755c, (DI)(DX*1) // `\u00`
	MOVQ BX, CX
	SHRQ $4, CX
	ADDQ $'0', CX
	MOVB CX, 4(DI)(DX*1)
	ANDQ $15, BX
	ADDQ $'0', BX
	CMPQ BX, $'9'
	JLE  digit
	ADDQ $('A'-'9'-1), BX

digit:
	MOVB BX, 5(DI)(DX*1)
	INCQ AX
	ADDQ $6, DX
	SUBQ $5, R11
	JMP  block32

done:
	MOVQ AX, read+40(FP)
	MOVQ DX, written+48(FP)
	RET
