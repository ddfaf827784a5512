package tensor

import "sync"

// gemmParallelMin is the work, in multiply-adds (m*n*k), below which Gemm stays on the calling
// goroutine: starting and joining goroutines costs a few microseconds, about what 2^20
// multiply-adds take on one core.
const gemmParallelMin = 1 << 20

// gemmBlocked computes C = alpha*op(A)*op(B) + beta*C (the Gemm contract) with the packed,
// cache-blocked algorithm of Goto and van de Geijn around the micro-kernel of ks. Large problems
// are split into bands of C, one per worker (up to Workers()): bands of rows when C is at least
// as tall as it is wide, bands of columns otherwise, so skinny products such as (16, 512) x
// (512, 32000) still use every core. Each band is an independent sub-problem with its own
// packing buffers.
func gemmBlocked(ks *kernels, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	w := workers
	if m*n*k < gemmParallelMin {
		w = 1
	}
	byRows := m >= n
	// Bands are whole register tiles, so only the last band has edge tiles.
	unit, size := ks.nr, n
	if byRows {
		unit, size = ks.mr, m
	}
	w = min(w, (size+unit-1)/unit)
	if w <= 1 {
		gemmSerial(ks, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	band := ((size+w-1)/w + unit - 1) / unit * unit
	var wg sync.WaitGroup
	for lo := 0; lo < size; lo += band {
		hi := min(lo+band, size)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if byRows {
				// Rows lo:hi of op(A) and C.
				aoff := lo * lda
				if transA {
					aoff = lo
				}
				gemmSerial(ks, transA, transB, hi-lo, n, k, alpha, a[aoff:], lda, b, ldb, beta, c[lo*ldc:], ldc)
			} else {
				// Columns lo:hi of op(B) and C.
				boff := lo
				if transB {
					boff = lo * ldb
				}
				gemmSerial(ks, transA, transB, m, hi-lo, k, alpha, a, lda, b[boff:], ldb, beta, c[lo:], ldc)
			}
		}()
	}
	wg.Wait()
}

// gemmBuffers holds one goroutine's packing buffers, reused through gemmBufferPool.
type gemmBuffers struct {
	a    []float32 // (mc, kc) packed block of op(A)
	b    []float32 // (kc, nc) packed block of op(B)
	tile []float32 // (mr, nr) scratch tile for edge tiles
}

var gemmBufferPool = sync.Pool{New: func() any { return new(gemmBuffers) }}

// grow returns s resized to n elements, reallocating only when its capacity is short.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// gemmSerial is gemmBlocked on the calling goroutine. Loop order and block sizes follow BLIS:
// jc over (kc, nc) blocks of op(B), packed once and kept in L3; pc over the depth; ic over
// (mc, kc) blocks of op(A) kept in L2; then the macro-kernel sweeps (kc, nr) micro-panels of B,
// each held in L1 while every micro-panel of the A block passes by.
func gemmSerial(ks *kernels, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	scaleRows(beta, c, m, n, ldc)
	if k == 0 {
		return
	}
	mr, nr := ks.mr, ks.nr
	// Split k into equal blocks no deeper than kc, so a depth of kc+1 is not one full block and
	// one of depth 1.
	kBlocks := (k + ks.kc - 1) / ks.kc
	kc := (k + kBlocks - 1) / kBlocks
	mc := min(ks.mc, (m+mr-1)/mr*mr)
	nc := min(ks.nc, (n+nr-1)/nr*nr)

	buf := gemmBufferPool.Get().(*gemmBuffers)
	defer gemmBufferPool.Put(buf)
	buf.a = grow(buf.a, mc*kc)
	buf.b = grow(buf.b, kc*nc)
	buf.tile = grow(buf.tile, mr*nr)

	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			packB(buf.b, b, ldb, transB, pc, kb, jc, nb, nr)
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				packA(buf.a, a, lda, transA, ic, mb, pc, kb, alpha, mr)
				macroKernel(ks, mb, nb, kb, buf.a, buf.b, c[ic*ldc+jc:], ldc, buf.tile)
			}
		}
	}
}

// macroKernel adds packed A block (mb, kb) times packed B block (kb, nb) to C(mb, nb), one
// register tile at a time. Full tiles are updated in place; edge tiles are computed whole into
// the zeroed scratch tile and only their valid part is added to C, so nothing outside C's
// (mb, nb) region is touched.
//
//	ap: (ceil(mb/mr), kb, mr), bp: (ceil(nb/nr), kb, nr), c: (mb, nb) at stride ldc, tile: (mr, nr)
func macroKernel(ks *kernels, mb, nb, kb int, ap, bp, c []float32, ldc int, tile []float32) {
	mr, nr := ks.mr, ks.nr
	for jr := 0; jr < nb; jr += nr {
		cols := min(nr, nb-jr)
		bpanel := bp[jr*kb : jr*kb+nr*kb]
		for ir := 0; ir < mb; ir += mr {
			rows := min(mr, mb-ir)
			apanel := ap[ir*kb : ir*kb+mr*kb]
			if rows == mr && cols == nr {
				ks.gemmKernel(kb, apanel, bpanel, c[ir*ldc+jr:], ldc)
				continue
			}
			clear(tile)
			ks.gemmKernel(kb, apanel, bpanel, tile, nr)
			for i := 0; i < rows; i++ {
				crow := c[(ir+i)*ldc+jr:][:cols]
				for j, v := range tile[i*nr : i*nr+cols] {
					crow[j] += v
				}
			}
		}
	}
}

// scaleRows sets C(m, n) at stride ldc to beta*C; with beta == 0 it writes zeros, ignoring the
// old contents (even NaN), as BLAS does.
func scaleRows(beta float32, c []float32, m, n, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
		} else {
			for j := range row {
				row[j] *= beta
			}
		}
	}
}
