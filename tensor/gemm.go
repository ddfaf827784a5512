package tensor

import (
	"fmt"

	"agentr1/tensor/ref"
)

// Gemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices, where op(X) is X or,
// when the matching trans flag is set, X transposed (the BLAS sgemm contract, row-major).
//
//	op(A): (m, k), stored as A (m, k) with row stride lda, or A (k, m) when transA
//	op(B): (k, n), stored as B (k, n) with row stride ldb, or B (n, k) when transB
//	C:     (m, n) with row stride ldc
//
// With beta == 0, C is overwritten and its previous contents (even NaN) are ignored; with
// alpha == 0, A and B are not read and C becomes beta*C (both as in the reference BLAS). Elements
// of C outside its (m, n) region (the slack between n and ldc) are never touched.
//
// The work runs on the kernel set KernelName reports, split across up to Workers() goroutines
// when it is large: packed and cache-blocked around the register-tile micro-kernel (see
// gemmBlocked), or, for a C of fewer rows than a tile, as dot products or axpys straight from
// op(B) (see gemmSmallRows and useSmallRows). For finite inputs the result equals gemmGeneric's up to float32
// rounding, the order of each k-sum depending on the kernel.
// It panics if a dimension is negative, a stride is smaller than its row, or a slice is too short
// for its dimensions and stride.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if active.ref {
		ref.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if alpha == 0 {
		scaleRows(beta, c, m, n, ldc)
		return
	}
	if useSmallRows(active, transB, m) {
		gemmSmallRows(active, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemmBlocked(active, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// useSmallRows reports whether Gemm should use gemmSmallRows rather than gemmBlocked for a C of
// m rows. Below one register tile (m < mr) packing cannot pay off. With transB the dot-product
// path (four rows of A per pass over a row of B) stays ahead for longer: measured in CPU time
// with avx2 (mr = 6) on (m, 512) x (512, n)^T for n = 1536 and 32000, it is 1.2-2.5x faster up
// to m = 12, even at m = 16, and 1.3-1.6x slower from m = 24.
func useSmallRows(ks *kernels, transB bool, m int) bool {
	return m < ks.mr || (transB && m < 3*ks.mr)
}

func checkGemm(transA, transB bool, m, n, k, na, lda, nb, ldb, nc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("tensor.Gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	need := func(name string, rows, cols, ld, have int) {
		if rows == 0 || cols == 0 {
			return
		}
		if ld < cols {
			panic(fmt.Sprintf("tensor.Gemm: ld%s=%d < %d columns", name, ld, cols))
		}
		if n := (rows-1)*ld + cols; have < n {
			panic(fmt.Sprintf("tensor.Gemm: %s has %d elements, (%d x %d, ld %d) needs %d", name, have, rows, cols, ld, n))
		}
	}
	need("a", ar, ac, lda, na)
	need("b", br, bc, ldb, nb)
	need("c", m, n, ldc, nc)
}

// gemmGeneric is the plain-Go reference: the definition every faster path is tested against.
func gemmGeneric(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if alpha == 0 {
		k = 0 // C = beta*C without reading A or B
	}
	for i := 0; i < m; i++ {
		crow := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(crow)
		} else if beta != 1 {
			for j := range crow {
				crow[j] *= beta
			}
		}
		for p := 0; p < k; p++ {
			var aip float32
			if transA {
				aip = a[p*lda+i]
			} else {
				aip = a[i*lda+p]
			}
			aip *= alpha
			if aip == 0 {
				continue
			}
			if transB {
				for j := range crow {
					crow[j] += aip * b[j*ldb+p]
				}
			} else {
				brow := b[p*ldb : p*ldb+n]
				for j := range crow {
					crow[j] += aip * brow[j]
				}
			}
		}
	}
}
