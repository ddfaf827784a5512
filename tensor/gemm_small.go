package tensor

// gemmSmallRowsChunk is the width, in columns of C, of the strip gemmSmallRows updates with
// axpys before moving on: m rows of it (8 KiB each) stay in L1 while k rows of B stream past.
const gemmSmallRowsChunk = 2048

// gemmSmallRows computes Gemm for a C of few rows (m below the micro-kernel's mr, as in a
// decoding step, where the rows are the batch) from the vector primitives, without packing op(B):
// with so few rows each packed B panel would feed a single, mostly empty register tile, so
// packing would cost as much as the product. Columns of C are split across workers.
//
//   - transB: C(i, j) = alpha*Dot(op(A) row i, stored B row j) + beta*C(i, j); each row of B is
//     read once and used for all m rows while it sits in L1, two rows of B against four rows of
//     A at a time (dot4x2), then single rows of B (dot4).
//   - otherwise: C row i += alpha*A(i, p) * B row p for every p (an Axpy per term, skipping
//     zero coefficients as gemmGeneric does), strip by strip of gemmSmallRowsChunk columns.
//
// op(A)'s rows are gathered into a contiguous (m, k) buffer when transA.
func gemmSmallRows(ks *kernels, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleRows(beta, c, m, n, ldc)
		return
	}
	// arows: (m, k), row i of op(A) at arows[i*ald:].
	arows, ald := a, lda
	if transA {
		buf := gemmBufferPool.Get().(*gemmBuffers)
		defer gemmBufferPool.Put(buf)
		buf.a = grow(buf.a, m*k)
		for p := 0; p < k; p++ {
			for i, v := range a[p*lda:][:m] {
				buf.a[i*k+p] = v
			}
		}
		arows, ald = buf.a, k
	}
	minCols := max(16, gemmParallelMin/(m*k))
	if transB {
		Parallel(n, minCols, func(j0, j1 int) {
			store := func(i, j int, dot float32) {
				cij := &c[i*ldc+j]
				if beta == 0 {
					*cij = alpha * dot
				} else {
					*cij = beta*(*cij) + alpha*dot
				}
			}
			var dots [4]float32
			var dots8 [8]float32
			j := j0
			// Two rows of B at a time against four rows of A (dot4x2): each loaded row feeds
			// two or four products.
			for ; j+2 <= j1 && m >= 4 && ks.dot4x2 != nil; j += 2 {
				bpair := b[j*ldb:]
				i := 0
				for ; i+4 <= m; i += 4 {
					ks.dot4x2(arows[i*ald:], ald, bpair, ldb, k, &dots8)
					for r := range 4 {
						store(i+r, j, dots8[r])
						store(i+r, j+1, dots8[4+r])
					}
				}
				for ; i < m; i++ {
					store(i, j, ks.dot(arows[i*ald:][:k], bpair[:k]))
					store(i, j+1, ks.dot(arows[i*ald:][:k], bpair[ldb:][:k]))
				}
			}
			for ; j < j1; j++ {
				brow := b[j*ldb:][:k]
				for i := 0; i < m; i += 4 {
					if m-i >= 4 {
						ks.dot4(arows[i*ald:], ald, brow, &dots)
					} else {
						for r := range m - i {
							dots[r] = ks.dot(arows[(i+r)*ald:][:k], brow)
						}
					}
					for r := range min(4, m-i) {
						store(i+r, j, dots[r])
					}
				}
			}
		})
		return
	}
	Parallel(n, minCols, func(j0, j1 int) {
		scaleRows(beta, c[j0:], m, j1-j0, ldc)
		for s0 := j0; s0 < j1; s0 += gemmSmallRowsChunk {
			s1 := min(s0+gemmSmallRowsChunk, j1)
			for p := 0; p < k; p++ {
				brow := b[p*ldb+s0 : p*ldb+s1]
				for i := 0; i < m; i++ {
					if coef := alpha * arows[i*ald+p]; coef != 0 {
						ks.axpy(coef, brow, c[i*ldc+s0:i*ldc+s1])
					}
				}
			}
		}
	})
}
