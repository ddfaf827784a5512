//go:build amd64 && !purego

package tensor

// ropeRowAVX2 is ropeRowGeneric with AVX, eight elements of a half at a time: the same float32
// operations in the same order (no fused multiply-adds), so the same bits. Halves that are
// not a multiple of 8 long go to the generic loop.
func ropeRowAVX2(x []float32, heads int, cos, sin []float32, sign float32) {
	half := len(cos)
	if half%8 != 0 || heads == 0 {
		ropeRowGeneric(x, heads, cos, sin, sign)
		return
	}
	ropeRowBlocksAVX2(x[:2*half*heads], heads, cos, sin[:half], sign)
}

// ropeRowBlocksAVX2 is ropeRowGeneric for len(cos) a positive multiple of 8, len(sin) =
// len(cos), len(x) = 2*len(cos)*heads and heads > 0 (the wrapper checks; the assembly does
// not).
//
//go:noescape
func ropeRowBlocksAVX2(x []float32, heads int, cos, sin []float32, sign float32)
