package tensor

import (
	"sync"
	"sync/atomic"
)

// gemmParallelMin is the work, in multiply-adds (m*n*k), below which Gemm stays on the calling
// goroutine: starting and joining goroutines costs a few microseconds, about what 2^20
// multiply-adds take on one core.
const gemmParallelMin = 1 << 20

// gemmTasksPerWorker is how many tasks each worker gets per block of B, so that a worker slowed
// down (by another process on its core, say) leaves its share to the others, and the wait at the
// end of each phase is short.
const gemmTasksPerWorker = 8

// gemmMinStrip is the narrowest strip of B columns a task covers: a task packs its A block
// (about 0.5 ns per element) and then does strip multiply-adds per element of it (about 0.02 ns
// each), so 256 columns keep packing near a tenth of the work.
const gemmMinStrip = 256

// gemmInPlaceMaxN is the widest product (columns of C) for which gemmBlocked reads a
// transposed A in place rather than packing it. Packing costs about 0.5 ns per element of A
// and pays for itself over the n/nr register tiles that reuse each packed panel; in place,
// every one of those tiles reads A at the stored row stride instead, from L2 rather than L1.
// Measured (BenchmarkGemmTransA, avx2, 2 workers): in place is 1.4-1.6x faster for attention's
// dV (n = 32) and 1.3-1.5x for a (384 x 4000)^T (4000 x 128) weight gradient, level at n = 128
// with a 768-float stride, and from n = 256 between 10% faster and 20% slower (the 4096-word
// head's gradient, whose 16 KiB row stride maps a panel onto few cache sets).
const gemmInPlaceMaxN = 128

