package tensor

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// PackedB is op(B) of Gemm packed once, ahead of time, into the order the micro-kernel reads it,
// for products that use the same B many times: a model's weight matrices during decoding, where
// each step multiplies a few rows of activations by every weight and packing B on every call
// would cost as much as the product. GemmPacked multiplies by it.
//
// The packing is a copy: writing to the B it was packed from does not change the PackedB, and
// a PackedB packed from stale values gives stale products. Pack again after B changes.
// The zero value is empty; Pack fills it. A PackedB is read-only while GemmPacked runs and may
// then be shared by concurrent products.
type PackedB struct {
	ks     *kernels  // the kernel set whose tile and block sizes the layout follows
	k, n   int       // op(B) is (k, n)
	kc     int       // depth of every k slice but possibly the last (gemmBlocked's split)
	panels int       // ceil(n/nr) micro-panels per slice
	data   []float32 // the slice starting at depth pc is (panels, kb, nr) at data[panels*nr*pc:]
	src    []float32 // the B packed, for the few-rows path (read only while not stale)
	transB bool
	ldb    int
}

// Pack packs op(B) (k, n) into p, reusing p's storage when it is large enough:
//
//	op(B): (k, n), stored as b (k, n) with row stride ldb, or b (n, k) when transB
//
// p keeps a reference to b: GemmPacked reads it directly for products of very few rows, so b
// must not change while p is in use without packing again. It panics if a dimension is
// negative, ldb is smaller than a row of b, or b is too short.
func (p *PackedB) Pack(transB bool, k, n int, b []float32, ldb int) {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("tensor.PackedB.Pack: negative dimension k=%d n=%d", k, n))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if br > 0 && bc > 0 {
		if ldb < bc {
			panic(fmt.Sprintf("tensor.PackedB.Pack: ldb=%d < %d columns", ldb, bc))
		}
		if need := (br-1)*ldb + bc; len(b) < need {
			panic(fmt.Sprintf("tensor.PackedB.Pack: b has %d elements, (%d x %d, ld %d) needs %d", len(b), br, bc, ldb, need))
		}
	}
	p.pack(active, transB, k, n, b, ldb)
}

// pack is Pack for the kernel set ks.
func (p *PackedB) pack(ks *kernels, transB bool, k, n int, b []float32, ldb int) {
	nr := ks.nr
	kSlices := max(1, (k+ks.kc-1)/ks.kc)
	p.ks, p.k, p.n = ks, k, n
	p.kc = (k + kSlices - 1) / kSlices
	p.panels = (n + nr - 1) / nr
	p.data = grow(p.data, p.panels*nr*k)
	p.src, p.transB, p.ldb = b, transB, ldb
	if k == 0 || n == 0 {
		return
	}
	// Each slice packs independently; slices are split across workers when B is large.
	Parallel(kSlices, max(1, (1<<16)/max(1, p.kc*n)), func(lo, hi int) {
		for s := lo; s < hi; s++ {
			pc := s * p.kc
			kb := min(p.kc, k-pc)
			packB(p.data[p.panels*nr*pc:], b, ldb, transB, pc, kb, 0, n, nr)
		}
	})
}

// Dims returns the dimensions (k, n) of the packed op(B).
func (p *PackedB) Dims() (k, n int) { return p.k, p.n }

// gemmPackedParallelMin is the work, in multiply-adds, one worker of GemmPacked takes at least:
// about 3 us at the 80 GFLOP/s the micro-kernel reaches, a few times what waking a worker costs.
const gemmPackedParallelMin = 1 << 17

// gemmPackedTasksPerWorker is how many column strips GemmPacked cuts its work into per worker, so
// that a worker the OS keeps off its core leaves its share to the others.
const gemmPackedTasksPerWorker = 4

