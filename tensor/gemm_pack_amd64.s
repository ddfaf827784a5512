//go:build !purego

#include "textflag.h"

// TRANSPOSE_8X8 transposes the 8x8 tile whose rows are Y0-Y7 into Y8-Y15 (Y8+j holds column
// j): unpack pairs of rows (r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5], ...), shuffle
// quads (rows 0-3 of columns 0 and 4 in one register, ...), then swap 128-bit halves. Y0-Y7
// are overwritten.
#define TRANSPOSE_8X8 \
	VUNPCKLPS Y1, Y0, Y8;\
	VUNPCKHPS Y1, Y0, Y9;\
	VUNPCKLPS Y3, Y2, Y10;\
	VUNPCKHPS Y3, Y2, Y11;\
	VUNPCKLPS Y5, Y4, Y12;\
	VUNPCKHPS Y5, Y4, Y13;\
	VUNPCKLPS Y7, Y6, Y14;\
	VUNPCKHPS Y7, Y6, Y15;\
	VSHUFPS $0x44, Y10, Y8, Y0;\
	VSHUFPS $0xEE, Y10, Y8, Y1;\
	VSHUFPS $0x44, Y11, Y9, Y2;\
	VSHUFPS $0xEE, Y11, Y9, Y3;\
	VSHUFPS $0x44, Y14, Y12, Y4;\
	VSHUFPS $0xEE, Y14, Y12, Y5;\
	VSHUFPS $0x44, Y15, Y13, Y6;\
	VSHUFPS $0xEE, Y15, Y13, Y7;\
	VPERM2F128 $0x20, Y4, Y0, Y8;\
	VPERM2F128 $0x20, Y5, Y1, Y9;\
	VPERM2F128 $0x20, Y6, Y2, Y10;\
	VPERM2F128 $0x20, Y7, Y3, Y11;\
	VPERM2F128 $0x31, Y4, Y0, Y12;\
	VPERM2F128 $0x31, Y5, Y1, Y13;\
	VPERM2F128 $0x31, Y6, Y2, Y14;\
	VPERM2F128 $0x31, Y7, Y3, Y15

// COPY_STRIDED loads the arguments of copyStridedSSE and copyStridedAVX (dst []float32,
// dstStride int, src []float32, srcStride int, runs, width int) and copies each run as
// width/16 blocks of 64 bytes with moves, a macro copying the 64 bytes at R9 to R11:
// MOVES64_SSE or MOVES64_AVX. It jumps to done at once when there is nothing to copy.
#define COPY_STRIDED(moves, run, block, done) \
	MOVQ  dst_base+0(FP), DI;   \
	MOVQ  dstStride+24(FP), R10; \
	SHLQ  $2, R10; /* destination stride in bytes */ \
	MOVQ  src_base+32(FP), SI;  \
	MOVQ  srcStride+56(FP), R8; \
	SHLQ  $2, R8; /* source stride in bytes */ \
	MOVQ  runs+64(FP), CX;      \
	MOVQ  width+72(FP), DX;     \
	SHRQ  $4, DX; /* 64-byte blocks per run */ \
	TESTQ CX, CX;               \
	JZ    done;                 \
	TESTQ DX, DX;               \
	JZ    done;                 \
run:;                               \
	MOVQ SI, R9;                \
	MOVQ DI, R11;               \
	MOVQ DX, BX;                \
block:;                             \
	moves;                      \
	ADDQ $64, R9;               \
	ADDQ $64, R11;              \
	DECQ BX;                    \
	JNZ  block;                 \
	ADDQ R8, SI;                \
	ADDQ R10, DI;               \
	DECQ CX;                    \
	JNZ  run

// MOVES64_SSE copies the 64 bytes at R9 to R11 with four 16-byte MOVUPS loads and stores.
#define MOVES64_SSE \
	MOVUPS (R9), X0;    \
	MOVUPS 16(R9), X1;  \
	MOVUPS 32(R9), X2;  \
	MOVUPS 48(R9), X3;  \
	MOVUPS X0, (R11);   \
	MOVUPS X1, 16(R11); \
	MOVUPS X2, 32(R11); \
	MOVUPS X3, 48(R11)

// MOVES64_AVX copies the 64 bytes at R9 to R11 with two 32-byte VMOVUPS loads and stores.
#define MOVES64_AVX \
	VMOVUPS (R9), Y0;    \
	VMOVUPS 32(R9), Y1;  \
	VMOVUPS Y0, (R11);   \
	VMOVUPS Y1, 32(R11)

