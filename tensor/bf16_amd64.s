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

// func roundBF16BlocksAVX512(dst []uint16, src []float32, alpha float32)
// 16 values a loop, Float32ToBF16's integer rounding on every lane: u + 0x7fff + (u>>16)&1,
// shifted down 16 (VPSRLD, VPANDD, VPADDD), NaN lanes (VCMPPS unordered into K1) replaced by
// their top half with the quiet bit set (a masked VPORD), the 16 results narrowed to words
// and stored (VPMOVDW).
TEXT ·roundBF16BlocksAVX512(SB), NOSPLIT, $0-52
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSS alpha+48(FP), Z0
	MOVL         $1, AX
	VPBROADCASTD AX, Z3
	MOVL         $0x7fff, AX
	VPBROADCASTD AX, Z4
	MOVL         $0x40, AX
	VPBROADCASTD AX, Z6
	SHRQ         $4, CX
	JZ           rounddone

roundloop:
	VMULPS    (SI), Z0, Z1        // x = alpha * src
	VPSRLD    $16, Z1, Z5         // u >> 16
	VPANDD    Z3, Z5, Z2          // (u >> 16) & 1
	VPADDD    Z4, Z2, Z2          // 0x7fff + that
	VPADDD    Z1, Z2, Z2          // u + 0x7fff + that
	VPSRLD    $16, Z2, Z2         // rounded to nearest even
	VCMPPS    $3, Z1, Z1, K1      // NaN lanes
	VPORD     Z6, Z5, K1, Z2      // there: u >> 16 | 0x40
	VPMOVDW   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       roundloop
	VZEROUPPER

rounddone:
	RET
