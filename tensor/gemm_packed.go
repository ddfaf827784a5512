package tensor

import (
	"fmt"
	"sync"
	"sync/atomic"

	"agentr1/tensor/ref"
)

// PackedB is op(B) of Gemm packed once, ahead of time, into the order the micro-kernel reads it,
// for products that use the same B many times: a model's weight matrices during decoding, where
// each step multiplies a few rows of activations by every weight and packing B on every call
// would cost as much as the product. GemmPacked multiplies by it.
//
// The packing is a copy, but products of fewer rows than a register tile read the B it was
// packed from directly (see GemmPacked), so after B changes a PackedB gives a mix of old and
// new values: Pack again whenever B changes. The zero value is empty; Pack fills it. A PackedB
// is read-only while GemmPacked runs and may then be shared by concurrent products.
type PackedB struct {
	ks     *kernels  // the kernel set whose tile and block sizes the layout follows
	k, n   int       // op(B) is (k, n)
	kc     int       // depth of every k slice but possibly the last (gemmBlocked's split)
	panels int       // ceil(n/nr) micro-panels per slice
	data   []float32 // the slice starting at depth pc is (panels, kb, nr) at data[panels*nr*pc:]
	data16 []uint16  // instead of data after PackBF16: the same panels in bfloat16
	pairs  []uint16  // instead of data after PackBF16Pairs: the bfloat16 product's panels (gemm_bf16.go)
	src    []float32 // the B packed, for the few-rows path (read only while not stale); nil if not kept
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
	checkPackArgs("Pack", transB, k, n, len(b), ldb)
	p.pack(active, transB, k, n, b, ldb)
}

// checkPackArgs panics, naming the method, if op(B) (k, n) stored in lenB elements with row
// stride ldb is not a valid operand of Pack or PackBF16.
func checkPackArgs(method string, transB bool, k, n, lenB, ldb int) {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("tensor.PackedB.%s: negative dimension k=%d n=%d", method, k, n))
	}
	br, bc := k, n // b's rows and columns as stored
	if transB {
		br, bc = n, k
	}
	if br > 0 && bc > 0 {
		if ldb < bc {
			panic(fmt.Sprintf("tensor.PackedB.%s: ldb=%d < %d columns", method, ldb, bc))
		}
		if need := (br-1)*ldb + bc; lenB < need {
			panic(fmt.Sprintf("tensor.PackedB.%s: b has %d elements, (%d x %d, ld %d) needs %d", method, lenB, br, bc, ldb, need))
		}
	}
}

// PackCopy packs op(B) (k, n) into p as Pack does, but p keeps no reference to b: products of
// fewer rows than a register tile read the packed panels too (padding the tile with zero
// rows). The packing then replaces b, which the caller may drop: a model held for inference
// keeps its weight matrices only packed. It panics as Pack does.
func (p *PackedB) PackCopy(transB bool, k, n int, b []float32, ldb int) {
	p.Pack(transB, k, n, b, ldb)
	p.dropSource()
}

// dropSource makes p forget the B it was packed from (see PackCopy).
func (p *PackedB) dropSource() {
	if p.ks.ref { // the ref set multiplies by src, unpacked: keep a copy of it instead
		p.src = append([]float32(nil), p.src...)
		return
	}
	p.src = nil
}

// layout sets p's panel geometry for op(B) (k, n) on the kernel set ks: k cut into kSlices
// slices of at most ks.kc rows, as even as can be, and n into micro-panels of ks.nr columns.
// Pack and PackBF16 share it, so GemmPacked reads the panels of either the same way.
func (p *PackedB) layout(ks *kernels, k, n int) (kSlices int) {
	kSlices = max(1, (k+ks.kc-1)/ks.kc)
	p.ks, p.k, p.n = ks, k, n
	p.kc = (k + kSlices - 1) / kSlices
	p.panels = (n + ks.nr - 1) / ks.nr
	return kSlices
}