// gemmBlocked computes C = alpha*op(A)*op(B) + beta*C (the Gemm contract) with the packed,
// cache-blocked algorithm of Goto and van de Geijn around the micro-kernel of ks, with the loop
// order and block sizes of BLIS (Van Zee & van de Geijn, 2015):
//
//	for jc over (k, nc) column blocks of op(B)      // the B block lives in L3
//	  for pc over kc-deep slices                    // one phase: pack B (kc, nc), shared
//	    for ic over (mc, kc) blocks of op(A)        // the A block lives in L2
//	      for jr over nr-wide micro-panels of B     // one micro-panel lives in L1
//	        for ir over mr-high micro-panels of A
//	          micro-kernel: C(mr, nr) += A(mr, kc) * B(kc, nr)
//
// Each phase runs on up to Workers() goroutines: they take B packing tasks (runs of micro-panels)
// from a counter, wait until the whole B block is packed, take multiply tasks (one A block,
// packed by the worker, against a strip of the B block's columns) from a second counter, and
// before packing the next phase into the same buffer wait until every multiply task of this one
// has finished (see phaseState). Tasks cover disjoint parts of C, so results do not depend on
// the number of workers or on who ran what. beta is applied by the task that first touches each
// part of C (pc = 0).
func gemmBlocked(ks *kernels, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleRows(beta, c, m, n, ldc)
		return
	}
	mr, nr := ks.mr, ks.nr
	// Split k into equal slices no deeper than kc, so a depth of kc+1 is not one full slice and
	// one of depth 1.
	kSlices := (k + ks.kc - 1) / ks.kc
	kc := (k + kSlices - 1) / kSlices
	nc := min(ks.nc, (n+nr-1)/nr*nr)

	w := Available()
	if m*n*k < gemmParallelMin {
		w = 1
	}
	// Tasks of one phase: A blocks against strips of the B block. With several workers the A
	// blocks shrink (down to one register tile) until there are gemmTasksPerWorker tasks per
	// worker; if there are still too few rows, the B block's columns are cut into strips too, no
	// narrower than gemmMinStrip, since each strip packs its A block again.
	mc := min(ks.mc, (m+mr-1)/mr*mr)
	strip := nc
	if w > 1 {
		want := w * gemmTasksPerWorker
		mc = min(mc, ((m+want-1)/want+mr-1)/mr*mr)
		if aBlocks := (m + mc - 1) / mc; aBlocks < want {
			strips := min((want+aBlocks-1)/aBlocks, max(1, nc/gemmMinStrip))
			strip = ((nc+strips-1)/strips + nr - 1) / nr * nr
		}
	}
	aBlocks := (m + mc - 1) / mc
	w = min(w, aBlocks*((nc+strip-1)/strip))
	// A transposed A is read in place by the strided micro-kernel when there is one and the
	// product is narrow (gemmInPlaceMaxN): the stored rows are op(A)'s columns, so a panel's
	// floats for one step lie side by side already, and packing would only move them.
	inPlaceA := transA && alpha == 1 && n <= gemmInPlaceMaxN && ks.gemmKernelStrided != nil

	shared := gemmBufferPool.Get().(*gemmBuffers)
	defer gemmBufferPool.Put(shared)
	shared.b = grow(shared.b, kc*nc)
	packedB := shared.b

	phases := ((n + nc - 1) / nc) * kSlices
	st := &phaseState{
		nextPack: make([]atomic.Int64, phases),
		nextTask: make([]atomic.Int64, phases),
		packed:   make([]int, phases),
		computed: make([]int, phases),
	}
	st.cond.L = &st.mu

	worker := func(id int) {
		buf := shared
		if id > 0 {
			buf = gemmBufferPool.Get().(*gemmBuffers)
			defer gemmBufferPool.Put(buf)
		}
		buf.a = grow(buf.a, mc*kc)
		buf.tile = grow(buf.tile, mr*nr)
		phase, prevTasks := 0, 0
		for jc := 0; jc < n; jc += nc {
			nb := min(nc, n-jc)
			panels := (nb + nr - 1) / nr
			packTasks := min(panels, w*gemmTasksPerWorker)
			tasks := aBlocks * ((nb + strip - 1) / strip)
			for pc := 0; pc < k; pc += kc {
				kb := min(kc, k-pc)
				if phase > 0 {
					// The previous phase's tasks still read the B buffer.
					st.wait(&st.computed[phase-1], prevTasks)
				}
				for {
					t := int(st.nextPack[phase].Add(1) - 1)
					if t >= packTasks {
						break
					}
					lo, hi := t*panels/packTasks*nr, min((t+1)*panels/packTasks*nr, nb)
					packB(packedB[lo*kb:], b, ldb, transB, pc, kb, jc+lo, hi-lo, nr)
					st.done(&st.packed[phase], packTasks)
				}
				st.wait(&st.packed[phase], packTasks)
				for {
					t := int(st.nextTask[phase].Add(1) - 1)
					if t >= tasks {
						break
					}
					ic := t % aBlocks * mc
					j0 := t / aBlocks * strip
					mb, sb := min(mc, m-ic), min(strip, nb-j0)
					cblk := c[ic*ldc+jc+j0:]
					overwrite := pc == 0 && beta == 0 && ks.gemmKernelSet != nil &&
						(!inPlaceA || ks.gemmKernelStridedSet != nil)
					if pc == 0 && !overwrite {
						scaleRows(beta, cblk, mb, sb, ldc)
					}
					var ab aBlock
					if inPlaceA {
						// Full panels where they lie; only a last partial panel is packed.
						ab = aBlock{data: a[pc*lda+ic:], step: lda, inPlace: true}
						if full := mb / mr * mr; full < mb {
							packA(buf.a, a, lda, transA, ic+full, mb-full, pc, kb, alpha, mr)
							ab.edge = buf.a[:mr*kb]
						}
					} else {
						packA(buf.a, a, lda, transA, ic, mb, pc, kb, alpha, mr)
						ab = packedBlock(buf.a, mr)
					}
					macroKernel(ks, mb, sb, kb, ab, packedB[j0*kb:], cblk, ldc, buf.tile, overwrite)
					st.done(&st.computed[phase], tasks)
				}
				phase, prevTasks = phase+1, tasks
			}
		}
	}

	if w == 1 {
		worker(0)
		return
	}
	var wg sync.WaitGroup
	for id := 1; id < w; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(id)
		}()
	}
	worker(0)
	wg.Wait()
}

// phaseState coordinates the workers of one gemmBlocked call without barriers: the packing of
// each phase's B block and its multiply tasks are both handed out by counters, so a worker that
// the OS keeps off the CPU for a while (the cores are shared) holds up nobody but the task it
// took, and when it comes back finds the phases it missed already done.
type phaseState struct {
	nextPack []atomic.Int64 // per phase: next B packing task to hand out
	nextTask []atomic.Int64 // per phase: next multiply task to hand out

	mu       sync.Mutex
	cond     sync.Cond // broadcast when a phase's packing or multiplying completes
	packed   []int     // per phase: packing tasks finished
	computed []int     // per phase: multiply tasks finished
}

