//go:build !purego

#include "textflag.h"

// func copyRows16SSE(dst, src []float32, ld, runs, width int)
// Each row moves as width/16 blocks of four 16-byte MOVUPS loads and stores.
TEXT ·copyRows16SSE(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ ld+48(FP), R8
	SHLQ $2, R8              // source row stride in bytes
	MOVQ runs+56(FP), CX
	MOVQ width+64(FP), DX
	SHRQ $4, DX              // 64-byte blocks per row
	TESTQ CX, CX
	JZ    done

row:
	MOVQ SI, R9
	MOVQ DX, BX

block:
	MOVUPS (R9), X0
	MOVUPS 16(R9), X1
	MOVUPS 32(R9), X2
	MOVUPS 48(R9), X3
	MOVUPS X0, (DI)
	MOVUPS X1, 16(DI)
	MOVUPS X2, 32(DI)
	MOVUPS X3, 48(DI)
	ADDQ   $64, R9
	ADDQ   $64, DI
	DECQ   BX
	JNZ    block

	ADDQ R8, SI
	DECQ CX
	JNZ  row

done:
	RET
