//go:build !purego

#include "textflag.h"

// func dotBlocksAVX512(x, y []float32) float32
// Z0..Z3 hold four 16-wide partial sums; the main loop consumes 64 floats, the second 16.
TEXT ·dotBlocksAVX512(SB), NOSPLIT, $0-52
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	CMPQ   CX, $64
	JLT    dot16

dot64:
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	CMPQ        CX, $64
	JGE         dot64

dot16:
	TESTQ CX, CX
	JZ    dotreduce

dot16loop:
	VMOVUPS     (SI), Z4
	VFMADD231PS (DI), Z4, Z0
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         dot16loop

dotreduce:
	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4E, X0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0xB1, X0, X1
	VADDPS        X1, X0, X0
	VMOVSS        X0, ret+48(FP)
	VZEROUPPER
	RET

// func axpyBlocksAVX512(alpha float32, x, y []float32)
TEXT ·axpyBlocksAVX512(SB), NOSPLIT, $0-56
	VBROADCASTSS alpha+0(FP), Z0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	MOVQ         y_base+32(FP), DI
	CMPQ         CX, $64
	JLT          axpy16

axpy64:
	VMOVUPS     (DI), Z1
	VMOVUPS     64(DI), Z2
	VMOVUPS     128(DI), Z3
	VMOVUPS     192(DI), Z4
	VFMADD231PS (SI), Z0, Z1
	VFMADD231PS 64(SI), Z0, Z2
	VFMADD231PS 128(SI), Z0, Z3
	VFMADD231PS 192(SI), Z0, Z4
	VMOVUPS     Z1, (DI)
	VMOVUPS     Z2, 64(DI)
	VMOVUPS     Z3, 128(DI)
	VMOVUPS     Z4, 192(DI)
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	CMPQ        CX, $64
	JGE         axpy64

axpy16:
	TESTQ CX, CX
	JZ    axpydone

axpy16loop:
	VMOVUPS     (DI), Z1
	VFMADD231PS (SI), Z0, Z1
	VMOVUPS     Z1, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         axpy16loop

axpydone:
	VZEROUPPER
	RET

// func scalBlocksAVX512(alpha float32, x []float32)
TEXT ·scalBlocksAVX512(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Z0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	CMPQ         CX, $64
	JLT          scal16

scal64:
	VMULPS  (SI), Z0, Z1
	VMULPS  64(SI), Z0, Z2
	VMULPS  128(SI), Z0, Z3
	VMULPS  192(SI), Z0, Z4
	VMOVUPS Z1, (SI)
	VMOVUPS Z2, 64(SI)
	VMOVUPS Z3, 128(SI)
	VMOVUPS Z4, 192(SI)
	ADDQ    $256, SI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JGE     scal64

scal16:
	TESTQ CX, CX
	JZ    scaldone

scal16loop:
	VMULPS  (SI), Z0, Z1
	VMOVUPS Z1, (SI)
	ADDQ    $64, SI
	SUBQ    $16, CX
	JNZ     scal16loop

scaldone:
	VZEROUPPER
	RET
