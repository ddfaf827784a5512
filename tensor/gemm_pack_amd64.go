//go:build amd64 && !purego

package tensor

import "github.com/klauspost/cpuid/v2"

// forCPU returns f where the CPU has every one of features, else otherwise (nil, or a
// slower version that needs less): how the packing moves below pick their implementation
// once, at start-up.
func forCPU[F any](f, otherwise F, features ...cpuid.FeatureID) F {
	if cpuid.CPU.Supports(features...) {
		return f
	}
	return otherwise
}

// transpose8x8 is transpose8x8AVX where the CPU has AVX (for the 256-bit shuffles), else nil.
var transpose8x8 = forCPU(transpose8x8AVX, nil, cpuid.AVX)

// transpose8x8AVX moves blocks 8x8 tiles, tile b from src[b*8:] (8 rows srcStride apart) to
// dst[b*8*dstStride:] (8 rows dstStride apart), transposed. It is equivalent to
//
//	for b := 0; b < blocks; b++ {
//		for i := 0; i < 8; i++ {
//			for j := 0; j < 8; j++ {
//				dst[(b*8+j)*dstStride+i] = src[i*srcStride+b*8+j]
//			}
//		}
//	}
//
// It panics if either slice is too short (checked here; the assembly does not check).
func transpose8x8AVX(dst []float32, dstStride int, src []float32, srcStride int, blocks int) {
	if blocks == 0 {
		return
	}
	_ = dst[(blocks*8-1)*dstStride+7]
	_ = src[7*srcStride+blocks*8-1]
	transpose8x8BlocksAVX(dst, dstStride, src, srcStride, blocks)
}

// pack6 is pack6AVX where the CPU has AVX2 (for the lane blend of the store mask), else nil.
var pack6 = forCPU(pack6AVX, nil, cpuid.AVX, cpuid.AVX2)

// pack6AVX writes blocks*8 columns of six rows of src (ld floats apart), scaled, to dst six
// floats per column, the avx2 tile's A micro-panel: it is equivalent to
//
//	for p := 0; p < blocks*8; p++ {
//		for i := 0; i < 6; i++ {
//			dst[p*6+i] = scale * src[i*ld+p]
//		}
//	}
//
// It panics if either slice is too short (checked here; the assembly does not check).
func pack6AVX(dst, src []float32, ld, blocks int, scale float32) {
	if blocks == 0 {
		return
	}
	_ = dst[blocks*48-1]
	_ = src[5*ld+blocks*8-1]
	pack6BlocksAVX(dst, src, ld, blocks, scale)
}

// scatter6 is scatter6AVX where the CPU has AVX, else nil.
var scatter6 = forCPU(scatter6AVX, nil, cpuid.AVX)

// scatter6AVX writes chunks six-float runs of src, scaled, to dst one every dstStride floats:
// a row of a transposed A going to consecutive micro-panels of the avx2 tile. It is
// equivalent to
//
//	for c := 0; c < chunks; c++ {
//		for i := 0; i < 6; i++ {
//			dst[c*dstStride+i] = scale * src[c*6+i]
//		}
//	}
//
// It panics if either slice is too short (checked here; the assembly does not check).
func scatter6AVX(dst []float32, dstStride int, src []float32, chunks int, scale float32) {
	if chunks == 0 {
		return
	}
	_ = dst[(chunks-1)*dstStride+5]
	_ = src[chunks*6-1]
	scatter6BlocksAVX(dst, dstStride, src, chunks, scale)
}

// pack12 is pack12AVX where the CPU has AVX (for the 256-bit shuffles), else nil.
var pack12 = forCPU(pack12AVX, nil, cpuid.AVX)

// pack12AVX writes blocks*8 columns of twelve rows of src (ld floats apart), scaled, to dst
// twelve floats per column, the avx512 tile's A micro-panel: it is equivalent to
//
//	for p := 0; p < blocks*8; p++ {
//		for i := 0; i < 12; i++ {
//			dst[p*12+i] = scale * src[i*ld+p]
//		}
//	}
//
// It panics if either slice is too short (checked here; the assembly does not check).
func pack12AVX(dst, src []float32, ld, blocks int, scale float32) {
	if blocks == 0 {
		return
	}
	_ = dst[blocks*96-1]
	_ = src[11*ld+blocks*8-1]
	pack12BlocksAVX(dst, src, ld, blocks, scale)
}

// scatter12 is scatter12AVX where the CPU has AVX, else nil.
var scatter12 = forCPU(scatter12AVX, nil, cpuid.AVX)

// scatter12AVX writes chunks twelve-float runs of src, scaled, to dst one every dstStride
// floats: a row of a transposed A going to consecutive micro-panels of the avx512 tile. It is
// equivalent to
//
//	for c := 0; c < chunks; c++ {
//		for i := 0; i < 12; i++ {
//			dst[c*dstStride+i] = scale * src[c*12+i]
//		}
//	}
//
// It panics if either slice is too short (checked here; the assembly does not check).
func scatter12AVX(dst []float32, dstStride int, src []float32, chunks int, scale float32) {
	if chunks == 0 {
		return
	}
	_ = dst[(chunks-1)*dstStride+11]
	_ = src[chunks*12-1]
	scatter12BlocksAVX(dst, dstStride, src, chunks, scale)
}

//go:noescape
func pack12BlocksAVX(dst, src []float32, ld, blocks int, scale float32)

//go:noescape
func scatter12BlocksAVX(dst []float32, dstStride int, src []float32, chunks int, scale float32)

//go:noescape
func scatter6BlocksAVX(dst []float32, dstStride int, src []float32, chunks int, scale float32)

//go:noescape
func pack6BlocksAVX(dst, src []float32, ld, blocks int, scale float32)

//go:noescape
func transpose8x8BlocksAVX(dst []float32, dstStride int, src []float32, srcStride int, blocks int)

// copyStrided copies runs runs of width floats (a multiple of 16) from src, one every srcStride
// floats, to dst, one every dstStride floats, with 256-bit AVX moves where the CPU has AVX and
// SSE moves otherwise (baseline amd64, so any kernel set may use it). It is equivalent to
//
//	for r := 0; r < runs; r++ {
//		copy(dst[r*dstStride:r*dstStride+width], src[r*srcStride:r*srcStride+width])
//	}
//
// It panics if either slice is too short (checked here; the assembly does not check).
func copyStrided(dst []float32, dstStride int, src []float32, srcStride int, runs, width int) {
	if runs == 0 || width == 0 {
		return
	}
	_ = dst[(runs-1)*dstStride+width-1]
	_ = src[(runs-1)*srcStride+width-1]
	copyStridedMoves(dst, dstStride, src, srcStride, runs, width)
}

// copyStridedMoves is copyStridedAVX where the CPU has AVX, else copyStridedSSE. Packing the
// avx512 tile's B panels (128-byte rows), the AVX moves are about 1.15x faster (BenchmarkPack,
// op=B/trans=false, six alternating runs each on the AVX-512 machine: 0.233 against 0.204 ns
// per element).
var copyStridedMoves = forCPU(copyStridedAVX, copyStridedSSE, cpuid.AVX)

//go:noescape
func copyStridedSSE(dst []float32, dstStride int, src []float32, srcStride int, runs, width int)

//go:noescape
func copyStridedAVX(dst []float32, dstStride int, src []float32, srcStride int, runs, width int)
