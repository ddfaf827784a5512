//go:build !purego

#include "textflag.h"

// RMSNorm's row loops eight floats at a time, each the same float32 operations in the same
// order as its Go loop (rmsnorm.go), so the results are the same bits: no fused multiply-adds.

// func rmsScaleBlocksAVX2(y, x, w []float32, r float32)
// y = w * (x * r)
TEXT ·rmsScaleBlocksAVX2(SB), NOSPLIT, $0-76
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         w_base+48(FP), DX
	VBROADCASTSS r+72(FP), Y1
	TESTQ        CX, CX
	JZ           rsdone

rsloop:
	VMULPS  (SI), Y1, Y0 // x * r
	VMULPS  (DX), Y0, Y0 // w * ...
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JNZ     rsloop

rsdone:
	VZEROUPPER
	RET

// func rmsGradBlocksAVX2(dx, g, x, w []float32, r, c float32)
// dx += r * (g*w - x*c)
TEXT ·rmsGradBlocksAVX2(SB), NOSPLIT, $0-104
	MOVQ         dx_base+0(FP), DI
	MOVQ         dx_len+8(FP), CX
	MOVQ         g_base+24(FP), SI
	MOVQ         x_base+48(FP), DX
	MOVQ         w_base+72(FP), R8
	VBROADCASTSS r+96(FP), Y4
	VBROADCASTSS c+100(FP), Y5
	TESTQ        CX, CX
	JZ           rgdone

rgloop:
	VMOVUPS (SI), Y0
	VMULPS  (R8), Y0, Y0 // g * w
	VMULPS  (DX), Y5, Y1 // x * c
	VSUBPS  Y1, Y0, Y0   // g*w - x*c
	VMULPS  Y4, Y0, Y0   // r * ...
	VADDPS  (DI), Y0, Y0 // dx + ...
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	SUBQ    $8, CX
	JNZ     rgloop

rgdone:
	VZEROUPPER
	RET
