//go:build !purego

#include "textflag.h"

// The sigmoid and SwiGLU arithmetic of activation.go, eight floats at a time, with the same
// float32 operations in the same order as the Go loops (no fused multiply-adds), so the results
// are theirs bit for bit. Y15 holds 1.0 in every lane.

#define ONES \
	MOVL         $0x3f800000, AX \
	VMOVD        AX, X15 \
	VBROADCASTSS X15, Y15

// func sigmoidFinishBlocksAVX2(s []float32)
// s = 1/(1+s)
TEXT ·sigmoidFinishBlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ s_base+0(FP), DI
	MOVQ s_len+8(FP), CX
	ONES
	TESTQ CX, CX
	JZ    sigdone

sigloop:
	VMOVUPS (DI), Y0
	VADDPS  Y15, Y0, Y0 // 1 + e
	VDIVPS  Y0, Y15, Y0 // 1 / (1 + e)
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     sigloop

sigdone:
	VZEROUPPER
	RET

// func swiGLUFinishBlocksAVX2(y, gate, up, e []float32)
// y = gate * (1/(1+e)) * up
TEXT ·swiGLUFinishBlocksAVX2(SB), NOSPLIT, $0-96
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ gate_base+24(FP), SI
	MOVQ up_base+48(FP), DX
	MOVQ e_base+72(FP), R8
	ONES
	TESTQ CX, CX
	JZ    swfdone

swfloop:
	VMOVUPS (R8), Y0
	VADDPS  Y15, Y0, Y0 // 1 + e
	VDIVPS  Y0, Y15, Y0 // s = 1 / (1 + e)
	VMULPS  (SI), Y0, Y0 // gate * s
	VMULPS  (DX), Y0, Y0 // ... * up
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	SUBQ    $8, CX
	JNZ     swfloop

swfdone:
	VZEROUPPER
	RET

// func swiGLUGradGateBlocksAVX2(dgate, dy, gate, up, s []float32)
// dgate += dy * up * s * (1 + gate*(1-s)), multiplied left to right
TEXT ·swiGLUGradGateBlocksAVX2(SB), NOSPLIT, $0-120
	MOVQ dgate_base+0(FP), DI
	MOVQ dgate_len+8(FP), CX
	MOVQ dy_base+24(FP), SI
	MOVQ gate_base+48(FP), DX
	MOVQ up_base+72(FP), R8
	MOVQ s_base+96(FP), R9
	ONES
	TESTQ CX, CX
	JZ    sgdone

sgloop:
	VMOVUPS (SI), Y0
	VMULPS  (R8), Y0, Y0 // dy * up
	VMOVUPS (R9), Y1     // s
	VMULPS  Y1, Y0, Y0   // ... * s
	VSUBPS  Y1, Y15, Y2  // 1 - s
	VMULPS  (DX), Y2, Y2 // gate * (1 - s)
	VADDPS  Y15, Y2, Y2  // 1 + gate*(1-s)
	VMULPS  Y2, Y0, Y0   // dy*up*s * (1 + gate*(1-s))
	VADDPS  (DI), Y0, Y0 // dgate + ...
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	ADDQ    $32, R9
	SUBQ    $8, CX
	JNZ     sgloop

sgdone:
	VZEROUPPER
	RET

// func swiGLUGradUpBlocksAVX2(dup, dy, gate, s []float32)
// dup += dy * gate * s
TEXT ·swiGLUGradUpBlocksAVX2(SB), NOSPLIT, $0-96
	MOVQ dup_base+0(FP), DI
	MOVQ dup_len+8(FP), CX
	MOVQ dy_base+24(FP), SI
	MOVQ gate_base+48(FP), DX
	MOVQ s_base+72(FP), R8
	TESTQ CX, CX
	JZ    sudone

suloop:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0 // dy * gate
	VMULPS  (R8), Y0, Y0 // ... * s
	VADDPS  (DI), Y0, Y0 // dup + ...
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	SUBQ    $8, CX
	JNZ     suloop

sudone:
	VZEROUPPER
	RET
