//go:build !purego

#include "textflag.h"

// AVX2_STEP does one rank-1 update of the 6x16 tile: row i of C, held in Y(2i) (columns 0-7)
// and Y(2i+1) (columns 8-15), gains a[i] * b[0:16]. The packed A step is 6 floats (24 bytes)
// at aoff(SI), the packed B step 16 floats (64 bytes) at boff(DI).
#define AVX2_STEP(aoff, boff) \
	VMOVUPS      boff(DI), Y12;    \
	VMOVUPS      boff+32(DI), Y13; \
	VBROADCASTSS aoff(SI), Y14;    \
	VFMADD231PS  Y12, Y14, Y0;     \
	VFMADD231PS  Y13, Y14, Y1;     \
	VBROADCASTSS aoff+4(SI), Y15;  \
	VFMADD231PS  Y12, Y15, Y2;     \
	VFMADD231PS  Y13, Y15, Y3;     \
	VBROADCASTSS aoff+8(SI), Y14;  \
	VFMADD231PS  Y12, Y14, Y4;     \
	VFMADD231PS  Y13, Y14, Y5;     \
	VBROADCASTSS aoff+12(SI), Y15; \
	VFMADD231PS  Y12, Y15, Y6;     \
	VFMADD231PS  Y13, Y15, Y7;     \
	VBROADCASTSS aoff+16(SI), Y14; \
	VFMADD231PS  Y12, Y14, Y8;     \
	VFMADD231PS  Y13, Y14, Y9;     \
	VBROADCASTSS aoff+20(SI), Y15; \
	VFMADD231PS  Y12, Y15, Y10;    \
	VFMADD231PS  Y13, Y15, Y11

// AVX2_ROW adds the accumulators lo, hi to the 16 floats of C at DX and moves DX to the next row.
#define AVX2_ROW(lo, hi) \
	VADDPS  (DX), lo, lo;   \
	VMOVUPS lo, (DX);       \
	VADDPS  32(DX), hi, hi; \
	VMOVUPS hi, 32(DX);     \
	ADDQ    R8, DX

// AVX2_ADD_TILE adds the six-row tile Y0-Y11 to C at DX (row stride R8).
#define AVX2_ADD_TILE \
	AVX2_ROW(Y0, Y1);   \
	AVX2_ROW(Y2, Y3);   \
	AVX2_ROW(Y4, Y5);   \
	AVX2_ROW(Y6, Y7);   \
	AVX2_ROW(Y8, Y9);   \
	AVX2_ROW(Y10, Y11)

// AVX2_ZERO8 and AVX2_ZERO12 clear the accumulators of a four-row (Y0-Y7) or six-row (Y0-Y11)
// tile.
#define AVX2_ZERO8 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

#define AVX2_ZERO12 \
	AVX2_ZERO8;           \
	VXORPS Y8, Y8, Y8;    \
	VXORPS Y9, Y9, Y9;    \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

// SPLIT_K splits the depth in CX into BX = k/4 unrolled iterations and CX = k%4 single steps,
// and jumps to tail when there is no unrolled iteration.
#define SPLIT_K(tail) \
	MOVQ  CX, BX; \
	SHRQ  $2, BX; \
	ANDQ  $3, CX; \
	TESTQ BX, BX; \
	JZ    tail

// GEMM6S_BODY runs the k loop of the in-place (strided) six-row kernels into Y0-Y11: the A step
// is lda floats (R10 bytes) instead of the packed panel's 6, so AVX2_STEP always reads at 0(SI)
// and SI moves on by R10 after each step. Then it jumps to label store.
#define GEMM6S_BODY(loop4, tail, loop1, store) \
	MOVQ   k+0(FP), CX;       \
	MOVQ   a_base+8(FP), SI;  \
	MOVQ   lda+32(FP), R10;   \
	SHLQ   $2, R10;           \
	MOVQ   b_base+40(FP), DI; \
	MOVQ   c_base+64(FP), DX; \
	MOVQ   ldc+88(FP), R8;    \
	SHLQ   $2, R8;            \
	AVX2_ZERO12;              \
	SPLIT_K(tail);            \