// func copyStridedSSE(dst []float32, dstStride int, src []float32, srcStride int, runs, width int)
// Each run moves as width/16 blocks of four 16-byte MOVUPS loads and stores.
TEXT ·copyStridedSSE(SB), NOSPLIT, $0-80
	COPY_STRIDED(MOVES64_SSE, run, block, done)

done:
	RET

// func copyStridedAVX(dst []float32, dstStride int, src []float32, srcStride int, runs, width int)
// copyStridedSSE with 256-bit moves: each run as width/16 blocks of two 32-byte loads and stores.
TEXT ·copyStridedAVX(SB), NOSPLIT, $0-80
	COPY_STRIDED(MOVES64_AVX, avxrun, avxblock, avxdone)
	VZEROUPPER

avxdone:
	RET

// func transpose8x8BlocksAVX(dst []float32, dstStride int, src []float32, srcStride int, blocks int)
// Block b moves the 8x8 tile at src[b*8:] (rows srcStride apart) to dst[b*8*dstStride:] (rows
// dstStride apart), transposed: unpack pairs of rows, shuffle quads, then swap 128-bit halves.
TEXT ·transpose8x8BlocksAVX(SB), NOSPLIT, $0-72
	MOVQ  dst_base+0(FP), DI
	MOVQ  dstStride+24(FP), R10
	SHLQ  $2, R10                  // destination row stride in bytes
	MOVQ  src_base+32(FP), SI
	MOVQ  srcStride+56(FP), R8
	SHLQ  $2, R8                   // source row stride in bytes
	MOVQ  blocks+64(FP), CX
	LEAQ  (R8)(R8*2), R9           // 3 source rows
	LEAQ  (R10)(R10*2), R11        // 3 destination rows
	TESTQ CX, CX
	JZ    tdone

tblock:
	// Y0..Y7 = source rows 0..7 of the tile, 8 floats each.
	MOVQ    SI, AX
	VMOVUPS (AX), Y0
	VMOVUPS (AX)(R8*1), Y1
	VMOVUPS (AX)(R8*2), Y2
	VMOVUPS (AX)(R9*1), Y3
	LEAQ    (AX)(R8*4), AX
	VMOVUPS (AX), Y4
	VMOVUPS (AX)(R8*1), Y5
	VMOVUPS (AX)(R8*2), Y6
	VMOVUPS (AX)(R9*1), Y7

	TRANSPOSE_8X8

	MOVQ    DI, AX
	VMOVUPS Y8, (AX)
	VMOVUPS Y9, (AX)(R10*1)
	VMOVUPS Y10, (AX)(R10*2)
	VMOVUPS Y11, (AX)(R11*1)
	LEAQ    (AX)(R10*4), AX
	VMOVUPS Y12, (AX)
	VMOVUPS Y13, (AX)(R10*1)
	VMOVUPS Y14, (AX)(R10*2)
	VMOVUPS Y15, (AX)(R11*1)

	ADDQ $32, SI                   // next 8 source columns
	LEAQ (DI)(R10*8), DI           // next 8 destination rows
	DECQ CX
	JNZ  tblock

	VZEROUPPER

tdone:
	RET

// func pack6BlocksAVX(dst []float32, src []float32, ld int, blocks int, scale float32)
// Block b reads columns 8b..8b+7 of six rows of src (ld floats apart), scales them, and
// writes them to dst[48b:48b+48] column by column, six floats per column: the 8x8 transpose
// of transpose8x8BlocksAVX with rows 6 and 7 zero, each column stored with an 8-float move
// that the next column's store partly overwrites, the last with a 6-float masked store.
TEXT ·pack6BlocksAVX(SB), NOSPLIT, $0-68
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         ld+48(FP), R8
	SHLQ         $2, R8              // row stride in bytes
	MOVQ         blocks+56(FP), CX
	VBROADCASTSS scale+64(FP), Y15
	LEAQ         (R8)(R8*2), R9      // 3 rows
	MOVL         $-1, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14            // all ones
	VPXOR        X13, X13, X13
	VPBLENDD     $0xC0, Y13, Y14, Y14 // lanes 0-5 set: the mask of a six-float store
	TESTQ        CX, CX
	JZ           p6done

