package tensor

import "sync"

// The blocked bfloat16 product: GemmPacked's loops (gemm_packed.go) around a micro-kernel of
// VDPBF16PS, C(12, 32) += A(12, kb pairs) * B(kb pairs, 32), giving gemmBF16Plain's bits. A
// reader of the arithmetic can stop at gemmBF16Plain.

// bf16MicroKernels are the bfloat16 product's micro-kernels, each C(rows, 32) += (or, for the
// Set ones, =) Apanel(rows of 12, k pairs) * Bpanel(k pairs, 32) for a packed A micro-panel a
// (k, 12, 2) and a packed B micro-panel b (k, 32, 2), c's rows at stride ldc: lane j of row i
// takes the pairs (a[(p*12+i)*2:][:2], b[(p*32+j)*2:][:2]) for p = 0, 1, ... in turn, by
// dotBF16Pair, into an accumulator that starts at zero.
type bf16MicroKernels struct {
	add, set   func(k int, a, b []uint16, c []float32, ldc int) // all 12 rows
	add8, set8 func(k int, a, b []uint16, c []float32, ldc int) // the first 8 rows only
}

// bf16MCRows is the number of rows of an A block of the blocked product: 144 rows of 256 pairs
// are 144 KiB, which stays in L2 while the block's column strip runs, like the float32
// product's A block.
const bf16MCRows = 144

// gemmPackedMultiBF16 is GemmPackedMulti for products packed by PackBF16Pairs.
func gemmPackedMultiBF16(transA bool, m int, alpha float32, a []float32, lda int, prods []PackedProduct) {
	k := prods[0].B.k
	checkPackedBF16(prods, k)
	work, panels := 0, 0
	for _, pr := range prods {
		checkGemm(transA, false, m, pr.B.n, k, len(a), lda, k*pr.B.n, pr.B.n, len(pr.C), pr.Ldc)
		work += m * pr.B.n * k
		panels += pr.B.panels
	}
	if m == 0 || panels == 0 {
		return
	}
	if alpha == 0 || k == 0 { // A is not read, as in Gemm
		for _, pr := range prods {
			scaleRows(pr.Beta, pr.C, m, pr.B.n, pr.Ldc)
		}
		return
	}
	if prods[0].B.ks.ref || bf16Kernels == nil {
		Parallel(m, max(1, gemmPackedParallelMin/max(1, work/m)), func(lo, hi int) {
			for _, pr := range prods {
				gemmBF16Plain(transA, lo, hi, alpha, a, lda, pr.B, pr.Beta, pr.C, pr.Ldc)
			}
		})
		return
	}

	kPairs, kc := (k+1)/2, prods[0].B.kc
	mPad := (m + bf16MR - 1) / bf16MR * bf16MR
	bufs := bf16APool.Get().(*bf16ABuffer)
	defer bf16APool.Put(bufs)
	// packedA: the slice starting at pair pc is (mPad/12, kb, 12, 2) at packedA[mPad*2*pc:].
	bufs.a = grow(bufs.a, mPad*2*kPairs)
	packedA := bufs.a
	if m*k < 1<<16 { // a decoding step's few rows: not worth a parallel region
		packAPairs(packedA, mPad, a, lda, transA, m, k, kc, alpha, 0, mPad)
	} else {
		Parallel(mPad/bf16MR, max(1, 1<<14/max(1, k*bf16MR)), func(lo, hi int) {
			packAPairs(packedA, mPad, a, lda, transA, m, k, kc, alpha, lo*bf16MR, hi*bf16MR)
		})
	}

	// Tasks as GemmPackedMulti's, with row blocks of bf16MCRows rows.
	w := max(1, min(Available(), work/gemmPackedParallelMin, panels))
	mc := min(bf16MCRows, mPad)
	plan := planPackedTasks(prods, m, mc, panels, w)
	task := func(t int, tile []float32) {
		i, ic, p0, p1 := plan.at(t, prods)
		pr := &prods[i]
		pb := pr.B
		j0 := p0 * bf16NR
		mb, sb := min(mc, m-ic), min(p1*bf16NR, pb.n)-j0
		if sb <= 0 {
			return
		}
		cblk := pr.C[ic*pr.Ldc+j0:]
		overwrite := pr.Beta == 0
		if !overwrite {
			scaleRows(pr.Beta, cblk, mb, sb, pr.Ldc)
		}
		for pc := 0; pc < kPairs; pc += kc {
			kb := min(kc, kPairs-pc)
			ab := packedA[mPad*2*pc+ic*2*kb:]
			bb := pb.pairs[pb.panels*bf16NR*2*pc+j0*2*kb:]
			macroKernelBF16(mb, sb, kb, ab, bb, cblk, pr.Ldc, tile, overwrite && pc == 0)
		}
	}
	runTasks(w, plan.count, bf16MR*bf16NR, task)
}