loop4:;                           \
	AVX2_STEP(0, 0);          \
	ADDQ   R10, SI;           \
	AVX2_STEP(0, 64);         \
	ADDQ   R10, SI;           \
	AVX2_STEP(0, 128);        \
	ADDQ   R10, SI;           \
	AVX2_STEP(0, 192);        \
	ADDQ   R10, SI;           \
	ADDQ   $256, DI;          \
	DECQ   BX;                \
	JNZ    loop4;             \
tail:;                            \
	TESTQ  CX, CX;            \
	JZ     store;             \
loop1:;                           \
	AVX2_STEP(0, 0);          \
	ADDQ   R10, SI;           \
	ADDQ   $64, DI;           \
	DECQ   CX;                \
	JNZ    loop1

// func gemmKernel6x16AVX2(k int, a, b, c []float32, ldc int)
TEXT ·gemmKernel6x16AVX2(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), CX
	MOVQ a_base+8(FP), SI
	MOVQ b_base+32(FP), DI
	MOVQ c_base+56(FP), DX
	MOVQ ldc+80(FP), R8
	SHLQ $2, R8            // row stride of C in bytes

	AVX2_ZERO12

	// Prefetch the C tile: it is read once, after the k loop.
	MOVQ       DX, R9
	PREFETCHT0 (R9)
	PREFETCHT0 63(R9)
	ADDQ       R8, R9
	PREFETCHT0 (R9)
	PREFETCHT0 63(R9)
	ADDQ       R8, R9
	PREFETCHT0 (R9)
	PREFETCHT0 63(R9)
	ADDQ       R8, R9
	PREFETCHT0 (R9)
	PREFETCHT0 63(R9)
	ADDQ       R8, R9
	PREFETCHT0 (R9)
	PREFETCHT0 63(R9)
	ADDQ       R8, R9
	PREFETCHT0 (R9)
	PREFETCHT0 63(R9)

	SPLIT_K(tail)

loop4:
	AVX2_STEP(0, 0)
	AVX2_STEP(24, 64)
	AVX2_STEP(48, 128)
	AVX2_STEP(72, 192)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ BX
	JNZ  loop4

tail:
	TESTQ CX, CX
	JZ    store

loop1:
	AVX2_STEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loop1

store:
	AVX2_ADD_TILE
	VZEROUPPER
	RET

// AVX2_SETROW stores the accumulators lo, hi to the 16 floats of C at DX (overwriting them) and
// moves DX to the next row.
#define AVX2_SETROW(lo, hi) \
	VMOVUPS lo, (DX);       \
	VMOVUPS hi, 32(DX);     \
	ADDQ    R8, DX

// AVX2_SET_TILE stores the six-row tile Y0-Y11 into C at DX (row stride R8), overwriting it.
#define AVX2_SET_TILE \
	AVX2_SETROW(Y0, Y1);   \
	AVX2_SETROW(Y2, Y3);   \
	AVX2_SETROW(Y4, Y5);   \
	AVX2_SETROW(Y6, Y7);   \
	AVX2_SETROW(Y8, Y9);   \
	AVX2_SETROW(Y10, Y11)

// func gemmKernel6x16SetAVX2(k int, a, b, c []float32, ldc int)
// The same as gemmKernel6x16AVX2 but C(6, 16) = the product: C is written, never read.
TEXT ·gemmKernel6x16SetAVX2(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), CX
	MOVQ a_base+8(FP), SI
	MOVQ b_base+32(FP), DI
	MOVQ c_base+56(FP), DX
	MOVQ ldc+80(FP), R8
	SHLQ $2, R8            // row stride of C in bytes

	AVX2_ZERO12

	SPLIT_K(settail)

setloop4:
	AVX2_STEP(0, 0)
	AVX2_STEP(24, 64)
	AVX2_STEP(48, 128)
	AVX2_STEP(72, 192)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ BX
	JNZ  setloop4

settail:
	TESTQ CX, CX
	JZ    setstore

setloop1:
	AVX2_STEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  setloop1

setstore:
	AVX2_SET_TILE
	VZEROUPPER
	RET

