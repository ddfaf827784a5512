//go:build !purego

#include "textflag.h"

// func dotBlocksAVX2(x, y []float32) float32
// Y0..Y3 hold four 8-wide partial sums; the main loop consumes 32 floats, the second 8.
TEXT ·dotBlocksAVX2(SB), NOSPLIT, $0-52
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   CX, $32
	JLT    dot8

dot32:
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JGE         dot32

dot8:
	TESTQ CX, CX
	JZ    dotreduce

dot8loop:
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         dot8loop

dotreduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x4E, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0xB1, X0, X1
	VADDPS       X1, X0, X0
	VMOVSS       X0, ret+48(FP)
	VZEROUPPER
	RET

// func axpyBlocksAVX2(alpha float32, x, y []float32)
TEXT ·axpyBlocksAVX2(SB), NOSPLIT, $0-56
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	MOVQ         y_base+32(FP), DI
	CMPQ         CX, $32
	JLT          axpy8

axpy32:
	VMOVUPS     (DI), Y1
	VMOVUPS     32(DI), Y2
	VMOVUPS     64(DI), Y3
	VMOVUPS     96(DI), Y4
	VFMADD231PS (SI), Y0, Y1
	VFMADD231PS 32(SI), Y0, Y2
	VFMADD231PS 64(SI), Y0, Y3
	VFMADD231PS 96(SI), Y0, Y4
	VMOVUPS     Y1, (DI)
	VMOVUPS     Y2, 32(DI)
	VMOVUPS     Y3, 64(DI)
	VMOVUPS     Y4, 96(DI)
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JGE         axpy32

axpy8:
	TESTQ CX, CX
	JZ    axpydone