// GemmPacked computes C = alpha*op(A)*op(B) + beta*C, the Gemm contract, with op(B) packed
// ahead of time in pb:
//
//	op(A): (m, k), stored as A (m, k) with row stride lda, or A (k, m) when transA
//	op(B): (k, n), packed in pb
//	C:     (m, n) with row stride ldc
//
// The loops are gemmBlocked's without the packing of B (Goto & van de Geijn 2008): op(A) is
// packed once, every k slice of it, and the work is cut into column strips of whole
// micro-panels, each strip summing over every slice in order. Each element of C therefore gets
// the same sum, in the same order, as from gemmBlocked on the same kernel set, whatever the
// number of workers. With fewer rows than one register tile, where most of a tile would be
// padding, it runs gemmSmallRows on the B pb was packed from instead, like Gemm.
// It panics if pb is empty (never packed), a dimension is negative, a stride is smaller than its
// row, or a slice is too short.
func GemmPacked(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	if pb.ks == nil {
		panic("tensor.GemmPacked: the PackedB was never packed")
	}
	k, n := pb.k, pb.n
	checkGemm(transA, false, m, n, k, len(a), lda, k*n, n, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scaleRows(beta, c, m, n, ldc)
		return
	}
	ks := pb.ks
	if m < ks.mr {
		gemmSmallRows(ks, transA, pb.transB, m, n, k, alpha, a, lda, pb.src, pb.ldb, beta, c, ldc)
		return
	}
	mr, nr := ks.mr, ks.nr
	mPad := (m + mr - 1) / mr * mr
	bufs := gemmBufferPool.Get().(*gemmBuffers)
	defer gemmBufferPool.Put(bufs)
	// packedA: the slice starting at depth pc is (mPad/mr, kb, mr) at packedA[mPad*pc:].
	bufs.a = grow(bufs.a, mPad*k)
	packedA := bufs.a
	for pc := 0; pc < k; pc += pb.kc {
		kb := min(pb.kc, k-pc)
		packA(packedA[mPad*pc:], a, lda, transA, 0, m, pc, kb, alpha, mr)
	}

	w := max(1, min(workers, m*n*k/gemmPackedParallelMin, pb.panels))
	// Row blocks of at most mc rows keep a block of packed A in L2; strips of whole panels.
	mc := min(ks.mc, mPad)
	rowBlocks := (m + mc - 1) / mc
	strips := 1
	if w > 1 {
		strips = min(pb.panels, max(1, (w*gemmPackedTasksPerWorker+rowBlocks-1)/rowBlocks))
	}
	overwrite := beta == 0 && ks.gemmKernelSet != nil
	task := func(t int, tile []float32) {
		ic := t % rowBlocks * mc
		s := t / rowBlocks
		p0, p1 := s*pb.panels/strips, (s+1)*pb.panels/strips // micro-panels of the strip
		j0 := p0 * nr
		mb, sb := min(mc, m-ic), min(p1*nr, n)-j0
		cblk := c[ic*ldc+j0:]
		if !overwrite {
			scaleRows(beta, cblk, mb, sb, ldc)
		}
		for pc := 0; pc < k; pc += pb.kc {
			kb := min(pb.kc, k-pc)
			macroKernel(ks, mb, sb, kb, packedA[mPad*pc+ic*kb:], pb.data[pb.panels*nr*pc+j0*kb:], cblk, ldc, tile, overwrite && pc == 0)
		}
	}
	runTasks(w, rowBlocks*strips, mr*nr, task)
}

// tileBuffers holds one scratch tile per worker of runTasks, reused through tilePool.
type tileBuffers struct{ tiles [][]float32 }

var tilePool = sync.Pool{New: func() any { return new(tileBuffers) }}

// runTasks runs task(t, tile) for every t in [0, tasks) on up to w workers (the calling
// goroutine and w-1 helpers), each task taken by whichever worker is free next, and returns
// when all are done. tile is the worker's own scratch of tileLen floats.
func runTasks(w, tasks, tileLen int, task func(t int, tile []float32)) {
	w = max(1, min(w, tasks))
	tb := tilePool.Get().(*tileBuffers)
	defer tilePool.Put(tb)
	for len(tb.tiles) < w {
		tb.tiles = append(tb.tiles, nil)
	}
	for i := range w {
		tb.tiles[i] = grow(tb.tiles[i], tileLen)
	}
	var next atomic.Int64
	Parallel(w, 1, func(lo, hi int) {
		for id := lo; id < hi; id++ { // one worker per id
			for t := int(next.Add(1) - 1); t < tasks; t = int(next.Add(1) - 1) {
				task(t, tb.tiles[id])
			}
		}
	})
}
