//go:build amd64 && !purego

package tensor

// gemmKernel6x16AVX2 is the AVX2+FMA sgemm micro-kernel: C(6, 16) += Apanel(6, k) * Bpanel(k, 16)
// with the packed layouts of the kernels contract, the tile held in 12 YMM accumulators. It is
// equivalent to
//
//	var acc [6][16]float32
//	for p := 0; p < k; p++ {
//		for i := 0; i < 6; i++ {
//			for j := 0; j < 16; j++ {
//				acc[i][j] += a[p*6+i] * b[p*16+j] // one fused multiply-add
//			}
//		}
//	}
//	for i := 0; i < 6; i++ {
//		for j := 0; j < 16; j++ {
//			c[i*ldc+j] += acc[i][j]
//		}
//	}
//
// The caller guarantees len(a) >= 6*k, len(b) >= 16*k and that c holds 6 rows of 16 at stride
// ldc: the assembly does not check.
//
//go:noescape
func gemmKernel6x16AVX2(k int, a, b, c []float32, ldc int)

// gemmKernel12x32AVX512 is the AVX-512F sgemm micro-kernel: C(12, 32) += Apanel(12, k) *
// Bpanel(k, 32) with the packed layouts of the kernels contract, the tile held in 24 ZMM
// accumulators. It is equivalent to
//
//	var acc [12][32]float32
//	for p := 0; p < k; p++ {
//		for i := 0; i < 12; i++ {
//			for j := 0; j < 32; j++ {
//				acc[i][j] += a[p*12+i] * b[p*32+j] // one fused multiply-add
//			}
//		}
//	}
//	for i := 0; i < 12; i++ {
//		for j := 0; j < 32; j++ {
//			c[i*ldc+j] += acc[i][j]
//		}
//	}
//
// The caller guarantees len(a) >= 12*k, len(b) >= 32*k and that c holds 12 rows of 32 at stride
// ldc: the assembly does not check.
//
//go:noescape
func gemmKernel12x32AVX512(k int, a, b, c []float32, ldc int)

// gemmKernel6x16SetAVX2 is gemmKernel6x16AVX2 that overwrites the tile instead of adding to it:
// C(6, 16) = Apanel(6, k) * Bpanel(k, 16), the same loop as gemmKernel6x16AVX2's ending in
//
//	for i := 0; i < 6; i++ {
//		for j := 0; j < 16; j++ {
//			c[i*ldc+j] = acc[i][j]
//		}
//	}
//
// so a product with beta = 0 neither clears C first nor reads it.
//
//go:noescape
func gemmKernel6x16SetAVX2(k int, a, b, c []float32, ldc int)

// gemmKernel4of6x16AVX2 is gemmKernel6x16AVX2 for the first four rows of the six-row A panel
// only, the tile's last row panel when a product has 4 rows left (a decoding step's 16 rows:
// 6 + 6 + 4): C(4, 16) += Apanel(rows 0-3, k) * Bpanel(k, 16). It is equivalent to
//
//	var acc [4][16]float32
//	for p := 0; p < k; p++ {
//		for i := 0; i < 4; i++ {
//			for j := 0; j < 16; j++ {
//				acc[i][j] += a[p*6+i] * b[p*16+j] // one fused multiply-add
//			}
//		}
//	}
//	for i := 0; i < 4; i++ {
//		for j := 0; j < 16; j++ {
//			c[i*ldc+j] += acc[i][j]
//		}
//	}
//
// The caller guarantees len(a) >= 6*k, len(b) >= 16*k and that c holds 4 rows of 16 at stride
// ldc: the assembly does not check.
//
//go:noescape
func gemmKernel4of6x16AVX2(k int, a, b, c []float32, ldc int)

// gemmKernel4of6x16SetAVX2 is gemmKernel4of6x16AVX2 that overwrites the four rows of C with the
// product instead of adding to them.
//
//go:noescape
func gemmKernel4of6x16SetAVX2(k int, a, b, c []float32, ldc int)

// gemmKernel6x16StridedAVX2 is gemmKernel6x16AVX2 reading the A micro-panel in place at a step
// of lda floats instead of packed at a step of 6: C(6, 16) += A(6, k) * Bpanel(k, 16) with
// A(i, p) = a[p*lda+i], so a transposed A (the stored rows are the columns of op(A)) needs no
// packing. It is equivalent to gemmKernel6x16AVX2's loop with a[p*6+i] read as a[p*lda+i].
// The caller guarantees len(a) >= (k-1)*lda+6, len(b) >= 16*k and that c holds 6 rows of 16
// at stride ldc: the assembly does not check.
//
//go:noescape
func gemmKernel6x16StridedAVX2(k int, a []float32, lda int, b, c []float32, ldc int)

// gemmKernel6x16StridedSetAVX2 is gemmKernel6x16StridedAVX2 that overwrites the tile with the
// product instead of adding to it.
//
//go:noescape
func gemmKernel6x16StridedSetAVX2(k int, a []float32, lda int, b, c []float32, ldc int)

// gemmKernel12x32SetAVX512 is gemmKernel12x32AVX512 that overwrites the tile instead of adding
// to it: C(12, 32) = Apanel(12, k) * Bpanel(k, 32), C written and never read.
//
//go:noescape
func gemmKernel12x32SetAVX512(k int, a, b, c []float32, ldc int)

// gemmKernel12x32StridedAVX512 is gemmKernel12x32AVX512 reading the A micro-panel in place at a
// step of lda floats instead of packed at a step of 12: C(12, 32) += A(12, k) * Bpanel(k, 32)
// with A(i, p) = a[p*lda+i], so a transposed A needs no packing. The caller guarantees
// len(a) >= (k-1)*lda+12, len(b) >= 32*k and that c holds 12 rows of 32 at stride ldc: the
// assembly does not check.
//
//go:noescape
func gemmKernel12x32StridedAVX512(k int, a []float32, lda int, b, c []float32, ldc int)

// gemmKernel12x32StridedSetAVX512 is gemmKernel12x32StridedAVX512 that overwrites the tile with
// the product instead of adding to it.
//
//go:noescape
func gemmKernel12x32StridedSetAVX512(k int, a []float32, lda int, b, c []float32, ldc int)

// gemmKernel8of12x32AVX512 is gemmKernel12x32AVX512 for the first eight rows of the twelve-row
// A panel only, the tile's last row panel when a product has 8 rows left (a decoding step's
// eight rows per core): C(8, 32) += Apanel(rows 0-7, k) * Bpanel(k, 32), the A step still 12
// floats. It is equivalent to
//
//	var acc [8][32]float32
//	for p := 0; p < k; p++ {
//		for i := 0; i < 8; i++ {
//			for j := 0; j < 32; j++ {
//				acc[i][j] += a[p*12+i] * b[p*32+j] // one fused multiply-add
//			}
//		}
//	}
//	for i := 0; i < 8; i++ {
//		for j := 0; j < 32; j++ {
//			c[i*ldc+j] += acc[i][j]
//		}
//	}
//
// The caller guarantees len(a) >= 12*k, len(b) >= 32*k and that c holds 8 rows of 32 at stride
// ldc: the assembly does not check.
//
//go:noescape
func gemmKernel8of12x32AVX512(k int, a, b, c []float32, ldc int)

// gemmKernel8of12x32SetAVX512 is gemmKernel8of12x32AVX512 that overwrites the eight rows of C
// with the product instead of adding to them.
//
//go:noescape
func gemmKernel8of12x32SetAVX512(k int, a, b, c []float32, ldc int)
