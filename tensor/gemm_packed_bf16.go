package tensor

import "fmt"

// PackBF16 packs op(B) (k, n), given in bfloat16, into p as Pack packs a float32 B: the same
// panels, each value kept in bfloat16, half the memory. GemmPacked widens one micro-panel at a
// time to float32 just before the micro-kernel reads it (widenBF16), so a product by p gives
// bit for bit what one by Pack of the widened B gives on the same kernel set, for products of
// at least packedRowsMin rows (fewer rows read the panels too: p keeps no reference to b,
// which the caller may drop).
//
//	op(B): (k, n), stored as b (k, n) with row stride ldb, or b (n, k) when transB
//
// It panics as Pack does.
func (p *PackedB) PackBF16(transB bool, k, n int, b []uint16, ldb int) {
	checkPackArgs("PackBF16", transB, k, n, len(b), ldb)
	p.packBF16(active, transB, k, n, b, ldb)
}

// packBF16 is PackBF16 for the kernel set ks.
func (p *PackedB) packBF16(ks *kernels, transB bool, k, n int, b []uint16, ldb int) {
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if ks.ref { // the ref set multiplies by the unpacked B: keep it widened, compact
		wide := make([]float32, br*bc)
		for r := range br {
			widenBF16(wide[r*bc:(r+1)*bc], b[r*ldb:])
		}
		p.pack(ks, transB, k, n, wide, bc)
		return
	}
	nr := ks.nr
	kSlices := p.layout(ks, k, n)
	p.src, p.transB, p.ldb = nil, transB, ldb
	p.data, p.pairs = nil, nil
	p.data16 = grow(p.data16, p.panels*nr*k)
	if k == 0 || n == 0 {
		return
	}
	Parallel(kSlices, 1, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			pc := s * p.kc
			kb := min(p.kc, k-pc)
			packB16(p.data16[p.panels*nr*pc:], b, ldb, transB, pc, kb, n, nr)
		}
	})
}

// packB16 is packB for bfloat16 values, of the whole width n of op(B): it copies
// op(B)(p0:p0+kb, 0:n) into dst as ceil(n/nr) micro-panels of nr columns, element (p, j) of
// panel r at dst[r*nr*kb + p*nr + j], zero-padded to nr columns. It runs once, when a model is
// loaded, so it is plain Go.
//
//	b:   (k, n) at stride ldb, or (n, k) when transB
//	dst: (ceil(n/nr), kb, nr)
func packB16(dst, b []uint16, ldb int, transB bool, p0, kb, n, nr int) {
	for jr := 0; jr < n; jr += nr {
		panel := dst[jr*kb : jr*kb+nr*kb]
		cols := min(nr, n-jr)
		if cols < nr {
			clear(panel)
		}
		for j := range cols {
			if transB { // row jr+j of the stored B holds column jr+j of op(B)
				for p, v := range b[(jr+j)*ldb+p0:][:kb] {
					panel[p*nr+j] = v
				}
				continue
			}
			for p := range kb {
				panel[p*nr+j] = b[(p0+p)*ldb+jr+j]
			}
		}
	}
}

// Column writes column j of the packed op(B) (k values: row j of a weight matrix W packed as
// op(B) = W^T) into dst, widened to float32 where p holds bfloat16: the embedding lookup of a
// model whose tied embedding is kept only packed as its lm_head. It panics if p was never
// packed, j is outside [0, n) or dst is shorter than k.
func (p *PackedB) Column(j int, dst []float32) {
	if p.ks == nil {
		panic("tensor.PackedB.Column: the PackedB was never packed")
	}
	if j < 0 || j >= p.n || len(dst) < p.k {
		panic(fmt.Sprintf("tensor.PackedB.Column: column %d of %d into %d floats (want %d)", j, p.n, len(dst), p.k))
	}
	if p.pairs != nil {
		p.columnPairs(j, dst)
		return
	}
	if p.ks.ref { // only the unpacked B is kept
		for i := range p.k {
			if p.transB {
				dst[i] = p.src[j*p.ldb+i]
			} else {
				dst[i] = p.src[i*p.ldb+j]
			}
		}
		return
	}
	nr := p.ks.nr
	panel, jj := j/nr, j%nr
	for pc := 0; pc < p.k; pc += p.kc {
		kb := min(p.kc, p.k-pc)
		at := p.panels*nr*pc + panel*nr*kb + jj // element (pc, j), the next depth nr further
		if p.data16 != nil {
			for i := range kb {
				dst[pc+i] = BF16ToFloat32(p.data16[at+i*nr])
			}
			continue
		}
		for i := range kb {
			dst[pc+i] = p.data[at+i*nr]
		}
	}
}
