//go:build !purego

#include "textflag.h"
#include "vdpbf16ps_amd64.h"

// The bfloat16 product's micro-kernels: the float32 AVX-512 kernel's 12x32 tile in Z0-Z23
// (row i in Z(2i), columns 0-15, and Z(2i+1), columns 16-31), with one pair of depths a step
// instead of one depth. A packed A step is 12 pairs (48 bytes), a packed B step 32 pairs (128
// bytes, loaded into Z24 and Z25: lane j holds column j's pair); the pair of row i is broadcast
// to every lane (VPBROADCASTD into Z26 or Z27) and VDPBF16PS adds both its products to each of
// the row's 32 columns.

// BF16_STEP8 does one pair step of the first eight rows: Z(2i), Z(2i+1) += pair i of A . B.
#define BF16_STEP8(aoff, boff) \
	VMOVDQU32    boff(DI), Z24;    \
	VMOVDQU32    boff+64(DI), Z25; \
	VPBROADCASTD aoff(SI), Z26;    \
	VDPBF16PS(0, 26, 24);          \
	VDPBF16PS(1, 26, 25);          \
	VPBROADCASTD aoff+4(SI), Z27;  \
	VDPBF16PS(2, 27, 24);          \
	VDPBF16PS(3, 27, 25);          \
	VPBROADCASTD aoff+8(SI), Z26;  \
	VDPBF16PS(4, 26, 24);          \
	VDPBF16PS(5, 26, 25);          \
	VPBROADCASTD aoff+12(SI), Z27; \
	VDPBF16PS(6, 27, 24);          \
	VDPBF16PS(7, 27, 25);          \
	VPBROADCASTD aoff+16(SI), Z26; \
	VDPBF16PS(8, 26, 24);          \
	VDPBF16PS(9, 26, 25);          \
	VPBROADCASTD aoff+20(SI), Z27; \
	VDPBF16PS(10, 27, 24);         \
	VDPBF16PS(11, 27, 25);         \
	VPBROADCASTD aoff+24(SI), Z26; \
	VDPBF16PS(12, 26, 24);         \
	VDPBF16PS(13, 26, 25);         \
	VPBROADCASTD aoff+28(SI), Z27; \
	VDPBF16PS(14, 27, 24);         \
	VDPBF16PS(15, 27, 25)

// BF16_STEP does one pair step of all twelve rows: BF16_STEP8, then rows 8-11 (Z16-Z23).
#define BF16_STEP(aoff, boff) \
	BF16_STEP8(aoff, boff);        \
	VPBROADCASTD aoff+32(SI), Z26; \
	VDPBF16PS(16, 26, 24);         \
	VDPBF16PS(17, 26, 25);         \
	VPBROADCASTD aoff+36(SI), Z27; \
	VDPBF16PS(18, 27, 24);         \
	VDPBF16PS(19, 27, 25);         \
	VPBROADCASTD aoff+40(SI), Z26; \
	VDPBF16PS(20, 26, 24);         \
	VDPBF16PS(21, 26, 25);         \
	VPBROADCASTD aoff+44(SI), Z27; \
	VDPBF16PS(22, 27, 24);         \
	VDPBF16PS(23, 27, 25)

// BF16_ADDROW adds the accumulators lo, hi to the 32 floats of C at DX and moves DX to the
// next row; BF16_SETROW stores them there instead.
#define BF16_ADDROW(lo, hi) \
	VADDPS  (DX), lo, lo;   \
	VMOVUPS lo, (DX);       \
	VADDPS  64(DX), hi, hi; \
	VMOVUPS hi, 64(DX);     \
	ADDQ    R8, DX

#define BF16_SETROW(lo, hi) \
	VMOVUPS lo, (DX);   \
	VMOVUPS hi, 64(DX); \
	ADDQ    R8, DX

// BF16_ROWS8(row) applies row (BF16_ADDROW or BF16_SETROW) to the first eight rows' accumulators,
// BF16_ROWS4(row) to the last four.
#define BF16_ROWS8(row) \
	row(Z0, Z1);   \
	row(Z2, Z3);   \
	row(Z4, Z5);   \
	row(Z6, Z7);   \
	row(Z8, Z9);   \
	row(Z10, Z11); \
	row(Z12, Z13); \
	row(Z14, Z15)

