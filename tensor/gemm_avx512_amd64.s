//go:build !purego

#include "textflag.h"

// AVX512_STEP8 does one rank-1 update of the first eight rows of the 12x32 tile: row i of C,
// held in Z(2i) (columns 0-15) and Z(2i+1) (columns 16-31), gains a[i] * b[0:32]. The packed A
// step is 12 floats (48 bytes) at aoff(SI), of which rows 8-11 are not read; the packed B step
// 32 floats (128 bytes) at boff(DI), loaded into Z24, Z25.
#define AVX512_STEP8(aoff, boff) \
	VMOVUPS      boff(DI), Z24;    \
	VMOVUPS      boff+64(DI), Z25; \
	VBROADCASTSS aoff(SI), Z26;    \
	VFMADD231PS  Z24, Z26, Z0;     \
	VFMADD231PS  Z25, Z26, Z1;     \
	VBROADCASTSS aoff+4(SI), Z27;  \
	VFMADD231PS  Z24, Z27, Z2;     \
	VFMADD231PS  Z25, Z27, Z3;     \
	VBROADCASTSS aoff+8(SI), Z26;  \
	VFMADD231PS  Z24, Z26, Z4;     \
	VFMADD231PS  Z25, Z26, Z5;     \
	VBROADCASTSS aoff+12(SI), Z27; \
	VFMADD231PS  Z24, Z27, Z6;     \
	VFMADD231PS  Z25, Z27, Z7;     \
	VBROADCASTSS aoff+16(SI), Z26; \
	VFMADD231PS  Z24, Z26, Z8;     \
	VFMADD231PS  Z25, Z26, Z9;     \
	VBROADCASTSS aoff+20(SI), Z27; \
	VFMADD231PS  Z24, Z27, Z10;    \
	VFMADD231PS  Z25, Z27, Z11;    \
	VBROADCASTSS aoff+24(SI), Z26; \
	VFMADD231PS  Z24, Z26, Z12;    \
	VFMADD231PS  Z25, Z26, Z13;    \
	VBROADCASTSS aoff+28(SI), Z27; \
	VFMADD231PS  Z24, Z27, Z14;    \
	VFMADD231PS  Z25, Z27, Z15

// AVX512_STEP does one rank-1 update of the whole 12x32 tile: AVX512_STEP8, then rows 8-11
// (Z16-Z23) from the same B row.
#define AVX512_STEP(aoff, boff) \
	AVX512_STEP8(aoff, boff);      \
	VBROADCASTSS aoff+32(SI), Z26; \
	VFMADD231PS  Z24, Z26, Z16;    \
	VFMADD231PS  Z25, Z26, Z17;    \
	VBROADCASTSS aoff+36(SI), Z27; \
	VFMADD231PS  Z24, Z27, Z18;    \
	VFMADD231PS  Z25, Z27, Z19;    \
	VBROADCASTSS aoff+40(SI), Z26; \
	VFMADD231PS  Z24, Z26, Z20;    \
	VFMADD231PS  Z25, Z26, Z21;    \
	VBROADCASTSS aoff+44(SI), Z27; \
	VFMADD231PS  Z24, Z27, Z22;    \
	VFMADD231PS  Z25, Z27, Z23

// AVX512_ROW adds the accumulators lo, hi to the 32 floats of C at DX and moves DX to the next row.
#define AVX512_ROW(lo, hi) \
	VADDPS  (DX), lo, lo;   \
	VMOVUPS lo, (DX);       \
	VADDPS  64(DX), hi, hi; \
	VMOVUPS hi, 64(DX);     \
	ADDQ    R8, DX

// AVX512_ADD_TILE adds the twelve-row tile Z0-Z23 to C at DX (row stride R8).
#define AVX512_ADD_TILE \
	AVX512_ROW(Z0, Z1);   \
	AVX512_ROW(Z2, Z3);   \
	AVX512_ROW(Z4, Z5);   \
	AVX512_ROW(Z6, Z7);   \
	AVX512_ROW(Z8, Z9);   \
	AVX512_ROW(Z10, Z11); \
	AVX512_ROW(Z12, Z13); \
	AVX512_ROW(Z14, Z15); \
	AVX512_ROW(Z16, Z17); \
	AVX512_ROW(Z18, Z19); \
	AVX512_ROW(Z20, Z21); \
	AVX512_ROW(Z22, Z23)

// AVX512_SETROW stores the accumulators lo, hi to the 32 floats of C at DX (overwriting them)
// and moves DX to the next row.
#define AVX512_SETROW(lo, hi) \
	VMOVUPS lo, (DX);       \
	VMOVUPS hi, 64(DX);     \
	ADDQ    R8, DX