// pack is Pack for the kernel set ks.
func (p *PackedB) pack(ks *kernels, transB bool, k, n int, b []float32, ldb int) {
	nr := ks.nr
	kSlices := p.layout(ks, k, n)
	p.src, p.transB, p.ldb = b, transB, ldb
	p.data16, p.pairs = nil, nil
	if ks.ref { // the ref set multiplies by src, unpacked
		return
	}
	p.data = grow(p.data, p.panels*nr*k)
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
// number of workers. With fewer rows than one register tile (or than its part kernel's rows,
// packedMinRows), where most of a tile would be padding, it runs gemmSmallRows on the B pb
// was packed from instead, like Gemm, where pb keeps it (Pack; not PackCopy or PackBF16, whose
// panels serve every row count).
// It panics if pb is empty (never packed), a dimension is negative, a stride is smaller than its
// row, or a slice is too short.
func GemmPacked(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	GemmPackedMulti(transA, m, alpha, a, lda, []PackedProduct{{B: pb, Beta: beta, C: c, Ldc: ldc}})
}

// PackedProduct is one product of GemmPackedMulti: C = alpha*op(A)*op(B) + Beta*C, with op(B)
// (k, n) packed in B and C (m, n) at row stride Ldc.
type PackedProduct struct {
	B    *PackedB  // op(B), packed
	Beta float32   // the scale of C's old values (0: C is overwritten)
	C    []float32 // the output (m, n), row-major
	Ldc  int       // C's row stride, at least n
}

// GemmPackedMulti computes several GemmPacked products of the same op(A) (m, k): a decoding
// step's query, key and value projections of one input, or its gate and up projections. op(A)
// is packed once and the column strips of every product run as one set of tasks, so the
// products share one parallel region. Each C gets bit for bit what GemmPacked gives for its
// product alone. It panics as GemmPacked does, or if the products' B differ in depth k.
func GemmPackedMulti(transA bool, m int, alpha float32, a []float32, lda int, prods []PackedProduct) {
	if len(prods) == 0 {
		return
	}
	if pb := prods[0].B; pb != nil && pb.pairs != nil {
		gemmPackedMultiBF16(transA, m, alpha, a, lda, prods)
		return
	}
	k := -1
	work := 0
	for i := range prods {
		pr := &prods[i]
		pb := pr.B
		if pb == nil || pb.ks == nil {
			panic("tensor.GemmPacked: the PackedB was never packed")
		}
		if k >= 0 && pb.k != k {
			panic(fmt.Sprintf("tensor.GemmPackedMulti: products of depth %d and %d", k, pb.k))
		}
		if pb.pairs != nil {
			panic("tensor.GemmPackedMulti: a bfloat16 product (PackBF16Pairs) mixed with a float32 one")
		}
		k = pb.k
		checkGemm(transA, false, m, pb.n, k, len(a), lda, k*pb.n, pb.n, len(pr.C), pr.Ldc)
		work += m * pb.n * k
	}
	ks := prods[0].B.ks
	if ks.ref { // packed under the ref set, which keeps only B itself (see PackedB.pack)
		for _, pr := range prods {
			if pr.B.ks != ks {
				panic("tensor.GemmPackedMulti: products packed for different kernel sets")
			}
			ref.Gemm(transA, pr.B.transB, m, pr.B.n, k, alpha, a, lda, pr.B.src, pr.B.ldb, pr.Beta, pr.C, pr.Ldc)
		}
		return
	}
	if m == 0 || alpha == 0 || k == 0 || (m < ks.packedRowsMin() && keepSources(prods)) {
		for _, pr := range prods {
			pb := pr.B
			switch {
			case m == 0 || pb.n == 0:
			case alpha == 0 || k == 0:
				scaleRows(pr.Beta, pr.C, m, pb.n, pr.Ldc)
			default: // fewer rows than a tile: the dot-product path on the unpacked B
				gemmSmallRows(pb.ks, transA, pb.transB, m, pb.n, k, alpha, a, lda, pb.src, pb.ldb, pr.Beta, pr.C, pr.Ldc)
			}
		}
		return
	}
	for _, pr := range prods {
		if pr.B.ks != ks {
			panic("tensor.GemmPackedMulti: products packed for different kernel sets")
		}
	}
	panels := 0
	for _, pr := range prods {
		panels += pr.B.panels
	}
	if panels == 0 { // every C is empty (n = 0)
		return
	}
	mr, nr, kc := ks.mr, ks.nr, prods[0].B.kc
	mPad := (m + mr - 1) / mr * mr
	bufs := gemmBufferPool.Get().(*gemmBuffers)
	defer gemmBufferPool.Put(bufs)
	// packedA: the slice starting at depth pc is (mPad/mr, kb, mr) at packedA[mPad*pc:].
	bufs.a = grow(bufs.a, mPad*k)
	packedA := bufs.a
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		packA(packedA[mPad*pc:], a, lda, transA, 0, m, pc, kb, alpha, mr)
	}

	w := max(1, min(Available(), work/gemmPackedParallelMin, panels))
	mc := min(ks.mc, mPad)
	plan := planPackedTasks(prods, m, mc, panels, w)
	task := func(t int, tile []float32) {
		i, ic, p0, p1 := plan.at(t, prods)
		pr := &prods[i]
		pb := pr.B
		j0 := p0 * nr
		mb, sb := min(mc, m-ic), min(p1*nr, pb.n)-j0
		if sb <= 0 {
			return
		}
		cblk := pr.C[ic*pr.Ldc+j0:]
		overwrite := pr.Beta == 0 && ks.gemmKernelSet != nil
		if !overwrite {
			scaleRows(pr.Beta, cblk, mb, sb, pr.Ldc)
		}
		tile, wide := tile[:mr*nr], tile[mr*nr:]
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			ab := packedBlock(packedA[mPad*pc+ic*kb:], mr)
			if pb.data16 == nil {
				macroKernel(ks, mb, sb, kb, ab, pb.data[pb.panels*nr*pc+j0*kb:], cblk, pr.Ldc, tile, overwrite && pc == 0)
				continue
			}
			// BF16 panels: each micro-panel is widened into wide (kb x nr floats, which stays in
			// L1 while every row tile of the block reads it), then multiplied as a float32 one.
			panels16 := pb.data16[pb.panels*nr*pc+j0*kb:]
			for jr := 0; jr < sb; jr += nr {
				bp := wide[:nr*kb]
				widenBF16(bp, panels16[jr*kb:])
				macroKernel(ks, mb, min(nr, sb-jr), kb, ab, bp, cblk[jr:], pr.Ldc, tile, overwrite && pc == 0)
			}
		}
	}
	tileLen := mr * nr
	for _, pr := range prods {
		if pr.B.data16 != nil {
			tileLen += nr * kc // room for one widened micro-panel
			break
		}
	}
	runTasks(w, plan.count, tileLen, task)
}