#define BF16_ROWS4(row) \
	row(Z16, Z17); \
	row(Z18, Z19); \
	row(Z20, Z21); \
	row(Z22, Z23)

// BF16_ZERO clears the accumulators Z0-Z23.
#define BF16_ZERO \
	VPXORD Z0, Z0, Z0;    \
	VPXORD Z1, Z1, Z1;    \
	VPXORD Z2, Z2, Z2;    \
	VPXORD Z3, Z3, Z3;    \
	VPXORD Z4, Z4, Z4;    \
	VPXORD Z5, Z5, Z5;    \
	VPXORD Z6, Z6, Z6;    \
	VPXORD Z7, Z7, Z7;    \
	VPXORD Z8, Z8, Z8;    \
	VPXORD Z9, Z9, Z9;    \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// BF16_BODY loads the arguments (k int, a, b []uint16, c []float32, ldc int), clears the
// accumulators and runs step over the k pairs, four a loop, leaving DX at C and R8 at its row
// stride in bytes.
#define BF16_BODY(step, loop4, tail, loop1, done) \
	MOVQ  k+0(FP), CX;       \
	MOVQ  a_base+8(FP), SI;  \
	MOVQ  b_base+32(FP), DI; \
	MOVQ  c_base+56(FP), DX; \
	MOVQ  ldc+80(FP), R8;    \
	SHLQ  $2, R8;            \
	BF16_ZERO;               \
	MOVQ  CX, BX;            \
	SHRQ  $2, BX;            \
	ANDQ  $3, CX;            \
	TESTQ BX, BX;            \
	JZ    tail;              \
loop4:;                          \
	step(0, 0);              \
	step(48, 128);           \
	step(96, 256);           \
	step(144, 384);          \
	ADDQ  $192, SI;          \
	ADDQ  $512, DI;          \
	DECQ  BX;                \
	JNZ   loop4;             \
tail:;                           \
	TESTQ CX, CX;            \
	JZ    done;              \
loop1:;                          \
	step(0, 0);              \
	ADDQ  $48, SI;           \
	ADDQ  $128, DI;          \
	DECQ  CX;                \
	JNZ   loop1

// func gemmKernelBF16x12x32(k int, a, b []uint16, c []float32, ldc int)
TEXT ·gemmKernelBF16x12x32(SB), NOSPLIT, $0-88
	BF16_BODY(BF16_STEP, a12loop4, a12tail, a12loop1, a12store)

a12store:
	BF16_ROWS8(BF16_ADDROW)
	BF16_ROWS4(BF16_ADDROW)
	VZEROUPPER
	RET

// func gemmKernelBF16x12x32Set(k int, a, b []uint16, c []float32, ldc int)
TEXT ·gemmKernelBF16x12x32Set(SB), NOSPLIT, $0-88
	BF16_BODY(BF16_STEP, s12loop4, s12tail, s12loop1, s12store)

s12store:
	BF16_ROWS8(BF16_SETROW)
	BF16_ROWS4(BF16_SETROW)
	VZEROUPPER
	RET

// func gemmKernelBF16x8of12x32(k int, a, b []uint16, c []float32, ldc int)
TEXT ·gemmKernelBF16x8of12x32(SB), NOSPLIT, $0-88
	BF16_BODY(BF16_STEP8, a8loop4, a8tail, a8loop1, a8store)

a8store:
	BF16_ROWS8(BF16_ADDROW)
	VZEROUPPER
	RET

// func gemmKernelBF16x8of12x32Set(k int, a, b []uint16, c []float32, ldc int)
TEXT ·gemmKernelBF16x8of12x32Set(SB), NOSPLIT, $0-88
	BF16_BODY(BF16_STEP8, s8loop4, s8tail, s8loop1, s8store)

s8store:
	BF16_ROWS8(BF16_SETROW)
	VZEROUPPER
	RET