// AVX512_SET_TILE stores the twelve-row tile Z0-Z23 into C at DX (row stride R8), overwriting it.
#define AVX512_SET_TILE \
	AVX512_SETROW(Z0, Z1);   \
	AVX512_SETROW(Z2, Z3);   \
	AVX512_SETROW(Z4, Z5);   \
	AVX512_SETROW(Z6, Z7);   \
	AVX512_SETROW(Z8, Z9);   \
	AVX512_SETROW(Z10, Z11); \
	AVX512_SETROW(Z12, Z13); \
	AVX512_SETROW(Z14, Z15); \
	AVX512_SETROW(Z16, Z17); \
	AVX512_SETROW(Z18, Z19); \
	AVX512_SETROW(Z20, Z21); \
	AVX512_SETROW(Z22, Z23)

// AVX512_ZERO24 clears the accumulators Z0-Z23.
#define AVX512_ZERO24 \
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

// PREFETCH_C12 prefetches the twelve 32-float rows of the C tile at DX (row stride R8), which
// every twelve-row kernel touches once, after the k loop (PREFETCH_C8 the eight rows of the
// eight-row kernels): the adding kernels read and write it, the overwriting ones write it, and
// either way the lines then arrive while the k loop runs instead of after it. With it the
// overwriting kernels ran the train step's forward products (1024 x 256 x 128-4096,
// single-thread, alone) faster in 24 of 30 interleaved pairs on the AVX-512 machine, by 8% in
// the median; the whole train step was level within the host's noise (22 rounds), and so was
// decoding, whose eight-row kernels prefetch since they share GEMM_BODY (eight rounds). It
// uses R9.
#define PREFETCH_C12 \
	MOVQ DX, R9;      \
	PREFETCH_ROWS4;   \
	PREFETCH_ROWS4;   \
	PREFETCH_ROW;     \
	PREFETCH_ROW;     \
	PREFETCH_ROW;     \
	PREFETCH_LASTROW

// PREFETCH_C8 is PREFETCH_C12 for the eight rows of the eight-row kernels' tile.
#define PREFETCH_C8 \
	MOVQ DX, R9;      \
	PREFETCH_ROWS4;   \
	PREFETCH_ROW;     \
	PREFETCH_ROW;     \
	PREFETCH_ROW;     \
	PREFETCH_LASTROW

// PREFETCH_ROW prefetches the two cache lines of the 32-float row of C at R9 and moves R9 to
// the next row; PREFETCH_ROWS4 does four rows, PREFETCH_LASTROW one without moving on.
#define PREFETCH_ROW \
	PREFETCHT0 (R9);    \
	PREFETCHT0 127(R9); \
	ADDQ       R8, R9

#define PREFETCH_ROWS4 \
	PREFETCH_ROW; \
	PREFETCH_ROW; \
	PREFETCH_ROW; \
	PREFETCH_ROW

#define PREFETCH_LASTROW \
	PREFETCHT0 (R9); \
	PREFETCHT0 127(R9)

// SPLIT_K4 splits the depth in CX into BX = k/4 unrolled iterations and CX = k%4 single steps,
// and jumps to tail when there is no unrolled iteration.
#define SPLIT_K4(tail) \
	MOVQ  CX, BX; \
	SHRQ  $2, BX; \
	ANDQ  $3, CX; \
	TESTQ BX, BX; \
	JZ    tail

// GEMM_BODY loads the arguments of a packed kernel (k int, a, b, c []float32, ldc int), clears
// the accumulators and runs the k loop of step (AVX512_STEP into Z0-Z23 for the twelve-row
// kernels, AVX512_STEP8 into Z0-Z15 for the eight-row ones), leaving DX at C and R8 at its row
// stride in bytes, with the C tile prefetched by prefetch (PREFETCH_C12 or PREFETCH_C8).
#define GEMM_BODY(step, prefetch, loop4, tail, loop1, done) \
	MOVQ k+0(FP), CX;         \
	MOVQ a_base+8(FP), SI;    \
	MOVQ b_base+32(FP), DI;   \
	MOVQ c_base+56(FP), DX;   \
	MOVQ ldc+80(FP), R8;      \
	SHLQ $2, R8;              \
	AVX512_ZERO24;            \
	prefetch;                 \
	SPLIT_K4(tail);           \
loop4:;                           \
	step(0, 0);               \
	step(48, 128);            \
	step(96, 256);            \
	step(144, 384);           \
	ADDQ $192, SI;            \
	ADDQ $512, DI;            \
	DECQ BX;                  \
	JNZ  loop4;               \
tail:;                            \
	TESTQ CX, CX;             \
	JZ    done;               \
loop1:;                           \
	step(0, 0);               \
	ADDQ $48, SI;             \
	ADDQ $128, DI;            \
	DECQ CX;                  \
	JNZ  loop1