// packedTasks is how GemmPackedMulti (and the bfloat16 product) cut their work into tasks: row
// blocks of at most mc rows, each of which keeps a block of packed A in L2, against column
// strips of whole micro-panels of each product, about gemmPackedTasksPerWorker tasks per worker
// in all. Task t is row block t % rowBlocks of strip t / rowBlocks of its product, the products
// taken in order.
type packedTasks struct {
	mc, rowBlocks int
	stripsOf      [8]int // strips of each product (products beyond 8 get one strip each)
	count         int    // tasks in all
}

// planPackedTasks cuts the m rows of prods, whose micro-panels number panels in all, into row
// blocks of mc rows and strips for w workers.
func planPackedTasks(prods []PackedProduct, m, mc, panels, w int) packedTasks {
	pt := packedTasks{mc: mc, rowBlocks: (m + mc - 1) / mc}
	want := 1
	if w > 1 {
		want = max(1, (w*gemmPackedTasksPerWorker+pt.rowBlocks-1)/pt.rowBlocks)
	}
	for i, pr := range prods {
		if i < len(pt.stripsOf) {
			pt.stripsOf[i] = min(pr.B.panels, max(1, (want*pr.B.panels+panels-1)/panels))
		}
		pt.count += pt.rowBlocks * pt.strips(i)
	}
	return pt
}

// strips returns the number of column strips of product i.
func (pt *packedTasks) strips(i int) int {
	if i < len(pt.stripsOf) {
		return pt.stripsOf[i]
	}
	return 1
}

// at returns what task t covers: product i, its rows from ic (mc of them, or to the last), and
// the micro-panels [p0, p1) of its B.
func (pt *packedTasks) at(t int, prods []PackedProduct) (i, ic, p0, p1 int) {
	for t >= pt.rowBlocks*pt.strips(i) {
		t -= pt.rowBlocks * pt.strips(i)
		i++
	}
	strips, panels := pt.strips(i), prods[i].B.panels
	s := t / pt.rowBlocks
	return i, t % pt.rowBlocks * pt.mc, s * panels / strips, (s + 1) * panels / strips
}

// keepSources reports whether every product's PackedB keeps the B it was packed from, which
// products of fewer rows than a register tile read instead of the panels.
func keepSources(prods []PackedProduct) bool {
	for _, pr := range prods {
		if pr.B.src == nil {
			return false
		}
	}
	return true
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
	if w == 1 {
		for t := range tasks {
			task(t, tb.tiles[0])
		}
		return
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
