//go:build !purego

#include "textflag.h"

// func adamwBlocksAVX2(p, g, m, v []float32, c *adamStep)
//
// Per group of four elements, in float64 lanes (as adamwGeneric, term for term, no FMA):
//
//	m = b1*m + c1*g;  v = b2*v + (c2*g)*g;  p = p*decay - (stepSize*m) / (sqrt(v)/bc2Sqrt + eps)
//
// and each result rounded once to float32 (VCVTPD2PS, round to nearest, like a Go conversion).
// Registers: Y8-Y15 the fields of *c in order (b1, c1, b2, c2, decay, stepSize, bc2Sqrt, eps).
TEXT ·adamwBlocksAVX2(SB), NOSPLIT, $0-104
	MOVQ         p_base+0(FP), DI
	MOVQ         p_len+8(FP), CX
	MOVQ         g_base+24(FP), SI
	MOVQ         m_base+48(FP), R8
	MOVQ         v_base+72(FP), R9
	MOVQ         c+96(FP), AX
	VBROADCASTSD 0(AX), Y8   // b1
	VBROADCASTSD 8(AX), Y9   // c1 = 1-b1
	VBROADCASTSD 16(AX), Y10 // b2
	VBROADCASTSD 24(AX), Y11 // c2 = 1-b2
	VBROADCASTSD 32(AX), Y12 // decay
	VBROADCASTSD 40(AX), Y13 // stepSize
	VBROADCASTSD 48(AX), Y14 // bc2Sqrt
	VBROADCASTSD 56(AX), Y15 // eps
	TESTQ        CX, CX
	JZ           adamdone

adamloop:
	VCVTPS2PD (SI), Y0    // g
	VCVTPS2PD (R8), Y1    // m
	VMULPD    Y8, Y1, Y1  // b1*m
	VMULPD    Y9, Y0, Y2  // c1*g
	VADDPD    Y2, Y1, Y1  // m = b1*m + c1*g
	VCVTPS2PD (R9), Y3    // v
	VMULPD    Y10, Y3, Y3 // b2*v
	VMULPD    Y11, Y0, Y4 // c2*g
	VMULPD    Y0, Y4, Y4  // (c2*g)*g
	VADDPD    Y4, Y3, Y3  // v = b2*v + c2*g*g
	VCVTPS2PD (DI), Y5    // p
	VMULPD    Y12, Y5, Y5 // p*decay
	VSQRTPD   Y3, Y6      // sqrt(v)
	VDIVPD    Y14, Y6, Y6 // sqrt(v)/bc2Sqrt
	VADDPD    Y15, Y6, Y6 // ... + eps
	VMULPD    Y13, Y1, Y7 // stepSize*m
	VDIVPD    Y6, Y7, Y7  // stepSize*m / (sqrt(v)/bc2Sqrt + eps)
	VSUBPD    Y7, Y5, Y5  // p = p*decay - ...
	VCVTPD2PSY Y1, X1
	VMOVUPS   X1, (R8)
	VCVTPD2PSY Y3, X3
	VMOVUPS   X3, (R9)
	VCVTPD2PSY Y5, X5
	VMOVUPS   X5, (DI)
	ADDQ      $16, SI
	ADDQ      $16, R8
	ADDQ      $16, R9
	ADDQ      $16, DI
	SUBQ      $4, CX
	JNZ       adamloop

adamdone:
	VZEROUPPER
	RET
