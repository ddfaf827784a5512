//go:build amd64 && !purego

package tensor

import "github.com/klauspost/cpuid/v2"

// avx2Kernels uses 256-bit FMA: a 6x16 sgemm tile in 12 YMM accumulators (the BLIS Haswell
// and Zen shape). kc = 256 keeps the (256, 16) B micro-panel (16 KiB) in a 32 KiB L1 beside the
// streaming A micro-panel; mc = 120 makes the A block 120 KiB of a 512 KiB L2; nc bounds the
// B block at 3 MiB of L3.
var avx2Kernels = &kernels{
	name: "avx2",
	mr:   6, nr: 16,
	kc: 256, mc: 120, nc: 3072,
	gemmKernel:        gemmKernel6x16AVX2,
	gemmKernelSet:     gemmKernel6x16SetAVX2,
	partRows:          4,
	gemmKernelPart:    gemmKernel4of6x16AVX2,
	gemmKernelPartSet: gemmKernel4of6x16SetAVX2,
	packedMinRows:     6,

	gemmKernelStrided:    gemmKernel6x16StridedAVX2,
	gemmKernelStridedSet: gemmKernel6x16StridedSetAVX2,

	dot:         dotAVX2,
	dot4:        dot4AVX2,
	dot4x2:      dot4x2AVX2,
	strip4x16:   strip4x16AVX2,
	strip2x32:   strip2x32AVX2,
	max:         maxAVX2,
	axpy:        axpyAVX2,
	scal:        scalAVX2,
	softmaxGrad: softmaxGradAVX2,
	expSum:      expSumAVX2,
	adamw:       adamwAVX2,

	rowKernels: avx2Rows,
}

// avx512Kernels uses 512-bit FMA: a 12x32 sgemm tile in 24 ZMM accumulators, 4 more ZMM for
// the B row and the broadcasts of A. kc = 256 keeps the (256, 32) B micro-panel (32 KiB) in a
// 48 KiB L1 (Sapphire Rapids) beside the streaming (12, 256) A micro-panel (12 KiB); mc = 144
// makes the A block 144 KiB of a 2 MiB L2. Measured single-thread on that CPU (interleaved,
// best of 16): kc = 256 against 160 is level on square products and up to 1.1x faster on the
// train step's head and its gradient (fewer passes over C); 320 and 384 gain nothing more.
var avx512Kernels = &kernels{
	name: "avx512",
	mr:   12, nr: 32,
	kc: 256, mc: 144, nc: 3072,
	gemmKernel:    gemmKernel12x32AVX512,
	gemmKernelSet: gemmKernel12x32SetAVX512,

	partRows:          8,
	gemmKernelPart:    gemmKernel8of12x32AVX512,
	gemmKernelPartSet: gemmKernel8of12x32SetAVX512,
	packedMinRows:     8,

	gemmKernelStrided:    gemmKernel12x32StridedAVX512,
	gemmKernelStridedSet: gemmKernel12x32StridedSetAVX512,

	dot:         dotAVX512,
	dot4x2:      dot4x2AVX2,
	strip4x16:   strip4x16AVX2,
	strip2x32:   strip2x32AVX2,
	max:         maxAVX2,
	dot4:        dot4AVX2, // AVX-512F CPUs have AVX2+FMA; a 512-bit version would need 16-float tails
	axpy:        axpyAVX512,
	scal:        scalAVX512,
	softmaxGrad: softmaxGradAVX2, // AVX-512F CPUs have AVX2
	expSum:      expSumAVX512,
	adamw:       adamwAVX2, // AVX-512F CPUs have AVX2; the step is bound by sqrt and division

	rowKernels: avx2Rows, // AVX-512F CPUs have AVX2
}

// avx2Rows are the AVX2 row loops, which both assembly sets use.
var avx2Rows = rowKernels{
	sigmoidFinish:  sigmoidFinishAVX2,
	swiGLUFinish:   swiGLUFinishAVX2,
	swiGLUGradGate: swiGLUGradGateAVX2,
	swiGLUGradUp:   swiGLUGradUpAVX2,

	rmsScale:        rmsScaleAVX2,
	rmsGrad:         rmsGradAVX2,
	rmsWeightGrad:   rmsWeightGradAVX2,
	rowSquareSums:   rowSquareSumsAVX2,
	rowWeightedDots: rowWeightedDotsAVX2,

	ropeRow: ropeRowAVX2,
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
