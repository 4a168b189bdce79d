//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// specialBytes is '"', '\\' and 0x20 in every byte of three 16-byte vectors,
// the values SPECIAL compares with.
DATA specialBytes<>+0(SB)/8, $0x2222222222222222
DATA specialBytes<>+8(SB)/8, $0x2222222222222222
DATA specialBytes<>+16(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA specialBytes<>+24(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA specialBytes<>+32(SB)/8, $0x2020202020202020
DATA specialBytes<>+40(SB)/8, $0x2020202020202020
GLOBL specialBytes<>(SB), RODATA|NOPTR, $48

// escapeLetters holds, at the index of each control byte with a two-byte
// escape (\b \t \n \f \r), its letter, and zero elsewhere; then 0x70 in
// every byte. A byte plus 0x70 (saturated) is below 0x80 only for bytes
// below 0x10, so PSHUFB with it as index looks up the letter of a control
// byte and zero for any other byte.
DATA escapeLetters<>+0(SB)/8, $0
DATA escapeLetters<>+8(SB)/8, $0x00007266006e7462
DATA escapeLetters<>+16(SB)/8, $0x7070707070707070
DATA escapeLetters<>+24(SB)/8, $0x7070707070707070
GLOBL escapeLetters<>(SB), RODATA|NOPTR, $32

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

// ESCAPE writes the escape of the special byte s[AX] at its place in dst,
// or ends the call (at done, with AX on the byte) if it is not ASCII or the
// slack is under seven bytes. The escape is stored as one word from
// escapeWords, whose top byte is its length; the bytes past the escape are
// overwritten by whatever is written next. It moves E and R13 past the
// escape and takes its growth from the slack; AX is unchanged.
#define ESCAPE \
	MOVBLZX (SI)(AX*1), CX   \
	CMPQ    CX, $0x80        \
	JAE     done             \
	CMPQ    R11, $7          \
	JLT     done             \
	MOVQ    (R10)(CX*8), CX  \
	MOVQ    CX, (R13)(AX*1)  \
	SHRQ    $56, CX          \
	DECQ    CX               \
	ADDQ    CX, R12          \
	SUBQ    CX, R11          \
	LEAQ    (DI)(R12*1), R13

// CHUNK writes the eight bytes in the low (PUNPCKLQDQ) or high (PUNPCKHQDQ)
// half of v, whose special bytes are bits shift..shift+7 of BX, at DX with
// each special byte expanded to a backslash and its letter (v holds letters
// in their place already), and moves DX past them. The expansion is one
// PSHUFB of those bytes, next to a half of backslashes (X1), with the mask
// that conf.expand holds for the chunk's bits; the shift of the output is the
// count of those bits, so no special byte costs a branch.
#define CHUNK(v, unpack, shift) \
	MOVL    BX, CX          \
	SHRL    $shift, CX      \
	ANDL    $0xFF, CX       \
	POPCNTL CX, R8          \
	SHLL    $4, CX          \
	MOVOU   (R14)(CX*1), X9 \
	MOVOU   v, X10          \
	unpack  X1, X10         \
	PSHUFB  X9, X10         \
	MOVOU   X10, (DX)       \
	LEAQ    8(DX)(R8*1), DX

// CHUNKV is CHUNK in VEX encoding, for the AVX2 path, with the chunk's
// bits in the byte register bits (BL or BH).
#define CHUNKV(v, unpack, bits) \
	MOVBLZX bits, CX        \
	POPCNTL CX, R8          \
	SHLL    $4, CX          \
	VMOVDQU (R14)(CX*1), X9 \
	unpack  X1, v, X10      \
	VPSHUFB X9, X10, X10    \
	VMOVDQU X10, (DX)       \
	LEAQ    8(DX)(R8*1), DX

// func escapeSIMD(dst []byte, s string, conf *escapeConfig) (read, written int)
//
// See escapeASCII in escape_amd64.go for the contract and escapeConfig for
// conf. Registers:
// SI, R9 = s, len(s); DI = dst; AX = bytes of s read;
// R12 = E, how far the output has moved ahead of the input (byte s[i]
// belongs at dst[i+E] unless it is escaped); R13 = DI + E;
// R11 = slack, the room in dst beyond a verbatim copy of the unread bytes;
// R10 = conf, whose words are at its start; R14 = conf.expand.
//
// Plain text is stored to dst in blocks before it is checked; only the
// bytes before a block's first special byte count as written. The room for
// the unread bytes always covers a whole block.
//
// While 64 bytes or more are left, blocks of 32 follow each other whatever
// they contain (grid), and each special byte of a block is escaped in turn
// from the block's bit mask, copying the 32 bytes after it to their new
// places (which stays inside s). So finding the next special byte does not
// wait for the previous escape, as it would if scanning restarted after
// each one; event content has a newline or quote every few dozen bytes.
// With conf.expand, a whole block of 32 whose special bytes all have two-byte
// escapes, and which leaves the slack for them, is written in one go
// instead (see CHUNK), 32 bytes or more from the end of s.
// With conf.wide, the grid is AVX2 (gridwide): a block is checked in half the
// instructions, and a lone escape or a block of two-byte escapes is
// written there too. The rest (other escapes, short slack, the last bytes)
// is the SSE code, entered after VZEROUPPER so that no SSE instruction
// waits on the upper halves; regrid comes back.
// The last bytes are scanned from just after each special byte (block32,
// block16, tail); fewer than 16 are loaded in pieces that end at the end of
// s, so s is never read past its end there.
//
// Most strings of a value are short field values with nothing to escape.
// One of 32 bytes or fewer is checked and copied whole in one go (short)
// when the 32 bytes from its start lie in one page, so the load may read
// past the end of s but cannot fault, and dst has room for the store.
TEXT ·escapeSIMD(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R11
	MOVQ s_base+24(FP), SI
	MOVQ s_len+32(FP), R9
	SUBQ R9, R11
	MOVQ conf+40(FP), R10 // words are at its start

	XORQ AX, AX
	XORQ R12, R12
	MOVQ DI, R13

	CMPQ R9, $32
	JBE  short

consts:
	MOVOU specialBytes<>+0(SB), X0
	MOVOU specialBytes<>+16(SB), X1
	MOVOU specialBytes<>+32(SB), X2

setup:
	// X0-X2 hold specialBytes.
	MOVOU escapeLetters<>+0(SB), X11
	MOVOU escapeLetters<>+16(SB), X12
	PXOR  X13, X13
	MOVQ  escapeConfig_expand(R10), R14

	// Strings too short for the grid take no AVX2 setup.
	CMPQ R9, $32
	JB   block32

regrid:
	CMPB escapeConfig_wide(R10), $0
	JEQ  grid
	LEAQ 32(AX), DX
	CMPQ DX, R9
	JA   block32 // no whole block left: no AVX2 setup
	VPBROADCASTB   specialBytes<>+0(SB), Y0
	VPBROADCASTB   specialBytes<>+16(SB), Y1
	VPBROADCASTB   specialBytes<>+32(SB), Y2
	VBROADCASTI128 escapeLetters<>+0(SB), Y11
	VPBROADCASTB   escapeLetters<>+16(SB), Y12
	VPXOR          Y13, Y13, Y13

gridwide:
	// DX is where the last whole block starts.
	LEAQ      -32(R9), DX
	CMPQ      AX, DX
	JGT       widedone

gridwideblock:
	VMOVDQU   (SI)(AX*1), Y3
	VMOVDQU   Y3, (R13)(AX*1)
	VPCMPEQB  Y0, Y3, Y5
	VPCMPEQB  Y1, Y3, Y6
	VPOR      Y6, Y5, Y5
	VPCMPGTB  Y3, Y2, Y6 // below 0x20 as signed bytes
	VPOR      Y6, Y5, Y5
	VPMOVMSKB Y5, BX
	TESTL     BX, BX
	JNZ       widespecials
	ADDQ      $32, AX
	CMPQ      AX, DX
	JLE       gridwideblock
	JMP       widedone

widespecials:
	// A lone escape, the most common case, is written here as ESCAPE
	// would, then the 32 bytes after it are copied to their new places
	// (the grid has them in s); no SSE code, so no VZEROUPPER.
	LEAQ    -1(BX), CX
	TESTL   CX, BX
	JNZ     widemany
	LEAQ    64(AX), CX
	CMPQ    CX, R9
	JA      widemany
	BSFL    BX, CX
	ADDQ    AX, CX
	MOVBLZX (SI)(CX*1), DX
	CMPQ    DX, $0x80
	JAE     widemany
	CMPQ    R11, $7
	JLT     widemany
	MOVQ    (R10)(DX*8), DX
	MOVQ    DX, (R13)(CX*1)
	SHRQ    $56, DX
	DECQ    DX
	ADDQ    DX, R12
	SUBQ    DX, R11
	LEAQ    (DI)(R12*1), R13
	VMOVDQU 1(SI)(CX*1), Y4
	VMOVDQU Y4, 1(R13)(CX*1)
	ADDQ    $32, AX
	JMP     gridwide

widemany:
	// Several escapes: blockspecials in AVX, the letters found for all 32
	// bytes at once and the chunks written by CHUNKV.
	TESTQ   R14, R14
	JZ      widesse
	POPCNTL BX, R8
	LEAQ    8(R8), CX
	CMPQ    R11, CX
	JLT     widesse
	VPADDUSB  Y12, Y3, Y9
	VPSHUFB   Y9, Y11, Y5 // letters of control bytes, else zero
	VPCMPEQB  Y13, Y5, Y9 // bytes without a letter
	VPAND     Y9, Y6, Y10
	VPMOVMSKB Y10, CX
	TESTL     CX, CX
	JNZ       widesse
	VPAND     Y3, Y9, Y9
	VPOR      Y9, Y5, Y5
	VEXTRACTI128 $1, Y5, X7
	LEAQ (R13)(AX*1), DX
	ADDQ R8, R12
	SUBQ R8, R11
	CHUNKV(X5, VPUNPCKLQDQ, BL)
	CHUNKV(X5, VPUNPCKHQDQ, BH)
	SHRL $16, BX
	CHUNKV(X7, VPUNPCKLQDQ, BL)
	CHUNKV(X7, VPUNPCKHQDQ, BH)
	LEAQ (DI)(R12*1), R13
	ADDQ $32, AX
	JMP  gridwide

widesse:
	// Hand the block over as SPECIAL would have left it.
	VEXTRACTI128 $1, Y3, X4
	VEXTRACTI128 $1, Y6, X8
	VZEROUPPER
	JMP          blockspecials

widedone:
	VZEROUPPER
	JMP block32

grid:
	LEAQ  64(AX), BX
	CMPQ  BX, R9
	JA    block32
	MOVOU (SI)(AX*1), X3
	MOVOU 16(SI)(AX*1), X4
	MOVOU X3, (R13)(AX*1)
	MOVOU X4, 16(R13)(AX*1)
	SPECIAL(X3, X5, X6, BX)
	SPECIAL(X4, X7, X8, R8)
	SHLQ  $16, R8
	ORQ   R8, BX
	JNZ   blockspecials
	ADDQ  $32, AX
	JMP   grid

gridescapes:
	MOVQ AX, DX // the block's start; BX holds its special-byte bits

gridnext:
	BSFQ  BX, AX
	ADDQ  DX, AX
	ESCAPE
	MOVOU 1(SI)(AX*1), X3
	MOVOU 17(SI)(AX*1), X4
	MOVOU X3, 1(R13)(AX*1)
	MOVOU X4, 17(R13)(AX*1)
	LEAQ  -1(BX), CX
	ANDQ  CX, BX
	JNZ   gridnext
	LEAQ  32(DX), AX
	JMP   regrid

block32:
	LEAQ  32(AX), BX
	CMPQ  BX, R9
	JA    block16
	MOVOU (SI)(AX*1), X3
	MOVOU 16(SI)(AX*1), X4
	MOVOU X3, (R13)(AX*1)
	MOVOU X4, 16(R13)(AX*1)
	SPECIAL(X3, X5, X6, BX)
	SPECIAL(X4, X7, X8, R8)
	SHLQ  $16, R8
	ORQ   R8, BX
	JNZ   blockspecials
	ADDQ  $32, AX
	JMP   block32

block16:
	LEAQ  16(AX), BX
	CMPQ  BX, R9
	JA    tail
	MOVOU (SI)(AX*1), X3
	MOVOU X3, (R13)(AX*1)
	SPECIAL(X3, X5, X6, BX)
	TESTQ BX, BX
	JNZ   found
	ADDQ  $16, AX

tail:
	// Fewer than 16 bytes are left (CX of them). From 4 up they are copied
	// and checked as two overlapping loads, the first at AX and the second
	// ending at the end of s; the special bits of the second are moved to
	// the places of its bytes, which may overlap bits of the first.
	MOVQ R9, CX
	SUBQ AX, CX
	JZ   done
	LEAQ (R13)(AX*1), DX
	CMPQ CX, $8
	JB   tail4
	MOVQ (SI)(AX*1), X3
	MOVQ -8(SI)(R9*1), X4
	MOVQ X3, (DX)
	MOVQ X4, -8(DX)(CX*1)
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
	JMP  done

tail4:
	CMPQ CX, $4
	JB   tail1
	MOVL (SI)(AX*1), X3
	MOVL -4(SI)(R9*1), X4
	MOVL X3, (DX)
	MOVL X4, -4(DX)(CX*1)
	PUNPCKLLQ X4, X3 // bytes 8-15 are zero, so flagged: masked off below
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
	JMP  done

tail1:
	// One to three bytes: one at a time.
	MOVBLZX (SI)(AX*1), BX
	CMPQ    BX, $0x80
	JAE     done
	MOVQ    (R10)(BX*8), CX
	TESTQ   CX, CX
	JNZ     special
	MOVB    BX, (DX)
	INCQ    AX
	JMP     tail

found:
	// BX holds the special-byte bits from AX; the lowest is the first.
	BSFQ BX, BX
	ADDQ BX, AX

special:
	ESCAPE
	INCQ AX
	JMP  regrid

blockspecials:
	// The block at AX (X3, X4) has the special bits BX, and X6, X8 flag
	// its control bytes (and bytes >= 0x80), as SPECIAL left them. Without
	// conf.expand, or if some special byte needs \u00XX or is not ASCII, or the
	// slack is short, its escapes are written one at a time: by the grid
	// while 64 bytes are left, else from the first. So is a lone escape,
	// which costs less that way than four shuffles.
	TESTQ    R14, R14
	JZ       blockescapes
	POPCNTL  BX, R8
	CMPQ     R8, $1
	JEQ      blockescapes

	// Each escape adds a byte; the last chunk's store reaches eight bytes
	// past the block's output, which the slack must hold.
	LEAQ     8(R8), CX
	CMPQ     R11, CX
	JLT      blockescapes

	MOVOU    X3, X9
	PADDUSB  X12, X9
	MOVOU    X11, X5
	PSHUFB   X9, X5 // letters of X3's control bytes, else zero
	MOVOU    X4, X10
	PADDUSB  X12, X10
	MOVOU    X11, X7
	PSHUFB   X10, X7
	MOVOU    X5, X9
	PCMPEQB  X13, X9 // bytes of X3 without a letter
	MOVOU    X7, X10
	PCMPEQB  X13, X10
	PAND     X9, X6
	PAND     X10, X8
	POR      X8, X6
	PMOVMSKB X6, CX
	TESTL    CX, CX
	JNZ      blockescapes

	// Every other byte, '"' and '\\' among them, is its own letter.
	PAND X3, X9
	POR  X9, X5
	PAND X4, X10
	POR  X10, X7

	LEAQ (R13)(AX*1), DX
	ADDQ R8, R12
	SUBQ R8, R11
	CHUNK(X5, PUNPCKLQDQ, 0)
	CHUNK(X5, PUNPCKHQDQ, 8)
	CHUNK(X7, PUNPCKLQDQ, 16)
	CHUNK(X7, PUNPCKHQDQ, 24)
	LEAQ (DI)(R12*1), R13
	ADDQ $32, AX
	JMP  regrid

blockescapes:
	LEAQ 64(AX), CX
	CMPQ CX, R9
	JBE  gridescapes
	JMP  found

short:
	// s is 32 bytes or fewer. Anything special in it, or a load or store
	// that might not fit, sends it the usual way from its start. An empty
	// s may point anywhere, even at an unmapped page.
	TESTQ R9, R9
	JZ    done
	MOVL  SI, CX
	ANDL  $0xFFF, CX
	CMPL  CX, $(0x1000-32)
	JA    consts
	LEAQ  (R11)(R9*1), CX
	CMPQ  CX, $32
	JB    consts
	CMPB  escapeConfig_wide(R10), $0
	JEQ   shortsse

	// With AVX2 the block is one load, store and compare set. VZEROUPPER
	// leaves X0-X2 as the SSE code wants them.
	VMOVDQU      (SI), Y3
	VMOVDQU      Y3, (DI)
	VPBROADCASTB specialBytes<>+0(SB), Y0
	VPBROADCASTB specialBytes<>+16(SB), Y1
	VPBROADCASTB specialBytes<>+32(SB), Y2
	VPCMPEQB     Y0, Y3, Y5
	VPCMPEQB     Y1, Y3, Y6
	VPOR         Y6, Y5, Y5
	VPCMPGTB     Y3, Y2, Y6
	VPOR         Y6, Y5, Y5
	VPMOVMSKB    Y5, BX
	VZEROUPPER
	JMP          shortmask

shortsse:
	MOVOU specialBytes<>+0(SB), X0
	MOVOU specialBytes<>+16(SB), X1
	MOVOU specialBytes<>+32(SB), X2
	MOVOU (SI), X3
	MOVOU 16(SI), X4
	MOVOU X3, (DI)
	MOVOU X4, 16(DI)
	SPECIAL(X3, X5, X6, BX)
	SPECIAL(X4, X7, X8, R8)
	SHLQ  $16, R8
	ORQ   R8, BX

shortmask:
	MOVQ  R9, CX
	MOVQ  $1, DX
	SHLQ  CX, DX
	DECQ  DX
	ANDQ  DX, BX // the bits of bytes past s are dropped
	JNZ   setup
	MOVQ  R9, AX

done:
	MOVQ AX, read+48(FP)
	ADDQ R12, AX
	MOVQ AX, written+56(FP)
	RET
