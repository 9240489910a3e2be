#include "textflag.h"

// func plainPrefix(p []byte) int
//
// SSE2, which every amd64 has. 64 bytes per step, then 16: a byte passes
// when it is greater than 0x1F as a signed byte (0x20–0x7F) and not DEL,
// or when it is LF. The four 16-byte results of a step are ANDed, so one
// PMOVMSKB tells whether all 64 passed.
TEXT ·plainPrefix(SB), NOSPLIT, $0-32
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	XORQ AX, AX
	MOVQ $0x1f1f1f1f1f1f1f1f, DX
	MOVQ DX, X10
	PUNPCKLQDQ X10, X10
	MOVQ $0x7f7f7f7f7f7f7f7f, DX
	MOVQ DX, X11
	PUNPCKLQDQ X11, X11
	MOVQ $0x0a0a0a0a0a0a0a0a, DX
	MOVQ DX, X12
	PUNPCKLQDQ X12, X12

loop64:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JA   loop16
	MOVOU 0(SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X1
	MOVOU 32(SI)(AX*1), X2
	MOVOU 48(SI)(AX*1), X3

	MOVO    X0, X4
	PCMPGTB X10, X4
	MOVO    X0, X5
	PCMPEQB X11, X5
	PANDN   X4, X5
	PCMPEQB X12, X0
	POR     X5, X0

	MOVO    X1, X4
	PCMPGTB X10, X4
	MOVO    X1, X5
	PCMPEQB X11, X5
	PANDN   X4, X5
	PCMPEQB X12, X1
	POR     X5, X1

	MOVO    X2, X4
	PCMPGTB X10, X4
	MOVO    X2, X5
	PCMPEQB X11, X5
	PANDN   X4, X5
	PCMPEQB X12, X2
	POR     X5, X2

	MOVO    X3, X4
	PCMPGTB X10, X4
	MOVO    X3, X5
	PCMPEQB X11, X5
	PANDN   X4, X5
	PCMPEQB X12, X3
	POR     X5, X3

	PAND     X1, X0
	PAND     X3, X2
	PAND     X2, X0
	PMOVMSKB X0, DX
	CMPL     DX, $0xffff
	JNE      loop16
	ADDQ     $64, AX
	JMP      loop64

loop16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JA   done
	MOVOU    0(SI)(AX*1), X0
	MOVO     X0, X4
	PCMPGTB  X10, X4
	MOVO     X0, X5
	PCMPEQB  X11, X5
	PANDN    X4, X5
	PCMPEQB  X12, X0
	POR      X5, X0
	PMOVMSKB X0, DX
	CMPL     DX, $0xffff
	JNE      done
	ADDQ     $16, AX
	JMP      loop16

done:
	MOVQ AX, ret+24(FP)
	RET
