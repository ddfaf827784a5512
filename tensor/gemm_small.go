package tensor

// gemmSmallRowsChunk is the width, in columns of C, of the strip gemmSmallRows updates with
// axpys before moving on: m rows of it (8 KiB each) stay in L1 while k rows of B stream past.
const gemmSmallRowsChunk = 2048

// gemmSmallRowsParallelMin is the work, in multiply-adds, one worker of gemmSmallRows takes at
// least: about 6 us at the 45 GFLOP/s of dot4x2, several times what starting a goroutine costs.
const gemmSmallRowsParallelMin = 1 << 18

// gemmSmallRowsAlign is the multiple of columns gemmSmallRows gives each worker: the pairs and
// quads of B rows, the 16-column strips and the vector blocks and tails of its kernels then fall
// on the same columns however many workers there are, so every element of C is computed the
// same way and the results do not depend on the number of workers (TestGemmWorkers).
const gemmSmallRowsAlign = 16

// parallelCols is Parallel over the n columns of C in multiples of gemmSmallRowsAlign.
func parallelCols(n, minCols int, f func(j0, j1 int)) {
	units := (n + gemmSmallRowsAlign - 1) / gemmSmallRowsAlign
	Parallel(units, max(1, minCols/gemmSmallRowsAlign), func(u0, u1 int) {
		f(u0*gemmSmallRowsAlign, min(u1*gemmSmallRowsAlign, n))
	})
}

// gemmSmallRows computes Gemm for a C of few rows (m below the micro-kernel's mr, as in a
// decoding step, where the rows are the batch) from the vector primitives, without packing op(B):
// with so few rows each packed B panel would feed a single, mostly empty register tile, so
// packing would cost as much as the product. Columns of C are split across workers
// (parallelCols).
//
//   - transB: C(i, j) = alpha*Dot(op(A) row i, stored B row j) + beta*C(i, j); each row of B is
//     read once and used for all m rows while it sits in L1, two rows of B against four rows of
//     A at a time (dot4x2), or with two or three rows of A four rows of B against two rows of
//     A (dot4x2 with the roles swapped), then single rows of B (dot4).
//   - otherwise, where the kernel set has strip4x16: 16 columns of C at a time for four rows of
//     op(A), each sum over k held in registers and B read straight from its rows (the last
//     n%16 columns with masked loads); kernel sets without it use axpys, C row i +=
//     alpha*A(i, p) * B row p for every p (skipping zero coefficients as gemmGeneric does),
//     strip by strip of gemmSmallRowsChunk columns.
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
	// Each worker gets at least gemmSmallRowsParallelMin multiply-adds: a decoding step's
	// (16, 256) x (256, 256) projection is worth splitting across two cores.
	minCols := max(16, gemmSmallRowsParallelMin/(m*k))
	if transB {
		parallelCols(n, minCols, func(j0, j1 int) {
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
			// Two or three rows of A (a decoding step's attention over one head group): four
			// rows of B against pairs of A rows, the roles of dot4x2 swapped.
			for ; j+4 <= j1 && m >= 2 && m < 4 && ks.dot4x2 != nil; j += 4 {
				bquad := b[j*ldb:]
				ks.dot4x2(bquad, ldb, arows, ald, k, &dots8) // dots8[c*4+r] = B row j+r . A row c
				for r := range 4 {
					store(0, j+r, dots8[r])
					store(1, j+r, dots8[4+r])
				}
				if m == 3 {
					ks.dot4(bquad, ldb, arows[2*ald:][:k], &dots) // dots[r] = B row j+r . A row 2
					for r := range 4 {
						store(2, j+r, dots[r])
					}
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
	parallelCols(n, minCols, func(j0, j1 int) {
		if ks.strip4x16 != nil {
			// Strips of 16 columns, four rows of op(A) at a time (the last row repeated when m
			// is not a multiple of 4), summed over all of k in registers: B is read once per
			// four rows and C written once.
			var rows [4][]float32
			var out [64]float32 // (4, 16)
			for i0 := 0; i0 < m; i0 += 4 {
				for r := range rows {
					rows[r] = arows[min(i0+r, m-1)*ald:][:k]
				}
				for j := j0; j < j1; j += 16 {
					cols := min(16, j1-j)
					ks.strip4x16(k, &rows, b[j:], ldb, cols, &out)
					for r := range min(4, m-i0) {
						crow, o := c[(i0+r)*ldc+j:][:cols], out[r*16:r*16+cols]
						if beta == 0 {
							for jj, v := range o {
								crow[jj] = alpha * v
							}
						} else {
							for jj, v := range o {
								crow[jj] = beta*crow[jj] + alpha*v
							}
						}
					}
				}
			}
			return
		}
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
