//go:build !purego

#include "textflag.h"
#include "vdpbf16ps_amd64.h"

// DOT_BF16_BLOCKS(dst, src1, src2) is the body of dotBF16Blocks with the accumulator in
// Z(dst), the pairs of a in Z(src1) and those of b in Z(src2): 16 lanes a loop.
#define DOT_BF16_BLOCKS(zdst, zsrc1, zsrc2, dst, src1, src2) \
	MOVQ acc_base+0(FP), DI; \
	MOVQ acc_len+8(FP), CX;  \
	MOVQ a_base+24(FP), SI;  \
	MOVQ b_base+48(FP), DX;  \
	SHRQ $4, CX;             \
	JZ   done;               \
loop:;                           \
	VMOVUPS (DI), zdst;      \
	VMOVUPS (SI), zsrc1;     \
	VMOVUPS (DX), zsrc2;     \
	VDPBF16PS(dst, src1, src2); \
	VMOVUPS zdst, (DI);      \
	ADDQ $64, DI;            \
	ADDQ $64, SI;            \
	ADDQ $64, DX;            \
	DECQ CX;                 \
	JNZ  loop;               \
	VZEROUPPER;              \
done:;                           \
	RET

// func dotBF16BlocksLow(acc []float32, a, b []uint32)
// Registers below 16 but for src2's, which sets the X bit.
TEXT ·dotBF16BlocksLow(SB), NOSPLIT, $0-72
	DOT_BF16_BLOCKS(Z3, Z12, Z30, 3, 12, 30)

// func dotBF16BlocksHigh(acc []float32, a, b []uint32)
// dst and src1 from 16 up (the R' and V' bits), src2 from 8 (the B bit).
TEXT ·dotBF16BlocksHigh(SB), NOSPLIT, $0-72
	DOT_BF16_BLOCKS(Z20, Z27, Z9, 20, 27, 9)
