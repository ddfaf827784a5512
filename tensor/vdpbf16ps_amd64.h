// VDPBF16PS(dst, src1, src2) emits VDPBF16PS zmm_dst, zmm_src1, zmm_src2 (AVX512_BF16), which
// the Go assembler does not know, as bytes: per 32-bit lane j,
//
//	dst.fp32[j] += src1.bf16[2j+1]*src2.bf16[2j+1] + src1.bf16[2j]*src2.bf16[2j]
//
// (see dotBF16Pair for the rounding). dst, src1 and src2 are register numbers 0-31, constant
// expressions. The Intel SDM (vol. 2, VDPBF16PS; vol. 2, 2.7 "EVEX encoding") gives
// EVEX.512.F3.0F38.W0 52 /r: the 4-byte EVEX prefix 62 P0 P1 P2, the opcode 52, and a ModRM
// byte for two registers. ModRM.reg is dst, EVEX.vvvv is src1 and ModRM.rm is src2; the
// register bits above the low three go into the prefix, inverted:
//
//	P0    = R X B R' 0 0 m m   R = ~dst bit 3, X = ~src2 bit 4, B = ~src2 bit 3,
//	                           R' = ~dst bit 4, mm = 10 (the 0F38 opcode map)
//	P1    = W v v v v 1 p p    W = 0, vvvv = ~src1 bits 3-0, pp = 10 (the F3 prefix)
//	P2    = z L'L b V' a a a   z = 0 (merge), L'L = 10 (512 bits), b = 0 (no broadcast),
//	                           V' = ~src1 bit 4, aaa = 000 (no mask)
//	ModRM = 1 1 r r r m m m    mod = 11 (register), rrr = dst bits 2-0, mmm = src2 bits 2-0
//
// so VDPBF16PS zmm0, zmm1, zmm2 is 62 F2 76 48 52 C2.
#define VDPBF16PS(dst, src1, src2) \
	BYTE $0x62; \
	BYTE $(((((dst)>>3)&1)^1)<<7 | ((((src2)>>4)&1)^1)<<6 | ((((src2)>>3)&1)^1)<<5 | ((((dst)>>4)&1)^1)<<4 | 0x02); \
	BYTE $((((src1)&15)^15)<<3 | 0x04 | 0x02); \
	BYTE $(0x40 | ((((src1)>>4)&1)^1)<<3); \
	BYTE $0x52; \
	BYTE $(0xC0 | ((dst)&7)<<3 | ((src2)&7))
