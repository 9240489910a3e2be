#include "textflag.h"

// Both functions pass over the bytes of p that are printable ASCII
// (0x20–0x7E) or LF and count the LFs among them. A byte b is printable
// when b+1 is greater than 0x20 as a signed byte: 0x1F and below stay at
// or under it, DEL and 0x80–0xFF wrap to negative. The bytes of a block
// are tested together; a block with any other byte ends the prefix, and
// its LFs are not counted.

// func plainPrefixSSE2(p []byte) (n, newlines int)
//
// SSE2, which every amd64 has: 64 bytes per step, then 16.
TEXT ·plainPrefixSSE2(SB), NOSPLIT, $0-40
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	XORQ AX, AX
	MOVQ $0x2020202020202020, DX
	MOVQ DX, X10
	PUNPCKLQDQ X10, X10
	MOVQ $0x0101010101010101, DX
	MOVQ DX, X11
	PUNPCKLQDQ X11, X11
	MOVQ $0x0a0a0a0a0a0a0a0a, DX
	MOVQ DX, X12
	PUNPCKLQDQ X12, X12
	PXOR X15, X15 // zero
	PXOR X14, X14 // LFs counted, as two quadword sums

sse64:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JA   sse16
	MOVOU 0(SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X1
	MOVOU 32(SI)(AX*1), X2
	MOVOU 48(SI)(AX*1), X3
	PXOR  X9, X9 // this step's LFs, per byte lane

	MOVO    X0, X4
	PADDB   X11, X4
	PCMPGTB X10, X4 // printable
	PCMPEQB X12, X0 // LF
	PSUBB   X0, X9
	POR     X4, X0

	MOVO    X1, X5
	PADDB   X11, X5
	PCMPGTB X10, X5
	PCMPEQB X12, X1
	PSUBB   X1, X9
	POR     X5, X1

	MOVO    X2, X6
	PADDB   X11, X6
	PCMPGTB X10, X6
	PCMPEQB X12, X2
	PSUBB   X2, X9
	POR     X6, X2

	MOVO    X3, X7
	PADDB   X11, X7
	PCMPGTB X10, X7
	PCMPEQB X12, X3
	PSUBB   X3, X9
	POR     X7, X3

	PAND     X1, X0
	PAND     X3, X2
	PAND     X2, X0
	PMOVMSKB X0, DX
	CMPL     DX, $0xffff
	JNE      sse16
	PSADBW   X15, X9
	PADDQ    X9, X14
	ADDQ     $64, AX
	JMP      sse64

sse16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JA   sseDone
	MOVOU    0(SI)(AX*1), X0
	PXOR     X9, X9
	MOVO     X0, X4
	PADDB    X11, X4
	PCMPGTB  X10, X4
	PCMPEQB  X12, X0
	PSUBB    X0, X9
	POR      X4, X0
	PMOVMSKB X0, DX
	CMPL     DX, $0xffff
	JNE      sseDone
	PSADBW   X15, X9
	PADDQ    X9, X14
	ADDQ     $16, AX
	JMP      sse16

sseDone:
	MOVQ   AX, n+24(FP)
	PSHUFD $0x4e, X14, X9
	PADDQ  X9, X14
	MOVQ   X14, DX
	MOVQ   DX, newlines+32(FP)
	RET

// func plainPrefixAVX2(p []byte) (n, newlines int)
//
// AVX2: 64 bytes per step, then 32.
TEXT ·plainPrefixAVX2(SB), NOSPLIT, $0-40
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	XORQ AX, AX
	MOVQ $0x20, DX
	MOVQ DX, X10
	VPBROADCASTB X10, Y10
	MOVQ $0x01, DX
	MOVQ DX, X11
	VPBROADCASTB X11, Y11
	MOVQ $0x0a, DX
	MOVQ DX, X12
	VPBROADCASTB X12, Y12
	VPXOR Y15, Y15, Y15 // zero
	VPXOR Y14, Y14, Y14 // LFs counted, as four quadword sums

avx64:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JA   avx32
	VMOVDQU 0(SI)(AX*1), Y0
	VMOVDQU 32(SI)(AX*1), Y1
	VPADDB   Y11, Y0, Y2
	VPCMPGTB Y10, Y2, Y2 // printable
	VPCMPEQB Y12, Y0, Y0 // LF
	VPOR     Y0, Y2, Y2
	VPADDB   Y11, Y1, Y3
	VPCMPGTB Y10, Y3, Y3
	VPCMPEQB Y12, Y1, Y1
	VPOR     Y1, Y3, Y3
	VPAND    Y3, Y2, Y2
	VPMOVMSKB Y2, DX
	CMPL     DX, $0xffffffff
	JNE      avx32
	VPADDB   Y1, Y0, Y0  // minus the LFs per byte lane
	VPSUBB   Y0, Y15, Y0 // the LFs
	VPSADBW  Y15, Y0, Y0
	VPADDQ   Y0, Y14, Y14
	ADDQ     $64, AX
	JMP      avx64

avx32:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   avxDone
	VMOVDQU  0(SI)(AX*1), Y0
	VPADDB   Y11, Y0, Y2
	VPCMPGTB Y10, Y2, Y2
	VPCMPEQB Y12, Y0, Y0
	VPOR     Y0, Y2, Y2
	VPMOVMSKB Y2, DX
	CMPL     DX, $0xffffffff
	JNE      avxDone
	VPSUBB   Y0, Y15, Y0
	VPSADBW  Y15, Y0, Y0
	VPADDQ   Y0, Y14, Y14
	ADDQ     $32, AX
	JMP      avx32

avxDone:
	MOVQ         AX, n+24(FP)
	VEXTRACTI128 $1, Y14, X0
	VPADDQ       X0, X14, X14
	VPSHUFD      $0x4e, X14, X0
	VPADDQ       X0, X14, X14
	VMOVQ        X14, DX
	MOVQ         DX, newlines+32(FP)
	VZEROUPPER
	RET
