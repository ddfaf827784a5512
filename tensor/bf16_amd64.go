//go:build amd64 && !purego

package tensor

import "github.com/klauspost/cpuid/v2"

// widenBF16Blocks is widenBF16BlocksAVX2 where the CPU has AVX2 (for the 256-bit integer
// widening and shift), else nil.
var widenBF16Blocks = forCPU(widenBF16BlocksAVX2, nil, cpuid.AVX, cpuid.AVX2)

// widenBF16BlocksAVX2 widens len(dst) (a multiple of 32) bfloat16 values of src to float32:
// each is zero-extended to 32 bits and shifted up 16 (VPMOVZXWD, VPSLLD). It is equivalent to
//
//	for i := range dst {
//		dst[i] = math.Float32frombits(uint32(src[i]) << 16)
//	}
//
// src must hold at least len(dst) values (widenBF16 slices it; the assembly does not check).
//
//go:noescape
func widenBF16BlocksAVX2(dst []float32, src []uint16)

// roundBF16Blocks rounds the first len(src) &^ 15 values of src into dst as roundBF16 does,
// by roundBF16BlocksAVX512 where the CPU has AVX-512F, and returns how many it rounded (0
// elsewhere). A direct call, unlike a function variable's, lets dst stay on the caller's stack.
func roundBF16Blocks(dst []uint16, src []float32, alpha float32) int {
	if !hasAVX512F {
		return 0
	}
	n := len(src) &^ 15
	roundBF16BlocksAVX512(dst[:n], src[:n], alpha)
	return n
}

// hasAVX512F reports whether the CPU (and OS) run AVX-512F.
var hasAVX512F = cpuid.CPU.Supports(cpuid.AVX512F)

// roundBF16BlocksAVX512 rounds alpha times each of len(src) (a multiple of 16) float32 values
// of src to bfloat16 in dst. It is equivalent to
//
//	for i, x := range src {
//		dst[i] = Float32ToBF16(alpha * x)
//	}
//
// dst must hold at least len(src) values (roundBF16 slices it; the assembly does not check).
//
//go:noescape
func roundBF16BlocksAVX512(dst []uint16, src []float32, alpha float32)
