//go:build amd64 && !purego

package tensor

// bf16Kernels are the VDPBF16PS micro-kernels where the CPU has AVX512_BF16, else nil (the
// bfloat16 product then runs gemmBF16Plain).
var bf16Kernels = func() *bf16MicroKernels {
	if !hasBF16Dot {
		return nil
	}
	return &bf16MicroKernels{
		add: gemmKernelBF16x12x32, set: gemmKernelBF16x12x32Set,
		add8: gemmKernelBF16x8of12x32, set8: gemmKernelBF16x8of12x32Set,
	}
}()

// gemmKernelBF16x12x32 is the bfloat16 product's micro-kernel: C(12, 32) += Apanel(12, k
// pairs) * Bpanel(k pairs, 32), a (k, 12, 2) and b (k, 32, 2) packed bfloat16 pairs, the tile
// in 24 ZMM accumulators. It is equivalent to
//
//	var acc [12][32]float32
//	for p := 0; p < k; p++ {
//		for i := 0; i < 12; i++ {
//			ap := uint32(a[(p*12+i)*2+1])<<16 | uint32(a[(p*12+i)*2])
//			for j := 0; j < 32; j++ {
//				bp := uint32(b[(p*32+j)*2+1])<<16 | uint32(b[(p*32+j)*2])
//				acc[i][j] = dotBF16Pair(acc[i][j], ap, bp) // one lane of VDPBF16PS
//			}
//		}
//	}
//	for i := 0; i < 12; i++ {
//		for j := 0; j < 32; j++ {
//			c[i*ldc+j] += acc[i][j]
//		}
//	}
//
// The caller guarantees len(a) >= 24*k, len(b) >= 64*k, that c holds 12 rows of 32 at stride
// ldc and that the CPU has AVX512_BF16: the assembly does not check.
//
//go:noescape
func gemmKernelBF16x12x32(k int, a, b []uint16, c []float32, ldc int)

// gemmKernelBF16x12x32Set is gemmKernelBF16x12x32 that overwrites the tile, c[i*ldc+j] =
// acc[i][j], instead of adding to it.
//
//go:noescape
func gemmKernelBF16x12x32Set(k int, a, b []uint16, c []float32, ldc int)

// gemmKernelBF16x8of12x32 is gemmKernelBF16x12x32 for the first eight rows of the A panel only
// (the A step still 12 pairs): C(8, 32) += Apanel(rows 0-7, k pairs) * Bpanel(k pairs, 32).
//
//go:noescape
func gemmKernelBF16x8of12x32(k int, a, b []uint16, c []float32, ldc int)

// gemmKernelBF16x8of12x32Set is gemmKernelBF16x8of12x32 that overwrites the eight rows of C.
//
//go:noescape
func gemmKernelBF16x8of12x32Set(k int, a, b []uint16, c []float32, ldc int)