// GEMM12S_BODY is GEMM_BODY(AVX512_STEP, PREFETCH_C12, ...) for the in-place (strided) kernels, (k int, a []float32, lda int,
// b, c []float32, ldc int): the A step is lda floats (R10 bytes) instead of the packed panel's
// 12, so AVX512_STEP always reads at 0(SI) and SI moves on by R10 after each step.
#define GEMM12S_BODY(loop4, tail, loop1, done) \
	MOVQ k+0(FP), CX;         \
	MOVQ a_base+8(FP), SI;    \
	MOVQ lda+32(FP), R10;     \
	SHLQ $2, R10;             \
	MOVQ b_base+40(FP), DI;   \
	MOVQ c_base+64(FP), DX;   \
	MOVQ ldc+88(FP), R8;      \
	SHLQ $2, R8;              \
	AVX512_ZERO24;            \
	PREFETCH_C12;             \
	SPLIT_K4(tail);           \
loop4:;                           \
	AVX512_STEP(0, 0);        \
	ADDQ R10, SI;             \
	AVX512_STEP(0, 128);      \
	ADDQ R10, SI;             \
	AVX512_STEP(0, 256);      \
	ADDQ R10, SI;             \
	AVX512_STEP(0, 384);      \
	ADDQ R10, SI;             \
	ADDQ $512, DI;            \
	DECQ BX;                  \
	JNZ  loop4;               \
tail:;                            \
	TESTQ CX, CX;             \
	JZ    done;               \
loop1:;                           \
	AVX512_STEP(0, 0);        \
	ADDQ R10, SI;             \
	ADDQ $128, DI;            \
	DECQ CX;                  \
	JNZ  loop1


// func gemmKernel12x32AVX512(k int, a, b, c []float32, ldc int)
TEXT ·gemmKernel12x32AVX512(SB), NOSPLIT, $0-88
	GEMM_BODY(AVX512_STEP, PREFETCH_C12, k12loop4, k12tail, k12loop1, k12store)

k12store:
	AVX512_ADD_TILE
	VZEROUPPER
	RET

// func gemmKernel12x32SetAVX512(k int, a, b, c []float32, ldc int)
// The same as gemmKernel12x32AVX512 but C(12, 32) = the product: C is written, never read.
TEXT ·gemmKernel12x32SetAVX512(SB), NOSPLIT, $0-88
	GEMM_BODY(AVX512_STEP, PREFETCH_C12, k12sloop4, k12stail, k12sloop1, k12sstore)

k12sstore:
	AVX512_SET_TILE
	VZEROUPPER
	RET

// func gemmKernel12x32StridedAVX512(k int, a []float32, lda int, b, c []float32, ldc int)
TEXT ·gemmKernel12x32StridedAVX512(SB), NOSPLIT, $0-96
	GEMM12S_BODY(g12loop4, g12tail, g12loop1, g12store)

g12store:
	AVX512_ADD_TILE
	VZEROUPPER
	RET

// func gemmKernel12x32StridedSetAVX512(k int, a []float32, lda int, b, c []float32, ldc int)
TEXT ·gemmKernel12x32StridedSetAVX512(SB), NOSPLIT, $0-96
	GEMM12S_BODY(g12sloop4, g12stail, g12sloop1, g12sstore)

g12sstore:
	AVX512_SET_TILE
	VZEROUPPER
	RET

// func gemmKernel8of12x32AVX512(k int, a, b, c []float32, ldc int)
TEXT ·gemmKernel8of12x32AVX512(SB), NOSPLIT, $0-88
	GEMM_BODY(AVX512_STEP8, PREFETCH_C8, k8loop4, k8tail, k8loop1, k8store)

k8store:
	AVX512_ROW(Z0, Z1)
	AVX512_ROW(Z2, Z3)
	AVX512_ROW(Z4, Z5)
	AVX512_ROW(Z6, Z7)
	AVX512_ROW(Z8, Z9)
	AVX512_ROW(Z10, Z11)
	AVX512_ROW(Z12, Z13)
	AVX512_ROW(Z14, Z15)
	VZEROUPPER
	RET

// func gemmKernel8of12x32SetAVX512(k int, a, b, c []float32, ldc int)
TEXT ·gemmKernel8of12x32SetAVX512(SB), NOSPLIT, $0-88
	GEMM_BODY(AVX512_STEP8, PREFETCH_C8, k8sloop4, k8stail, k8sloop1, k8sstore)

k8sstore:
	AVX512_SETROW(Z0, Z1)
	AVX512_SETROW(Z2, Z3)
	AVX512_SETROW(Z4, Z5)
	AVX512_SETROW(Z6, Z7)
	AVX512_SETROW(Z8, Z9)
	AVX512_SETROW(Z10, Z11)
	AVX512_SETROW(Z12, Z13)
	AVX512_SETROW(Z14, Z15)
	VZEROUPPER
	RET