axpy8loop:
	VMOVUPS     (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         axpy8loop

axpydone:
	VZEROUPPER
	RET

// func scalBlocksAVX2(alpha float32, x []float32)
TEXT ·scalBlocksAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	CMPQ         CX, $32
	JLT          scal8

scal32:
	VMULPS  (SI), Y0, Y1
	VMULPS  32(SI), Y0, Y2
	VMULPS  64(SI), Y0, Y3
	VMULPS  96(SI), Y0, Y4
	VMOVUPS Y1, (SI)
	VMOVUPS Y2, 32(SI)
	VMOVUPS Y3, 64(SI)
	VMOVUPS Y4, 96(SI)
	ADDQ    $128, SI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     scal32

scal8:
	TESTQ CX, CX
	JZ    scaldone

scal8loop:
	VMULPS  (SI), Y0, Y1
	VMOVUPS Y1, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     scal8loop

scaldone:
	VZEROUPPER
	RET

// func softmaxGradBlocksAVX2(p, d []float32, c float32)
// d = p * (d - c), 32 floats a step, then 8: a subtraction and a multiplication, no FMA, so
// the result rounds as the Go loop's does.
TEXT ·softmaxGradBlocksAVX2(SB), NOSPLIT, $0-52
	MOVQ         p_base+0(FP), SI
	MOVQ         p_len+8(FP), CX
	MOVQ         d_base+24(FP), DI
	VBROADCASTSS c+48(FP), Y0
	CMPQ         CX, $32
	JLT          sg8

sg32:
	VMOVUPS (DI), Y1
	VMOVUPS 32(DI), Y2
	VMOVUPS 64(DI), Y3
	VMOVUPS 96(DI), Y4
	VSUBPS  Y0, Y1, Y1
	VSUBPS  Y0, Y2, Y2
	VSUBPS  Y0, Y3, Y3
	VSUBPS  Y0, Y4, Y4
	VMULPS  (SI), Y1, Y1
	VMULPS  32(SI), Y2, Y2
	VMULPS  64(SI), Y3, Y3
	VMULPS  96(SI), Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     sg32

sg8:
	TESTQ CX, CX
	JZ    sgdone

sg8loop:
	VMOVUPS (DI), Y1
	VSUBPS  Y0, Y1, Y1
	VMULPS  (SI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     sg8loop

sgdone:
	VZEROUPPER
	RET

// func dot4BlocksAVX2(a []float32, lda int, b []float32, out []float32)
// Rows 0-3 of a (at SI, R9, R10, R11) against b; Y0-Y3 sum columns 0-7 of each 16-float step,
// Y4-Y7 columns 8-15, so every B load feeds four FMAs.
TEXT ·dot4BlocksAVX2(SB), NOSPLIT, $0-80
	MOVQ   a_base+0(FP), SI
	MOVQ   lda+24(FP), R8
	SHLQ   $2, R8
	MOVQ   b_base+32(FP), DI
	MOVQ   b_len+40(FP), CX
	MOVQ   out_base+56(FP), DX
	LEAQ   (SI)(R8*1), R9
	LEAQ   (R9)(R8*1), R10
	LEAQ   (R10)(R8*1), R11
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ   CX, $16
	JLT    dot4tail

dot4loop:
	VMOVUPS     (DI)(AX*1), Y8
	VMOVUPS     32(DI)(AX*1), Y9
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS (R9)(AX*1), Y8, Y1
	VFMADD231PS (R10)(AX*1), Y8, Y2
	VFMADD231PS (R11)(AX*1), Y8, Y3
	VFMADD231PS 32(SI)(AX*1), Y9, Y4
	VFMADD231PS 32(R9)(AX*1), Y9, Y5
	VFMADD231PS 32(R10)(AX*1), Y9, Y6
	VFMADD231PS 32(R11)(AX*1), Y9, Y7
	ADDQ        $64, AX
	SUBQ        $16, CX
	CMPQ        CX, $16
	JGE         dot4loop

dot4tail:
	TESTQ       CX, CX
	JZ          dot4reduce
	VMOVUPS     (DI)(AX*1), Y8
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS (R9)(AX*1), Y8, Y1
	VFMADD231PS (R10)(AX*1), Y8, Y2
	VFMADD231PS (R11)(AX*1), Y8, Y3

dot4reduce:
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	VHADDPS      Y1, Y0, Y0     // a01 a23 b01 b23 | a45 a67 b45 b67
	VHADDPS      Y3, Y2, Y2     // c01 c23 d01 d23 | c45 c67 d45 d67
	VHADDPS      Y2, Y0, Y0     // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DX)
	VZEROUPPER
	RET

// func dot4x2BlocksAVX2(a []float32, lda int, b []float32, ldb int, k int, out []float32)
// Rows 0-3 of a (at SI, R9, R10, R11) against rows 0-1 of b (at DI, R12): each 8-float step
// loads the two B rows and the four A rows once and does eight FMAs, Y0-Y3 summing A rows 0-3
// against B row 0 and Y4-Y7 against B row 1.
TEXT ·dot4x2BlocksAVX2(SB), NOSPLIT, $0-96
	MOVQ   a_base+0(FP), SI
	MOVQ   lda+24(FP), R8
	SHLQ   $2, R8
	MOVQ   b_base+32(FP), DI
	MOVQ   ldb+56(FP), R12
	SHLQ   $2, R12
	ADDQ   DI, R12
	MOVQ   k+64(FP), CX
	MOVQ   out_base+72(FP), DX
	LEAQ   (SI)(R8*1), R9
	LEAQ   (R9)(R8*1), R10
	LEAQ   (R10)(R8*1), R11
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ  CX, CX
	JZ     dot4x2reduce

dot4x2loop:
	VMOVUPS     (DI)(AX*1), Y8
	VMOVUPS     (R12)(AX*1), Y9
	VMOVUPS     (SI)(AX*1), Y10
	VMOVUPS     (R9)(AX*1), Y11
	VMOVUPS     (R10)(AX*1), Y12
	VMOVUPS     (R11)(AX*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y6
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y13, Y9, Y7
	ADDQ        $32, AX
	SUBQ        $8, CX
	JNZ         dot4x2loop

dot4x2reduce:
	VHADDPS      Y1, Y0, Y0 // rows 0-3 against B row 0, as in dot4BlocksAVX2
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DX)
	VHADDPS      Y5, Y4, Y4 // rows 0-3 against B row 1
	VHADDPS      Y7, Y6, Y6
	VHADDPS      Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS       X5, X4, X4
	VMOVUPS      X4, 16(DX)
	VZEROUPPER
	RET

// stripIota holds 0, 1, ..., 15: lanes j of the two column vectors, compared with cols to build
// the load masks of strip4x16BlocksAVX2.
DATA stripIota<>+0(SB)/4, $0
DATA stripIota<>+4(SB)/4, $1
DATA stripIota<>+8(SB)/4, $2
DATA stripIota<>+12(SB)/4, $3
DATA stripIota<>+16(SB)/4, $4
DATA stripIota<>+20(SB)/4, $5
DATA stripIota<>+24(SB)/4, $6
DATA stripIota<>+28(SB)/4, $7
DATA stripIota<>+32(SB)/4, $8
DATA stripIota<>+36(SB)/4, $9
DATA stripIota<>+40(SB)/4, $10
DATA stripIota<>+44(SB)/4, $11
DATA stripIota<>+48(SB)/4, $12
DATA stripIota<>+52(SB)/4, $13
DATA stripIota<>+56(SB)/4, $14
DATA stripIota<>+60(SB)/4, $15
GLOBL stripIota<>(SB), RODATA|NOPTR, $64

// func strip4x16BlocksAVX2(k int, a0, a1, a2, a3 []float32, b []float32, ldb, cols int, out []float32)
// out[i*16+j] = sum_p a_i[p] * b[p*ldb+j] for rows i = 0-3 and columns j < cols (0 for the
// others): per step p the 16 floats of row p of b (Y8, Y9) are loaded once, with masked loads
// (VMASKMOVPS, which reads nothing in the masked-off lanes) when cols < 16, and each a_i[p]
// broadcast once (Y10-Y13), eight FMAs into Y0-Y7 (row i in Y(2i), Y(2i+1)).
TEXT ·strip4x16BlocksAVX2(SB), NOSPLIT, $0-168
	MOVQ   k+0(FP), CX
	MOVQ   a0_base+8(FP), R9
	MOVQ   a1_base+32(FP), R10
	MOVQ   a2_base+56(FP), R11
	MOVQ   a3_base+80(FP), R12
	MOVQ   b_base+104(FP), DI
	MOVQ   ldb+128(FP), R8
	SHLQ   $2, R8
	MOVQ   cols+136(FP), BX
	MOVQ   out_base+144(FP), DX
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ  CX, CX
	JZ     stripstore
	CMPQ   BX, $16
	JLT    stripmasked

striploop:
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VBROADCASTSS (R9)(AX*4), Y10
	VBROADCASTSS (R10)(AX*4), Y11
	VBROADCASTSS (R11)(AX*4), Y12
	VBROADCASTSS (R12)(AX*4), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         R8, DI
	INCQ         AX
	CMPQ         AX, CX
	JLT          striploop
	JMP          stripstore

stripmasked:
	VMOVQ        BX, X14 // VEX-encoded: a legacy SSE move with dirty upper halves stalls
	VPBROADCASTD X14, Y14               // cols in every lane
	LEAQ         stripIota<>(SB), SI
	VPCMPGTD     (SI), Y14, Y15         // lane j of columns 0-7: cols > j
	VPCMPGTD     32(SI), Y14, Y14       // lane j of columns 8-15: cols > 8+j

stripmaskedloop:
	VMASKMOVPS   (DI), Y15, Y8
	VMASKMOVPS   32(DI), Y14, Y9
	VBROADCASTSS (R9)(AX*4), Y10
	VBROADCASTSS (R10)(AX*4), Y11
	VBROADCASTSS (R11)(AX*4), Y12
	VBROADCASTSS (R12)(AX*4), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         R8, DI
	INCQ         AX
	CMPQ         AX, CX
	JLT          stripmaskedloop

stripstore:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	RET

// func strip2x32BlocksAVX2(k int, a0, a1 []float32, b []float32, ldb, cols int, out []float32)
// out[i*32+j] = sum_p a_i[p] * b[p*ldb+j] for rows i = 0-1 and columns j < cols (0 for the
// others): per step p the 32 floats of row p of b (Y8-Y11) are loaded once, with masked loads
// when cols < 32, and a_0[p], a_1[p] broadcast once (Y12, Y13), eight FMAs into Y0-Y7 (row i
// in Y(4i) ... Y(4i+3)).
TEXT ·strip2x32BlocksAVX2(SB), NOSPLIT, $0-120
	MOVQ   k+0(FP), CX
	MOVQ   a0_base+8(FP), R9
	MOVQ   a1_base+32(FP), R10
	MOVQ   b_base+56(FP), DI
	MOVQ   ldb+80(FP), R8
	SHLQ   $2, R8
	MOVQ   cols+88(FP), BX
	MOVQ   out_base+96(FP), DX
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ  CX, CX
	JZ     strip2store
	CMPQ   BX, $32
	JLT    strip2masked

strip2loop:
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VMOVUPS      64(DI), Y10
	VMOVUPS      96(DI), Y11
	VBROADCASTSS (R9)(AX*4), Y12
	VBROADCASTSS (R10)(AX*4), Y13
	VFMADD231PS  Y8, Y12, Y0
	VFMADD231PS  Y9, Y12, Y1
	VFMADD231PS  Y10, Y12, Y2
	VFMADD231PS  Y11, Y12, Y3
	VFMADD231PS  Y8, Y13, Y4
	VFMADD231PS  Y9, Y13, Y5
	VFMADD231PS  Y10, Y13, Y6
	VFMADD231PS  Y11, Y13, Y7
	ADDQ         R8, DI
	INCQ         AX
	CMPQ         AX, CX
	JLT          strip2loop
	JMP          strip2store

strip2masked:
	VMOVQ        BX, X15
	VPBROADCASTD X15, Y15            // cols in every lane
	LEAQ         stripIota<>(SB), SI
	VPCMPGTD     (SI), Y15, Y8       // columns 0-7: cols > j
	VPCMPGTD     32(SI), Y15, Y9     // columns 8-15
	SUBQ         $16, BX
	VMOVQ        BX, X15
	VPBROADCASTD X15, Y15            // cols-16 in every lane
	VPCMPGTD     (SI), Y15, Y10      // columns 16-23
	VPCMPGTD     32(SI), Y15, Y11    // columns 24-31
	VMOVDQU      Y8, Y14
	VMOVDQU      Y9, Y15

strip2maskedloop:
	VMASKMOVPS   (DI), Y14, Y8
	VMASKMOVPS   32(DI), Y15, Y9
	VBROADCASTSS (R9)(AX*4), Y12
	VBROADCASTSS (R10)(AX*4), Y13
	VFMADD231PS  Y8, Y12, Y0
	VFMADD231PS  Y9, Y12, Y1
	VFMADD231PS  Y8, Y13, Y4
	VFMADD231PS  Y9, Y13, Y5
	VMASKMOVPS   64(DI), Y10, Y8
	VMASKMOVPS   96(DI), Y11, Y9
	VFMADD231PS  Y8, Y12, Y2
	VFMADD231PS  Y9, Y12, Y3
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         R8, DI
	INCQ         AX
	CMPQ         AX, CX
	JLT          strip2maskedloop

strip2store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	RET

// func maxBlocksAVX2(x []float32) float32
// The largest element of x, len(x) a positive multiple of 8, ignoring NaN as the Go loop
// "if v > m { m = v }" from -Inf does. VMAXPS returns its second source operand (Intel's
// order; Go writes the operands reversed, so the first one listed) when either is NaN or both
// are equal: that operand is always the running maximum, so a NaN of x never enters it. Four
// accumulators for 32 floats a time, then a horizontal reduction; among zeros of either sign
// the one returned may differ from the Go loop's.
TEXT ·maxBlocksAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	MOVL         $0xff800000, AX // -Inf
	VMOVD        AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y2
	VMOVAPS      Y0, Y3
	CMPQ         CX, $32
	JLT          max8

max32loop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS  Y0, Y4, Y0 // Intel vmaxps y0, y4, y0: y0 when y4 is NaN
	VMAXPS  Y1, Y5, Y1
	VMAXPS  Y2, Y6, Y2
	VMAXPS  Y3, Y7, Y3
	ADDQ    $128, SI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     max32loop

max8:
	TESTQ CX, CX
	JZ    maxreduce

max8loop:
	VMOVUPS (SI), Y4
	VMAXPS  Y0, Y4, Y0
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     max8loop

maxreduce:
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET
