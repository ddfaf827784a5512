//go:build !purego

#include "textflag.h"

// Constants of expSumBlocksAVX2 and expSumBlocksAVX512 (which broadcasts each from its first
// lane), each replicated eight times so that it can be a 256-bit memory operand: log2(e), ln2
// split into a float32 high part and the remainder, the Cephes expf polynomial coefficients
// p0..p5 (e^r = 1 + r + r^2*(((((p0 r + p1) r + p2) r + p3) r + p4) r + p5), 1.0, the exponent
// bias 127 and the clamp bounds 127 and -126 of the integer exponent; then, once each (both
// functions broadcast them into registers), the clamp bounds 89 and -104 of the argument.
DATA expConsts<>+0(SB)/4, $0x3fb8aa3b
DATA expConsts<>+4(SB)/4, $0x3fb8aa3b
DATA expConsts<>+8(SB)/4, $0x3fb8aa3b
DATA expConsts<>+12(SB)/4, $0x3fb8aa3b
DATA expConsts<>+16(SB)/4, $0x3fb8aa3b
DATA expConsts<>+20(SB)/4, $0x3fb8aa3b
DATA expConsts<>+24(SB)/4, $0x3fb8aa3b
DATA expConsts<>+28(SB)/4, $0x3fb8aa3b
DATA expConsts<>+32(SB)/4, $0x3f317218
DATA expConsts<>+36(SB)/4, $0x3f317218
DATA expConsts<>+40(SB)/4, $0x3f317218
DATA expConsts<>+44(SB)/4, $0x3f317218
DATA expConsts<>+48(SB)/4, $0x3f317218
DATA expConsts<>+52(SB)/4, $0x3f317218
DATA expConsts<>+56(SB)/4, $0x3f317218
DATA expConsts<>+60(SB)/4, $0x3f317218
DATA expConsts<>+64(SB)/4, $0xb102e308
DATA expConsts<>+68(SB)/4, $0xb102e308
DATA expConsts<>+72(SB)/4, $0xb102e308
DATA expConsts<>+76(SB)/4, $0xb102e308
DATA expConsts<>+80(SB)/4, $0xb102e308
DATA expConsts<>+84(SB)/4, $0xb102e308
DATA expConsts<>+88(SB)/4, $0xb102e308
DATA expConsts<>+92(SB)/4, $0xb102e308
DATA expConsts<>+96(SB)/4, $0x39506967
DATA expConsts<>+100(SB)/4, $0x39506967
DATA expConsts<>+104(SB)/4, $0x39506967
DATA expConsts<>+108(SB)/4, $0x39506967
DATA expConsts<>+112(SB)/4, $0x39506967
DATA expConsts<>+116(SB)/4, $0x39506967
DATA expConsts<>+120(SB)/4, $0x39506967
DATA expConsts<>+124(SB)/4, $0x39506967
DATA expConsts<>+128(SB)/4, $0x3ab743ce
DATA expConsts<>+132(SB)/4, $0x3ab743ce
DATA expConsts<>+136(SB)/4, $0x3ab743ce
DATA expConsts<>+140(SB)/4, $0x3ab743ce
DATA expConsts<>+144(SB)/4, $0x3ab743ce
DATA expConsts<>+148(SB)/4, $0x3ab743ce
DATA expConsts<>+152(SB)/4, $0x3ab743ce
DATA expConsts<>+156(SB)/4, $0x3ab743ce
DATA expConsts<>+160(SB)/4, $0x3c088908
DATA expConsts<>+164(SB)/4, $0x3c088908
DATA expConsts<>+168(SB)/4, $0x3c088908
DATA expConsts<>+172(SB)/4, $0x3c088908
DATA expConsts<>+176(SB)/4, $0x3c088908
DATA expConsts<>+180(SB)/4, $0x3c088908
DATA expConsts<>+184(SB)/4, $0x3c088908
DATA expConsts<>+188(SB)/4, $0x3c088908
DATA expConsts<>+192(SB)/4, $0x3d2aa9c1
DATA expConsts<>+196(SB)/4, $0x3d2aa9c1
DATA expConsts<>+200(SB)/4, $0x3d2aa9c1
DATA expConsts<>+204(SB)/4, $0x3d2aa9c1
DATA expConsts<>+208(SB)/4, $0x3d2aa9c1
DATA expConsts<>+212(SB)/4, $0x3d2aa9c1
DATA expConsts<>+216(SB)/4, $0x3d2aa9c1
DATA expConsts<>+220(SB)/4, $0x3d2aa9c1
DATA expConsts<>+224(SB)/4, $0x3e2aaaaa
DATA expConsts<>+228(SB)/4, $0x3e2aaaaa
DATA expConsts<>+232(SB)/4, $0x3e2aaaaa
DATA expConsts<>+236(SB)/4, $0x3e2aaaaa
DATA expConsts<>+240(SB)/4, $0x3e2aaaaa
DATA expConsts<>+244(SB)/4, $0x3e2aaaaa
DATA expConsts<>+248(SB)/4, $0x3e2aaaaa
DATA expConsts<>+252(SB)/4, $0x3e2aaaaa
DATA expConsts<>+256(SB)/4, $0x3f000000
DATA expConsts<>+260(SB)/4, $0x3f000000
DATA expConsts<>+264(SB)/4, $0x3f000000
DATA expConsts<>+268(SB)/4, $0x3f000000
DATA expConsts<>+272(SB)/4, $0x3f000000
DATA expConsts<>+276(SB)/4, $0x3f000000
DATA expConsts<>+280(SB)/4, $0x3f000000
DATA expConsts<>+284(SB)/4, $0x3f000000
DATA expConsts<>+288(SB)/4, $0x3f800000
DATA expConsts<>+292(SB)/4, $0x3f800000
DATA expConsts<>+296(SB)/4, $0x3f800000
DATA expConsts<>+300(SB)/4, $0x3f800000
DATA expConsts<>+304(SB)/4, $0x3f800000
DATA expConsts<>+308(SB)/4, $0x3f800000
DATA expConsts<>+312(SB)/4, $0x3f800000
DATA expConsts<>+316(SB)/4, $0x3f800000
DATA expConsts<>+320(SB)/4, $0x0000007f
DATA expConsts<>+324(SB)/4, $0x0000007f
DATA expConsts<>+328(SB)/4, $0x0000007f
DATA expConsts<>+332(SB)/4, $0x0000007f
DATA expConsts<>+336(SB)/4, $0x0000007f
DATA expConsts<>+340(SB)/4, $0x0000007f
DATA expConsts<>+344(SB)/4, $0x0000007f
DATA expConsts<>+348(SB)/4, $0x0000007f
DATA expConsts<>+352(SB)/4, $0x0000007f
DATA expConsts<>+356(SB)/4, $0x0000007f
DATA expConsts<>+360(SB)/4, $0x0000007f
DATA expConsts<>+364(SB)/4, $0x0000007f
DATA expConsts<>+368(SB)/4, $0x0000007f
DATA expConsts<>+372(SB)/4, $0x0000007f
DATA expConsts<>+376(SB)/4, $0x0000007f
DATA expConsts<>+380(SB)/4, $0x0000007f
DATA expConsts<>+384(SB)/4, $0xffffff82
DATA expConsts<>+388(SB)/4, $0xffffff82
DATA expConsts<>+392(SB)/4, $0xffffff82
DATA expConsts<>+396(SB)/4, $0xffffff82
DATA expConsts<>+400(SB)/4, $0xffffff82
DATA expConsts<>+404(SB)/4, $0xffffff82
DATA expConsts<>+408(SB)/4, $0xffffff82
DATA expConsts<>+412(SB)/4, $0xffffff82
DATA expConsts<>+416(SB)/4, $0x42b20000 // 89.0
DATA expConsts<>+420(SB)/4, $0xc2d00000 // -104.0
GLOBL expConsts<>(SB), RODATA|NOPTR, $424

// expTailMask: eight all-ones int32 then eight zeros; the eight at byte 4*(8-r) select the
// first r lanes of a group (the AVX2 loop's masked last group of r < 8 elements).
DATA expTailMask<>+0(SB)/8, $-1
DATA expTailMask<>+8(SB)/8, $-1
DATA expTailMask<>+16(SB)/8, $-1
DATA expTailMask<>+24(SB)/8, $-1
DATA expTailMask<>+32(SB)/8, $0
DATA expTailMask<>+40(SB)/8, $0
DATA expTailMask<>+48(SB)/8, $0
DATA expTailMask<>+56(SB)/8, $0
GLOBL expTailMask<>(SB), RODATA|NOPTR, $64

// EXP8 computes Y3 = e^t for the eight floats x in Y0 (Y0 overwritten): t = clamp(scale*x -
// shift, -104, 89) (NaN stays NaN), n = round(t*log2e), r = t - n*ln2 (two FMAs: ln2hi then
// ln2lo), p = e^r by the polynomial, and e^t = p * 2^k * 2^j with j = clamp(n, -126, 127),
// k = n - j in [-24, 1]: both powers are normal floats built from exponent bits, p*2^k is
// exact, and the last product rounds once, into the subnormal range or to +Inf as the true
// value does. t = 89 overflows to +Inf; t = -104 rounds to 0. Y15 scale, Y14 shift, Y11 and
// Y10 the clamp bounds, BX the constants; Y1 and Y4-Y7 are overwritten.
#define EXP8 \
	VFMSUB213PS  Y14, Y15, Y0; /* t = scale*x - shift */ \
	VMINPS       Y0, Y11, Y0; /* min(89, t); a NaN t is kept (the second source wins) */ \
	VMAXPS       Y0, Y10, Y0; /* max(-104, t) */ \
	VMULPS       0(BX), Y0, Y1; /* t*log2e */ \
	VROUNDPS     $0, Y1, Y1; /* n, to nearest */ \
	VFNMADD231PS 32(BX), Y1, Y0; /* r = t - n*ln2hi */ \
	VFNMADD231PS 64(BX), Y1, Y0; /* r -= n*ln2lo */ \
	VMOVUPS      96(BX), Y3; /* p0 */ \
	VFMADD213PS  128(BX), Y0, Y3; /* p = p*r + p1 */ \
	VFMADD213PS  160(BX), Y0, Y3; \
	VFMADD213PS  192(BX), Y0, Y3; \
	VFMADD213PS  224(BX), Y0, Y3; \
	VFMADD213PS  256(BX), Y0, Y3; /* ... + p5 */ \
	VMULPS       Y0, Y0, Y4; /* r^2 */ \
	VFMADD213PS  Y0, Y4, Y3; /* p = p*r^2 + r */ \
	VADDPS       288(BX), Y3, Y3; /* p += 1 */ \
	VCVTPS2DQ    Y1, Y5; /* n as int32 (exact: n is integral) */ \
	VPMINSD      352(BX), Y5, Y6; /* j = min(n, 127) */ \
	VPMAXSD      384(BX), Y6, Y6; /* j = max(j, -126) */ \
	VPSUBD       Y6, Y5, Y7; /* k = n - j */ \
	VPADDD       320(BX), Y6, Y6; \
	VPSLLD       $23, Y6, Y6; /* 2^j */ \
	VPADDD       320(BX), Y7, Y7; \
	VPSLLD       $23, Y7, Y7; /* 2^k */ \
	VMULPS       Y7, Y3, Y3; \
	VMULPS       Y6, Y3, Y3 /* e^t */

// SUM8 adds the eight floats of Y3 as float64 to the two 4-lane accumulators Y12 (elements
// 0-3) and Y13 (elements 4-7); X5 and Y4 are overwritten.
#define SUM8 \
	VCVTPS2PD    X3, Y4; \
	VEXTRACTF128 $1, Y3, X5; \
	VCVTPS2PD    X5, Y5; \
	VADDPD       Y4, Y12, Y12; \
	VADDPD       Y5, Y13, Y13

// func expSumBlocksAVX2(y, x []float32, scale, shift float32) float64
//
// Each group of eight elements through EXP8, stored to y and summed (SUM8) in two float64
// accumulators of 4 lanes, which are added at the end. A last group of r < 8 elements runs
// through the same steps with its lanes r..7 masked off (Y9): loaded as zero (a masked-off
// element is never read, so it cannot fault), zeroed in the result, so that they add +0 to
// the sums, and not stored.
//
// Registers: Y15 scale, Y14 shift, Y11 upper clamp, Y10 lower clamp, Y12/Y13 the float64 sums.
TEXT ·expSumBlocksAVX2(SB), NOSPLIT, $0-64
	MOVQ         y_base+0(FP), DI
	MOVQ         x_base+24(FP), SI
	MOVQ         x_len+32(FP), CX
	VBROADCASTSS scale+48(FP), Y15
	VBROADCASTSS shift+52(FP), Y14
	LEAQ         expConsts<>(SB), BX
	VBROADCASTSS 416(BX), Y11 // 89
	VBROADCASTSS 420(BX), Y10 // -104
	VXORPD       Y12, Y12, Y12
	VXORPD       Y13, Y13, Y13
	MOVQ         CX, DX
	SHRQ         $3, DX          // groups of eight
	ANDQ         $7, CX          // the last group's length, or 0
	TESTQ        DX, DX
	JZ           exptail