p6block:
	MOVQ      SI, AX
	VMULPS    (AX), Y15, Y0
	VMULPS    (AX)(R8*1), Y15, Y1
	VMULPS    (AX)(R8*2), Y15, Y2
	VMULPS    (AX)(R9*1), Y15, Y3
	LEAQ      (AX)(R8*4), AX
	VMULPS    (AX), Y15, Y4
	VMULPS    (AX)(R8*1), Y15, Y5
	VXORPS    Y6, Y6, Y6
	VXORPS    Y7, Y7, Y7

	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y0 // zero rows 6, 7: the interleave of zeros is zero
	VSHUFPS   $0x44, Y10, Y8, Y1 // r0-3[0] | r0-3[4]
	VSHUFPS   $0xEE, Y10, Y8, Y2 // r0-3[1] | r0-3[5]
	VSHUFPS   $0x44, Y11, Y9, Y3 // r0-3[2] | r0-3[6]
	VSHUFPS   $0xEE, Y11, Y9, Y4 // r0-3[3] | r0-3[7]
	VSHUFPS   $0x44, Y0, Y12, Y5 // r4-5[0] 0 0 | r4-5[4] 0 0
	VSHUFPS   $0xEE, Y0, Y12, Y6 // r4-5[1] | r4-5[5]
	VSHUFPS   $0x44, Y0, Y13, Y7 // r4-5[2] | r4-5[6]
	VSHUFPS   $0xEE, Y0, Y13, Y8 // r4-5[3] | r4-5[7]

	VPERM2F128 $0x20, Y5, Y1, Y9  // column 0
	VPERM2F128 $0x20, Y6, Y2, Y10 // column 1
	VPERM2F128 $0x20, Y7, Y3, Y11 // column 2
	VPERM2F128 $0x20, Y8, Y4, Y12 // column 3
	VMOVUPS    Y9, (DI)
	VMOVUPS    Y10, 24(DI)
	VMOVUPS    Y11, 48(DI)
	VMOVUPS    Y12, 72(DI)
	VPERM2F128 $0x31, Y5, Y1, Y9  // column 4
	VPERM2F128 $0x31, Y6, Y2, Y10 // column 5
	VPERM2F128 $0x31, Y7, Y3, Y11 // column 6
	VPERM2F128 $0x31, Y8, Y4, Y12 // column 7
	VMOVUPS    Y9, 96(DI)
	VMOVUPS    Y10, 120(DI)
	VMOVUPS    Y11, 144(DI)
	VMASKMOVPS Y12, Y14, 168(DI)

	ADDQ $32, SI  // next 8 columns
	ADDQ $192, DI // next 48 floats
	DECQ CX
	JNZ  p6block

	VZEROUPPER

p6done:
	RET

// func scatter6BlocksAVX(dst []float32, dstStride int, src []float32, chunks int, scale float32)
// Each six-float run: four floats and two, loaded, scaled and stored with 128-bit VEX moves
// (a plain multiply, as scale6's, so the same bits).
TEXT ·scatter6BlocksAVX(SB), NOSPLIT, $0-68
	MOVQ         dst_base+0(FP), DI
	MOVQ         dstStride+24(FP), DX
	SHLQ         $2, DX
	MOVQ         src_base+32(FP), SI
	MOVQ         chunks+56(FP), CX
	VBROADCASTSS scale+64(FP), X0

scatter6loop:
	VMULPS  (SI), X0, X1
	VMOVSD  16(SI), X2
	VMULPS  X2, X0, X2
	VMOVUPS X1, (DI)
	VMOVSD  X2, 16(DI)
	ADDQ    $24, SI
	ADDQ    DX, DI
	DECQ    CX
	JNZ     scatter6loop
	RET

// func pack12BlocksAVX(dst []float32, src []float32, ld int, blocks int, scale float32)
// Block b reads columns 8b..8b+7 of twelve rows of src (ld floats apart), scales them, and
// writes them to dst[96b:96b+96] column by column, twelve floats per column: rows 0-7 by the
// 8x8 transpose (TRANSPOSE_8X8), each column's eight floats at the start of its
// 48-byte group, then rows 8-11 by the same unpack and shuffle on four rows, each column's
// four floats (one 128-bit half) after them.
TEXT ·pack12BlocksAVX(SB), NOSPLIT, $0-68
	MOVQ  dst_base+0(FP), DI
	MOVQ  src_base+24(FP), SI
	MOVQ  ld+48(FP), R8
	SHLQ  $2, R8                   // row stride in bytes
	MOVQ  blocks+56(FP), CX
	LEAQ  (R8)(R8*2), R9           // 3 rows
	TESTQ CX, CX
	JZ    p12done

