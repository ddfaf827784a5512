package tensor

import "math"

// bfloat16 ("brain floating point", Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep
// Learning Training") is the upper half of a float32: the same sign and 8-bit exponent, 7 of
// the 23 mantissa bits. Checkpoints are published in it (Qwen2.5's torch_dtype "bfloat16"), and a
// model held for inference keeps it, at half the memory of float32: widening a value back is
// exact (a shift), so the kernels compute in float32 on the very values the file holds.

// BF16ToFloat32 widens the bfloat16 bits h to the float32 of the same value, exactly.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 rounds x to the nearest bfloat16, ties to even, as PyTorch's
// tensor.to(torch.bfloat16) does; NaN stays a (quiet) NaN.
func Float32ToBF16(x float32) uint16 {
	u := math.Float32bits(x)
	if x != x {
		return uint16(u>>16) | 0x40 // keep the sign and payload's top bits, force quiet
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// widenBF16 writes dst[i] = BF16ToFloat32(src[i]) for every i of dst (len(src) >= len(dst)):
// one micro-panel of BF16 weights made float32 for the micro-kernel, just before it is read.
func widenBF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	n := 0
	if widenBF16Blocks != nil {
		n = len(dst) &^ 31
		widenBF16Blocks(dst[:n], src[:n])
	}
	for i := n; i < len(dst); i++ {
		dst[i] = BF16ToFloat32(src[i])
	}
}

// roundBF16 writes dst[i] = Float32ToBF16(alpha * src[i]) for every i of src (len(dst) >=
// len(src)): a row of activations rounded for the bfloat16 product as it is packed.
func roundBF16(dst []uint16, src []float32, alpha float32) {
	dst = dst[:len(src)]
	for i := roundBF16Blocks(dst, src, alpha); i < len(src); i++ {
		dst[i] = Float32ToBF16(alpha * src[i])
	}
}