// AVX2_STEP4 is AVX2_STEP for the first four rows of the six-row A panel: the A step is still
// 6 floats (24 bytes) at aoff(SI), rows 4 and 5 are not read; row i in Y(2i), Y(2i+1).
#define AVX2_STEP4(aoff, boff) \
	VMOVUPS      boff(DI), Y12;    \
	VMOVUPS      boff+32(DI), Y13; \
	VBROADCASTSS aoff(SI), Y14;    \
	VFMADD231PS  Y12, Y14, Y0;     \
	VFMADD231PS  Y13, Y14, Y1;     \
	VBROADCASTSS aoff+4(SI), Y15;  \
	VFMADD231PS  Y12, Y15, Y2;     \
	VFMADD231PS  Y13, Y15, Y3;     \
	VBROADCASTSS aoff+8(SI), Y14;  \
	VFMADD231PS  Y12, Y14, Y4;     \
	VFMADD231PS  Y13, Y14, Y5;     \
	VBROADCASTSS aoff+12(SI), Y15; \
	VFMADD231PS  Y12, Y15, Y6;     \
	VFMADD231PS  Y13, Y15, Y7

// GEMM4_BODY runs the k loop of the four-row kernels into Y0-Y7, then jumps to label store.
#define GEMM4_BODY(loop4, tail, loop1, store) \
	MOVQ   k+0(FP), CX;      \
	MOVQ   a_base+8(FP), SI; \
	MOVQ   b_base+32(FP), DI; \
	MOVQ   c_base+56(FP), DX; \
	MOVQ   ldc+80(FP), R8;   \
	SHLQ   $2, R8;           \
	AVX2_ZERO8;              \
	SPLIT_K(tail);           \
loop4:;                          \
	AVX2_STEP4(0, 0);        \
	AVX2_STEP4(24, 64);      \
	AVX2_STEP4(48, 128);     \
	AVX2_STEP4(72, 192);     \
	ADDQ   $96, SI;          \
	ADDQ   $256, DI;         \
	DECQ   BX;               \
	JNZ    loop4;            \
tail:;                           \
	TESTQ  CX, CX;           \
	JZ     store;            \
loop1:;                          \
	AVX2_STEP4(0, 0);        \
	ADDQ   $24, SI;          \
	ADDQ   $64, DI;          \
	DECQ   CX;               \
	JNZ    loop1

// func gemmKernel4of6x16AVX2(k int, a, b, c []float32, ldc int)
TEXT ·gemmKernel4of6x16AVX2(SB), NOSPLIT, $0-88
	GEMM4_BODY(g4loop4, g4tail, g4loop1, g4store)

g4store:
	AVX2_ROW(Y0, Y1)
	AVX2_ROW(Y2, Y3)
	AVX2_ROW(Y4, Y5)
	AVX2_ROW(Y6, Y7)
	VZEROUPPER
	RET

// func gemmKernel4of6x16SetAVX2(k int, a, b, c []float32, ldc int)
TEXT ·gemmKernel4of6x16SetAVX2(SB), NOSPLIT, $0-88
	GEMM4_BODY(g4sloop4, g4stail, g4sloop1, g4sstore)

g4sstore:
	AVX2_SETROW(Y0, Y1)
	AVX2_SETROW(Y2, Y3)
	AVX2_SETROW(Y4, Y5)
	AVX2_SETROW(Y6, Y7)
	VZEROUPPER
	RET

// func gemmKernel6x16StridedAVX2(k int, a []float32, lda int, b, c []float32, ldc int)
TEXT ·gemmKernel6x16StridedAVX2(SB), NOSPLIT, $0-96
	GEMM6S_BODY(g6loop4, g6tail, g6loop1, g6store)

g6store:
	AVX2_ADD_TILE
	VZEROUPPER
	RET

// func gemmKernel6x16StridedSetAVX2(k int, a []float32, lda int, b, c []float32, ldc int)
TEXT ·gemmKernel6x16StridedSetAVX2(SB), NOSPLIT, $0-96
	GEMM6S_BODY(g6sloop4, g6stail, g6sloop1, g6sstore)

g6sstore:
	AVX2_SET_TILE
	VZEROUPPER
	RET