p12block:
	// Rows 0-7, scaled.
	VBROADCASTSS scale+64(FP), Y15
	MOVQ         SI, AX
	VMULPS       (AX), Y15, Y0
	VMULPS       (AX)(R8*1), Y15, Y1
	VMULPS       (AX)(R8*2), Y15, Y2
	VMULPS       (AX)(R9*1), Y15, Y3
	LEAQ         (AX)(R8*4), AX
	VMULPS       (AX), Y15, Y4
	VMULPS       (AX)(R8*1), Y15, Y5
	VMULPS       (AX)(R8*2), Y15, Y6
	VMULPS       (AX)(R9*1), Y15, Y7

	TRANSPOSE_8X8

	VMOVUPS Y8, (DI)
	VMOVUPS Y9, 48(DI)
	VMOVUPS Y10, 96(DI)
	VMOVUPS Y11, 144(DI)
	VMOVUPS Y12, 192(DI)
	VMOVUPS Y13, 240(DI)
	VMOVUPS Y14, 288(DI)
	VMOVUPS Y15, 336(DI)

	// Rows 8-11, scaled.
	VBROADCASTSS scale+64(FP), Y15
	LEAQ         (SI)(R8*8), AX
	VMULPS       (AX), Y15, Y0
	VMULPS       (AX)(R8*1), Y15, Y1
	VMULPS       (AX)(R8*2), Y15, Y2
	VMULPS       (AX)(R9*1), Y15, Y3

	VUNPCKLPS Y1, Y0, Y4           // r8[0] r9[0] r8[1] r9[1] | r8[4] r9[4] r8[5] r9[5]
	VUNPCKHPS Y1, Y0, Y5           // r8[2] r9[2] r8[3] r9[3] | r8[6] r9[6] r8[7] r9[7]
	VUNPCKLPS Y3, Y2, Y6
	VUNPCKHPS Y3, Y2, Y7
	VSHUFPS   $0x44, Y6, Y4, Y0    // r8-11[0] | r8-11[4]
	VSHUFPS   $0xEE, Y6, Y4, Y1    // r8-11[1] | r8-11[5]
	VSHUFPS   $0x44, Y7, Y5, Y2    // r8-11[2] | r8-11[6]
	VSHUFPS   $0xEE, Y7, Y5, Y3    // r8-11[3] | r8-11[7]

	VMOVUPS      X0, 32(DI)        // column 0, rows 8-11
	VMOVUPS      X1, 80(DI)
	VMOVUPS      X2, 128(DI)
	VMOVUPS      X3, 176(DI)
	VEXTRACTF128 $1, Y0, 224(DI)   // column 4
	VEXTRACTF128 $1, Y1, 272(DI)
	VEXTRACTF128 $1, Y2, 320(DI)
	VEXTRACTF128 $1, Y3, 368(DI)

	ADDQ $32, SI                   // next 8 columns
	ADDQ $384, DI                  // next 96 floats
	DECQ CX
	JNZ  p12block

	VZEROUPPER

p12done:
	RET

// func scatter12BlocksAVX(dst []float32, dstStride int, src []float32, chunks int, scale float32)
// Each twelve-float run: eight floats and four, loaded, scaled and stored with 256- and 128-bit
// VEX moves (a plain multiply, as the Go loops', so the same bits).
TEXT ·scatter12BlocksAVX(SB), NOSPLIT, $0-68
	MOVQ         dst_base+0(FP), DI
	MOVQ         dstStride+24(FP), DX
	SHLQ         $2, DX
	MOVQ         src_base+32(FP), SI
	MOVQ         chunks+56(FP), CX
	VBROADCASTSS scale+64(FP), Y0

scatter12loop:
	VMULPS  (SI), Y0, Y1
	VMULPS  32(SI), X0, X2
	VMOVUPS Y1, (DI)
	VMOVUPS X2, 32(DI)
	ADDQ    $48, SI
	ADDQ    DX, DI
	DECQ    CX
	JNZ     scatter12loop
	VZEROUPPER
	RET

