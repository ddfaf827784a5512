//go:build !purego

#include "textflag.h"

// func ropeRowBlocksAVX2(x []float32, heads int, cos, sin []float32, sign float32)
//
// For each head, each group of eight i of its first half x1 and second half x2:
// s = sign*sin, x1 = a*c - b*s, x2 = b*c + a*s with a = x1, b = x2, c = cos, each product
// rounded to float32 before its sum (ropeRowGeneric's operations in its order).
//
// Registers: DI the head's x1, R10 its x2 (DI+R8), R8 the half's length in bytes, SI cos, DX sin,
// Y15 sign, CX heads left, R9 the byte offset within the half.
TEXT ·ropeRowBlocksAVX2(SB), NOSPLIT, $0-84
	MOVQ         x_base+0(FP), DI
	MOVQ         heads+24(FP), CX
	MOVQ         cos_base+32(FP), SI
	MOVQ         cos_len+40(FP), R8
	MOVQ         sin_base+56(FP), DX
	VBROADCASTSS sign+80(FP), Y15
	SHLQ         $2, R8

ropehead:
	XORQ R9, R9
	LEAQ (DI)(R8*1), R10 // x2 of this head

ropeloop:
	VMULPS  (DX)(R9*1), Y15, Y1 // s = sign*sin
	VMOVUPS (SI)(R9*1), Y0      // c
	VMOVUPS (DI)(R9*1), Y2      // a
	VMOVUPS (R10)(R9*1), Y3     // b
	VMULPS  Y0, Y2, Y4          // a*c
	VMULPS  Y1, Y3, Y5          // b*s
	VSUBPS  Y5, Y4, Y4          // a*c - b*s
	VMULPS  Y0, Y3, Y6          // b*c
	VMULPS  Y1, Y2, Y7          // a*s
	VADDPS  Y7, Y6, Y6          // b*c + a*s
	VMOVUPS Y4, (DI)(R9*1)
	VMOVUPS Y6, (R10)(R9*1)
	ADDQ    $32, R9
	CMPQ    R9, R8
	JNE     ropeloop

	LEAQ (DI)(R8*2), DI // the next head
	DECQ CX
	JNZ  ropehead
	VZEROUPPER
	RET