// bf16ABuffer holds the packed A of a bfloat16 product, reused through bf16APool.
type bf16ABuffer struct{ a []uint16 }

var bf16APool = sync.Pool{New: func() any { return new(bf16ABuffer) }}

// packAPairs packs the row panels [i0, i1) (multiples of 12) of alpha*op(A) (m, k), rounded to
// bfloat16, into dst, every slice of kc pairs: element (i, kk) of the panel starting at row ir,
// in the slice starting at pair pc (kb pairs deep), at dst[mPad*2*pc + ir*2*kb + ((kk/2-pc)*12
// + i-ir)*2 + kk%2]. Rows past m and the depth past an odd k are zero.
func packAPairs(dst []uint16, mPad int, a []float32, lda int, transA bool, m, k, kc int, alpha float32, i0, i1 int) {
	kPairs := (k + 1) / 2
	// roundedRow holds one row's whole pairs of a slice, rounded.
	var roundedRow [2 * bf16SliceMaxPairs]uint16
	at := func(i, kk int) float32 { // alpha * op(A)(i, kk), 0 past k
		switch {
		case kk >= k:
			return 0
		case transA:
			return alpha * a[kk*lda+i]
		}
		return alpha * a[i*lda+kk]
	}
	for i := i0; i < i1; i++ {
		ir := i / bf16MR * bf16MR
		for pc := 0; pc < kPairs; pc += kc {
			kb := min(kc, kPairs-pc)
			out := dst[mPad*2*pc+ir*2*kb+(i-ir)*2:]
			q := 0
			switch {
			case i >= m:
			case !transA: // the common case: a row of A rounded as a whole, its pairs spread
				row := a[i*lda+2*pc : i*lda+min(k, 2*(pc+kb))]
				rounded := roundedRow[:len(row)&^1]
				roundBF16(rounded, row[:len(rounded)], alpha)
				for ; 2*q < len(rounded); q++ {
					o := out[q*2*bf16MR : q*2*bf16MR+2 : q*2*bf16MR+2]
					o[0], o[1] = rounded[2*q], rounded[2*q+1]
				}
			}
			for ; q < kb; q++ { // transposed A, the pair an odd k leaves half full, padding rows
				o := out[q*2*bf16MR : q*2*bf16MR+2 : q*2*bf16MR+2]
				o[0], o[1] = 0, 0
				if i < m {
					o[0], o[1] = Float32ToBF16(at(i, 2*(pc+q))), Float32ToBF16(at(i, 2*(pc+q)+1))
				}
			}
		}
	}
}

// macroKernelBF16 is macroKernel for the bfloat16 product: it adds the packed A block (mb, kb
// pairs) ab times the packed B block (kb pairs, nb) bb to C(mb, nb), or with overwrite stores
// the product into C, one register tile at a time. Full tiles, and full-width tiles of 8 rows
// (a decoding step's rows), are written in place; other edge tiles go through the scratch tile.
//
//	ab: (ceil(mb/12), kb, 12, 2), bb: (ceil(nb/32), kb, 32, 2), c: (mb, nb) at stride ldc
func macroKernelBF16(mb, nb, kb int, ab, bb []uint16, c []float32, ldc int, tile []float32, overwrite bool) {
	ks := bf16Kernels
	for jr := 0; jr < nb; jr += bf16NR {
		cols := min(bf16NR, nb-jr)
		bpanel := bb[jr*2*kb : (jr+bf16NR)*2*kb]
		for ir := 0; ir < mb; ir += bf16MR {
			rows := min(bf16MR, mb-ir)
			apanel := ab[ir*2*kb : (ir+bf16MR)*2*kb]
			ct := c[ir*ldc+jr:]
			switch {
			case cols < bf16NR || (rows != bf16MR && rows != 8):
				ks.set(kb, apanel, bpanel, tile, bf16NR)
				addTile(ct, ldc, tile, bf16NR, rows, cols, overwrite)
			case rows == bf16MR && overwrite:
				ks.set(kb, apanel, bpanel, ct, ldc)
			case rows == bf16MR:
				ks.add(kb, apanel, bpanel, ct, ldc)
			case overwrite:
				ks.set8(kb, apanel, bpanel, ct, ldc)
			default:
				ks.add8(kb, apanel, bpanel, ct, ldc)
			}
		}
	}
}
