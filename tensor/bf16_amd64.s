//go:build !purego

#include "textflag.h"

// func widenBF16BlocksAVX2(dst []float32, src []uint16)
// 32 values a loop: four 8-value loads zero-extended to 32 bits, shifted into the high half.
TEXT ·widenBF16BlocksAVX2(SB), NOSPLIT, $0-48
	MOVQ  dst_base+0(FP), DI
	MOVQ  dst_len+8(FP), CX
	MOVQ  src_base+24(FP), SI
	SHRQ  $5, CX
	JZ    done

loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER

done:
	RET
