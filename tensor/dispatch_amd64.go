//go:build amd64 && !purego

package tensor

import "github.com/klauspost/cpuid/v2"

// avx2Kernels uses 256-bit FMA: a 6x16 sgemm tile in 12 YMM accumulators.
var avx2Kernels = &kernels{
	name: "avx2",
	mr:   6, nr: 16,
	kc: 256, mc: 120, nc: 3072,
	gemmKernel: gemmKernel6x16AVX2,
	dot:        dotAVX2,
	axpy:       axpyAVX2,
	scal:       scalAVX2,
}

// avx512Kernels uses 512-bit FMA: a 12x32 sgemm tile in 24 ZMM accumulators.
var avx512Kernels = &kernels{
	name: "avx512",
	mr:   12, nr: 32,
	kc: 192, mc: 144, nc: 3072,
	gemmKernel: gemmKernel12x32AVX512,
	dot:        dotAVX512,
	axpy:       axpyAVX512,
	scal:       scalAVX512,
}

// archKernels returns the assembly implementations this CPU (and its OS, which must save the
// wider registers) supports, slowest first.
func archKernels() []*kernels {
	var ks []*kernels
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3) {
		ks = append(ks, avx2Kernels)
		if cpuid.CPU.Supports(cpuid.AVX512F) {
			ks = append(ks, avx512Kernels)
		}
	}
	return ks
}