exploop:
	VMOVUPS (SI), Y0
	EXP8
	VMOVUPS Y3, (DI)
	SUM8
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    DX
	JNZ     exploop

exptail:
	TESTQ      CX, CX
	JZ         expdone
	LEAQ       expTailMask<>+32(SB), AX
	SHLQ       $2, CX
	SUBQ       CX, AX
	VMOVDQU    (AX), Y9          // lanes 0..r-1 all ones
	VMASKMOVPS (SI), Y9, Y0
	EXP8
	VANDPS     Y9, Y3, Y3
	VMASKMOVPS Y3, Y9, (DI)
	SUM8

expdone:
	VADDPD       Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPD       X13, X12, X12
	VPERMILPD    $1, X12, X13
	VADDSD       X13, X12, X12
	VMOVSD       X12, ret+56(FP)
	VZEROUPPER
	RET

// EXP16 is EXP8 on the sixteen floats x in Z0, giving Z3, with every constant in a register:
// Z16 log2e, Z17 ln2hi, Z18 ln2lo, Z19-Z24 p0-p5, Z25 1.0, Z26 the bias 127, Z27 127 and Z28
// -126 (the clamp bounds of n); Z15 scale, Z14 shift, Z11 and Z10 the clamp bounds of t. Z1
// and Z4-Z7 are overwritten. The same operations per lane as EXP8, so the same bits.
#define EXP16 \
	VFMSUB213PS  Z14, Z15, Z0; /* t = scale*x - shift */ \
	VMINPS       Z0, Z11, Z0; /* min(89, t); a NaN t is kept */ \
	VMAXPS       Z0, Z10, Z0; /* max(-104, t) */ \
	VMULPS       Z16, Z0, Z1; /* t*log2e */ \
	VRNDSCALEPS  $0, Z1, Z1; /* n, to nearest (as VROUNDPS $0) */ \
	VFNMADD231PS Z17, Z1, Z0; /* r = t - n*ln2hi */ \
	VFNMADD231PS Z18, Z1, Z0; /* r -= n*ln2lo */ \
	VMOVAPS      Z19, Z3; /* p0 */ \
	VFMADD213PS  Z20, Z0, Z3; /* p = p*r + p1 */ \
	VFMADD213PS  Z21, Z0, Z3; \
	VFMADD213PS  Z22, Z0, Z3; \
	VFMADD213PS  Z23, Z0, Z3; \
	VFMADD213PS  Z24, Z0, Z3; /* ... + p5 */ \
	VMULPS       Z0, Z0, Z4; /* r^2 */ \
	VFMADD213PS  Z0, Z4, Z3; /* p = p*r^2 + r */ \
	VADDPS       Z25, Z3, Z3; /* p += 1 */ \
	VCVTPS2DQ    Z1, Z5; /* n as int32 (exact: n is integral) */ \
	VPMINSD      Z27, Z5, Z6; /* j = min(n, 127) */ \
	VPMAXSD      Z28, Z6, Z6; /* j = max(j, -126) */ \
	VPSUBD       Z6, Z5, Z7; /* k = n - j */ \
	VPADDD       Z26, Z6, Z6; \
	VPSLLD       $23, Z6, Z6; /* 2^j */ \
	VPADDD       Z26, Z7, Z7; \
	VPSLLD       $23, Z7, Z7; /* 2^k */ \
	VMULPS       Z7, Z3, Z3; \
	VMULPS       Z6, Z3, Z3 /* e^t */

