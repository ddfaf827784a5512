package tensor

import "math"

// The bfloat16 dot product of AVX512_BF16 (Intel SDM, vol. 2, VDPBF16PS), the arithmetic of
// the bfloat16 matrix product (gemm_bf16.go). One 32-bit lane holds a pair of bfloat16 values,
// the element at the even index in the low half; the instruction adds to a float32 accumulator
// the two products of a pair of A and a pair of B, the odd element's first:
//
//	acc = fma(a[2j+1], b[2j+1], acc)
//	acc = fma(a[2j+0], b[2j+0], acc)
//
// Each fma rounds once, to nearest even, whatever MXCSR says; denormal inputs (the bfloat16
// values and the accumulator) are read as zero, and a denormal result is written as zero, of
// the same sign ("daz in, ftz out"). A bfloat16 product is exact in float32 (8 significant bits
// times 8), so the float32 result differs from a float32 FMA only in those flushes.

// dotBF16Pair returns acc after one lane of VDPBF16PS with the bfloat16 pairs a and b (each
// element 2j in the low 16 bits, 2j+1 in the high 16), bit for bit what the instruction gives
// except in the payload of a NaN result.
func dotBF16Pair(acc float32, a, b uint32) float32 {
	acc = flushDenormal(acc)
	acc = fmaFlushed(widenFlushed(uint16(a>>16)), widenFlushed(uint16(b>>16)), acc)
	return fmaFlushed(widenFlushed(uint16(a)), widenFlushed(uint16(b)), acc)
}

// widenFlushed is BF16ToFloat32 reading a denormal as a zero of its sign (the SDM's make_fp32
// under DAZ).
func widenFlushed(h uint16) float32 { return flushDenormal(BF16ToFloat32(h)) }

// flushDenormal returns x, or a zero of x's sign if x is denormal.
func flushDenormal(x float32) float32 {
	u := math.Float32bits(x)
	if u&0x7f800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return x
}

// fmaFlushed returns x*y + z rounded once to the nearest float32, ties to even, with a result
// below the smallest normal float32 in magnitude (after rounding) flushed to a zero of its
// sign. x*y is exact in float64 (for bfloat16 x and y, 16 significant bits) and the float64 sum
// of it and z is rounded so finely (53 >= 2*24+2 bits) that rounding it again to float32 gives
// the correctly rounded sum (Figueroa 1995, "When is double rounding innocuous?").
func fmaFlushed(x, y, z float32) float32 {
	r := float32(float64(x)*float64(y) + float64(z))
	return flushDenormal(r)
}