// done counts one finished task in *count (packed or computed of some phase), waking the
// waiters when it reaches total.
func (s *phaseState) done(count *int, total int) {
	s.mu.Lock()
	*count++
	if *count == total {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// wait blocks until *count reaches total.
func (s *phaseState) wait(count *int, total int) {
	s.mu.Lock()
	for *count < total {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// gemmBuffers holds packing buffers, reused through gemmBufferPool.
type gemmBuffers struct {
	a    []float32 // (mc, kc) packed block of op(A), one per worker
	b    []float32 // (kc, nc) packed block of op(B), shared by the workers of one Gemm
	tile []float32 // (mr, nr) scratch tile for edge tiles, one per worker
}

var gemmBufferPool = sync.Pool{New: func() any { return new(gemmBuffers) }}

// grow returns s resized to n elements, reallocating only when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// aBlock is where macroKernel finds the micro-panels of an (mb, kb) block of op(A): packed
// (the usual case) or, for a transposed A with the kernel set's strided micro-kernel, in place
// in the stored A, whose rows are the columns of op(A).
//
//	packed:   data (ceil(mb/mr), kb, mr), step mr, panel i at data[i*mr*kb:]
//	in place: data = stored A from element (p0, i0), step lda, panel i at data[i*mr:]; a last
//	          panel of fewer than mr rows is packed in edge (kb, mr)
type aBlock struct {
	data    []float32
	step    int       // floats between element p and p+1 of one row of op(A)
	inPlace bool      // data is the stored A (step lda), not packed panels (step mr)
	edge    []float32 // in place only: the packed last partial panel (nil if mr divides mb)
}

// packedBlock is the aBlock of a packed A block.
func packedBlock(ap []float32, mr int) aBlock { return aBlock{data: ap, step: mr} }

// macroKernel adds the A block (mb, kb) of ab times packed B block (kb, nb) to C(mb, nb), or
// with overwrite (which needs ks.gemmKernelSet) stores the product into C without reading it,
// one register tile at a time. Full tiles are updated in place, and so are full-width tiles of
// partRows rows where the kernel set has gemmKernelPart; other edge tiles are computed whole
// into the zeroed scratch tile and only their valid part is added to (or stored into) C, so
// nothing outside C's (mb, nb) region is touched. Full panels of an in-place A go to the strided
// micro-kernels; its partial last panel, packed in ab.edge, to the packed ones.
//
//	bp: (ceil(nb/nr), kb, nr), c: (mb, nb) at stride ldc, tile: (mr, nr)
func macroKernel(ks *kernels, mb, nb, kb int, ab aBlock, bp, c []float32, ldc int, tile []float32, overwrite bool) {
	mr, nr := ks.mr, ks.nr
	for jr := 0; jr < nb; jr += nr {
		cols := min(nr, nb-jr)
		bpanel := bp[jr*kb : jr*kb+nr*kb]
		for ir := 0; ir < mb; ir += mr {
			rows := min(mr, mb-ir)
			if ab.inPlace && rows == mr {
				apanel := ab.data[ir : ir+(kb-1)*ab.step+mr]
				switch {
				case cols < nr:
					clear(tile)
					ks.gemmKernelStrided(kb, apanel, ab.step, bpanel, tile, nr)
					addTile(c[ir*ldc+jr:], ldc, tile, nr, rows, cols, overwrite)
				case overwrite:
					ks.gemmKernelStridedSet(kb, apanel, ab.step, bpanel, c[ir*ldc+jr:], ldc)
				default:
					ks.gemmKernelStrided(kb, apanel, ab.step, bpanel, c[ir*ldc+jr:], ldc)
				}
				continue
			}
			var apanel []float32
			if ab.inPlace {
				apanel = ab.edge[:mr*kb]
			} else {
				apanel = ab.data[ir*kb : ir*kb+mr*kb]
			}
			if rows == mr && cols == nr {
				if overwrite {
					ks.gemmKernelSet(kb, apanel, bpanel, c[ir*ldc+jr:], ldc)
				} else {
					ks.gemmKernel(kb, apanel, bpanel, c[ir*ldc+jr:], ldc)
				}
				continue
			}
			if rows == ks.partRows && cols == nr && ks.gemmKernelPart != nil {
				if overwrite {
					ks.gemmKernelPartSet(kb, apanel, bpanel, c[ir*ldc+jr:], ldc)
				} else {
					ks.gemmKernelPart(kb, apanel, bpanel, c[ir*ldc+jr:], ldc)
				}
				continue
			}
			clear(tile)
			ks.gemmKernel(kb, apanel, bpanel, tile, nr)
			addTile(c[ir*ldc+jr:], ldc, tile, nr, rows, cols, overwrite)
		}
	}
}

// addTile adds (or with overwrite, copies) the first rows x cols of the scratch tile (row
// stride nr) to C at stride ldc.
func addTile(c []float32, ldc int, tile []float32, nr, rows, cols int, overwrite bool) {
	for i := 0; i < rows; i++ {
		crow := c[i*ldc:][:cols]
		if overwrite {
			copy(crow, tile[i*nr:i*nr+cols])
			continue
		}
		for j, v := range tile[i*nr : i*nr+cols] {
			crow[j] += v
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