// SUM16 adds the sixteen floats of Z3 as float64 to Z12, elements 0-7 then 8-15: Z12's low
// half is SUM8's first accumulator and its high half the second, so this adds what two SUM8
// of the same sixteen add, in the same order. Y5 and Z4 are overwritten.
#define SUM16 \
	VCVTPS2PD     Y3, Z4; \
	VADDPD        Z4, Z12, Z12; \
	VEXTRACTF64X4 $1, Z3, Y5; \
	VCVTPS2PD     Y5, Z5; \
	VADDPD        Z5, Z12, Z12

// func expSumBlocksAVX512(y, x []float32, scale, shift float32) float64
//
// expSumBlocksAVX2 sixteen lanes at a time (EXP16, SUM16), so every y[i] and the sum have the
// same bits. A last group of r < 16 elements runs through the same steps with its lanes
// r..15 masked off (K1): zero on loading, zeroed in the result (so the sum gets +0 where
// expSumBlocksAVX2 adds a masked group or none), not stored.
//
// Registers: Z15 scale, Z14 shift, Z11 upper clamp, Z10 lower clamp, Z12 the float64 sums,
// Z16-Z28 the constants (EXP16).
TEXT ·expSumBlocksAVX512(SB), NOSPLIT, $0-64
	MOVQ         y_base+0(FP), DI
	MOVQ         x_base+24(FP), SI
	MOVQ         x_len+32(FP), CX
	VBROADCASTSS scale+48(FP), Z15
	VBROADCASTSS shift+52(FP), Z14
	LEAQ         expConsts<>(SB), BX
	VBROADCASTSS 416(BX), Z11      // 89
	VBROADCASTSS 420(BX), Z10      // -104
	VXORPD       Z12, Z12, Z12
	VBROADCASTSS 0(BX), Z16
	VBROADCASTSS 32(BX), Z17
	VBROADCASTSS 64(BX), Z18
	VBROADCASTSS 96(BX), Z19
	VBROADCASTSS 128(BX), Z20
	VBROADCASTSS 160(BX), Z21
	VBROADCASTSS 192(BX), Z22
	VBROADCASTSS 224(BX), Z23
	VBROADCASTSS 256(BX), Z24
	VBROADCASTSS 288(BX), Z25
	VPBROADCASTD 320(BX), Z26
	VPBROADCASTD 352(BX), Z27
	VPBROADCASTD 384(BX), Z28
	MOVQ         CX, DX
	SHRQ         $4, DX            // groups of sixteen
	ANDQ         $15, CX           // the last group's length, or 0
	TESTQ        DX, DX
	JZ           exp512tail

exp512loop:
	VMOVUPS (SI), Z0
	EXP16
	VMOVUPS Z3, (DI)
	SUM16
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    DX
	JNZ     exp512loop

exp512tail:
	TESTQ     CX, CX
	JZ        exp512done
	MOVL      $1, AX
	SHLL      CX, AX
	DECL      AX
	KMOVW     AX, K1               // lanes 0..r-1
	VMOVUPS.Z (SI), K1, Z0
	EXP16
	VMOVAPS.Z Z3, K1, Z3
	VMOVUPS   Z3, K1, (DI)
	SUM16

exp512done:
	VEXTRACTF64X4 $1, Z12, Y13     // the second accumulator
	VADDPD        Y13, Y12, Y12
	VEXTRACTF128  $1, Y12, X13
	VADDPD        X13, X12, X12
	VPERMILPD     $1, X12, X13
	VADDSD        X13, X12, X12
	VMOVSD        X12, ret+56(FP)
	VZEROUPPER
	RET
