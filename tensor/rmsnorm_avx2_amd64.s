//go:build !purego

#include "textflag.h"

// RMSNorm's row loops eight floats at a time, each the same operations in the same order as its
// Go loop (rmsnorm.go), so the results are the same bits: no fused multiply-adds, except where
// the product is exact (the square of a float32 in float64).

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

// func rmsWeightGradBlocksAVX2(dw, g, x []float32, r float32)
// dw += (g * x) * r
TEXT ·rmsWeightGradBlocksAVX2(SB), NOSPLIT, $0-76
	MOVQ         dw_base+0(FP), DI
	MOVQ         dw_len+8(FP), CX
	MOVQ         g_base+24(FP), SI
	MOVQ         x_base+48(FP), DX
	VBROADCASTSS r+72(FP), Y4
	TESTQ        CX, CX
	JZ           rwdone

rwloop:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0 // g * x
	VMULPS  Y4, Y0, Y0   // ... * r
	VADDPS  (DI), Y0, Y0 // dw + ...
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JNZ     rwloop

rwdone:
	VZEROUPPER
	RET

// The row sums' accumulators: row t's lanes 0-3 in Y(8+2t) and lanes 4-7 in Y(9+2t).
// ZERO_LANES clears them; STORE_LANES writes them to lanes (*[4][8]float64) at DI.
#define ZERO_LANES \
	VXORPD Y8, Y8, Y8;    \
	VXORPD Y9, Y9, Y9;    \
	VXORPD Y10, Y10, Y10; \
	VXORPD Y11, Y11, Y11; \
	VXORPD Y12, Y12, Y12; \
	VXORPD Y13, Y13, Y13; \
	VXORPD Y14, Y14, Y14; \
	VXORPD Y15, Y15, Y15

#define STORE_LANES \
	VMOVUPD Y8, (DI);     \
	VMOVUPD Y9, 32(DI);   \
	VMOVUPD Y10, 64(DI);  \
	VMOVUPD Y11, 96(DI);  \
	VMOVUPD Y12, 128(DI); \
	VMOVUPD Y13, 160(DI); \
	VMOVUPD Y14, 192(DI); \
	VMOVUPD Y15, 224(DI)

// SQUARES_ROW adds the squares of eight floats of one row (at addr and addr16, four each) as
// float64 to the accumulators lo and hi, each by one fused multiply-add: the square of a
// float32 is exact in float64, so the sum rounds as the Go loop's does.
#define SQUARES_ROW(addr, addr16, lo, hi) \
	VCVTPS2PD   addr, Y2;       \
	VCVTPS2PD   addr16, Y3;     \
	VFMADD231PD Y2, Y2, lo;     \
	VFMADD231PD Y3, Y3, hi

// func rowSquareSumsBlocksAVX2(lanes *[4][8]float64, x []float32, d, n int)
// The four rows at SI, SI+R9, SI+2*R9 and SI+R10 (R9 = 4d bytes, R10 = 3*R9).
TEXT ·rowSquareSumsBlocksAVX2(SB), NOSPLIT, $0-48
	MOVQ lanes+0(FP), DI
	MOVQ x_base+8(FP), SI
	MOVQ d+32(FP), R9
	MOVQ n+40(FP), CX
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	ZERO_LANES

ssloop:
	SQUARES_ROW((SI), 16(SI), Y8, Y9)
	SQUARES_ROW((SI)(R9*1), 16(SI)(R9*1), Y10, Y11)
	SQUARES_ROW((SI)(R9*2), 16(SI)(R9*2), Y12, Y13)
	SQUARES_ROW((SI)(R10*1), 16(SI)(R10*1), Y14, Y15)
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  ssloop

	STORE_LANES
	VZEROUPPER
	RET

// WEIGHTED_ROW adds eight terms (g*w)*x of one row, g at gaddr and gaddr16 and x at xaddr and
// xaddr16 (four floats each), as float64 to the accumulators lo and hi; w's eight are in Y0
// (elements 0-3) and Y1 (4-7). A product and its sum round separately, as in the Go loop.
#define WEIGHTED_ROW(gaddr, gaddr16, xaddr, xaddr16, lo, hi) \
	VCVTPS2PD gaddr, Y2;   \
	VCVTPS2PD gaddr16, Y3; \
	VMULPD    Y0, Y2, Y2;  \
	VMULPD    Y1, Y3, Y3;  \
	VCVTPS2PD xaddr, Y4;   \
	VCVTPS2PD xaddr16, Y5; \
	VMULPD    Y4, Y2, Y2;  \
	VMULPD    Y5, Y3, Y3;  \
	VADDPD    Y2, lo, lo;  \
	VADDPD    Y3, hi, hi

// func rowWeightedDotsBlocksAVX2(lanes *[4][8]float64, g, w, x []float32, d, n int)
// g's rows at R8 + t*R9, x's at DX + t*R9 (R9 = 4d bytes, R10 = 3*R9), w at SI.
TEXT ·rowWeightedDotsBlocksAVX2(SB), NOSPLIT, $0-96
	MOVQ lanes+0(FP), DI
	MOVQ g_base+8(FP), R8
	MOVQ w_base+32(FP), SI
	MOVQ x_base+56(FP), DX
	MOVQ d+80(FP), R9
	MOVQ n+88(FP), CX
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	ZERO_LANES

wdloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	WEIGHTED_ROW((R8), 16(R8), (DX), 16(DX), Y8, Y9)
	WEIGHTED_ROW((R8)(R9*1), 16(R8)(R9*1), (DX)(R9*1), 16(DX)(R9*1), Y10, Y11)
	WEIGHTED_ROW((R8)(R9*2), 16(R8)(R9*2), (DX)(R9*2), 16(DX)(R9*2), Y12, Y13)
	WEIGHTED_ROW((R8)(R10*1), 16(R8)(R10*1), (DX)(R10*1), 16(DX)(R10*1), Y14, Y15)
	ADDQ      $32, SI
	ADDQ      $32, R8
	ADDQ      $32, DX
	SUBQ      $8, CX
	JNZ       wdloop

	STORE_LANES
	VZEROUPPER
	RET
