package tensor

import "fmt"

// The bfloat16 product: C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C, with op(B)
// a bfloat16 weight matrix packed once (PackedB.PackBF16Pairs) and op(A) float32 activations
// rounded to bfloat16 (Float32ToBF16, to nearest even) as they are packed, accumulated in
// float32 by the arithmetic of VDPBF16PS (dotBF16Pair): the products of a pair of consecutive
// depths p = 2q, 2q+1 go into one float32 lane, the odd one first. This is PyTorch's bfloat16
// inference on a CPU with AVX512_BF16 (oneDNN's kernels), at twice the multiply-adds of float32
// per instruction; it is opt-in, for inference on a checkpoint stored in bfloat16, and never
// used to train.
//
// The depth is cut into slices of at most bf16SliceMaxPairs pairs, as even as can be (the k
// slices of the blocked product, fixed here so the sums are the same on every machine). For
// each slice a float32 accumulator starts at zero and takes the slice's pairs in order; C then
// gains each slice's sum in turn (the first one stored, when beta is 0). gemmBF16Plain spells
// this out; the blocked product (gemm_bf16_blocked.go), on a CPU with AVX512_BF16, gives the
// same bits.

// Tile and slice sizes of the bfloat16 product's packed layout, fixed on every machine: the
// panels are those the AVX-512 micro-kernel reads (12 rows of A and 32 columns of B, the float32
// kernel's tile), and a (256 pairs, 32) micro-panel of B is 32 KiB, which stays in L1 while
// every row panel of an A block reads it, as the float32 kernel's (256, 32) float panel does.
const (
	bf16MR            = 12
	bf16NR            = 32
	bf16SliceMaxPairs = 256
)

// PackBF16Pairs packs op(B) (k, n), given in bfloat16, into p for the bfloat16 product: after
// it GemmPacked and GemmPackedMulti by p round op(A) to bfloat16 and multiply in bfloat16
// (see the top of this file), on every row count and kernel set, and Column reads op(B)'s
// columns back. Where PackBF16 keeps the values but multiplies them in float32, this changes
// the arithmetic: results differ from a float32 product by bfloat16's rounding of A.
//
//	op(B): (k, n), stored as b (k, n) with row stride ldb, or b (n, k) when transB
//
// p keeps no reference to b. It panics as Pack does.
func (p *PackedB) PackBF16Pairs(transB bool, k, n int, b []uint16, ldb int) {
	checkPackArgs("PackBF16Pairs", transB, k, n, len(b), ldb)
	kPairs := (k + 1) / 2
	slices := max(1, (kPairs+bf16SliceMaxPairs-1)/bf16SliceMaxPairs)
	p.ks, p.k, p.n = active, k, n
	p.kc = (kPairs + slices - 1) / slices // in pairs
	p.panels = (n + bf16NR - 1) / bf16NR
	p.data, p.data16, p.src, p.transB, p.ldb = nil, nil, nil, transB, ldb
	p.pairs = grow(p.pairs, p.panels*bf16NR*2*kPairs)
	// Micro-panels are packed in parallel, each written front to back.
	Parallel(p.panels, 4, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for pc := 0; pc < kPairs; pc += p.kc {
				kb := min(p.kc, kPairs-pc)
				panel := p.pairs[p.panels*bf16NR*2*pc+r*bf16NR*2*kb:][:bf16NR*2*kb] // (kb, 32, 2)
				packPairsPanel(panel, b, ldb, transB, k, n, r*bf16NR, 2*pc, kb)
			}
		}
	})
}

// packPairsPanel writes the micro-panel of op(B) (k, n) with columns [j0, j0+32) and depths
// [p0, p0+2*kb) into panel (kb, 32, 2), element (kk, j) at ((kk-p0)/2*32 + j-j0)*2 +
// (kk-p0)%2, zero past k and n.
func packPairsPanel(panel, b []uint16, ldb int, transB bool, k, n, j0, p0, kb int) {
	cols, depth := min(bf16NR, n-j0), min(2*kb, k-p0)
	if cols < bf16NR || depth < 2*kb {
		clear(panel) // the padding stays zero
	}
	for j := range cols {
		if transB { // row j0+j of the stored B is column j0+j of op(B): read it front to back
			for d, v := range b[(j0+j)*ldb+p0:][:depth] {
				panel[(d/2*bf16NR+j)*2+d%2] = v
			}
			continue
		}
		for d := range depth {
			panel[(d/2*bf16NR+j)*2+d%2] = b[(p0+d)*ldb+j0+j]
		}
	}
}

// pairIndex is where p.pairs holds element (kk, j) of op(B): in the slice of pairs starting at
// pair pc (kb pairs deep), micro-panel j/32, pair kk/2 - pc, column j%32, half kk%2.
//
//	slice at pair pc: (panels, kb, 32, 2) at pairs[panels*32*2*pc:]
func (p *PackedB) pairIndex(kk, j int) int {
	kPairs := (p.k + 1) / 2
	q := kk / 2
	pc := q / p.kc * p.kc
	kb := min(p.kc, kPairs-pc)
	return p.panels*bf16NR*2*pc + (j/bf16NR)*bf16NR*2*kb + (q-pc)*bf16NR*2 + j%bf16NR*2 + kk%2
}

// gemmBF16Plain is the bfloat16 product spelled out, one element of C at a time, for the rows
// [i0, i1) of C: the specification the blocked product follows bit for bit, and the product
// itself under the ref kernel set or on a CPU without AVX512_BF16.
//
//	op(A): (m, k), stored as a (m, k) with row stride lda, or a (k, m) when transA
//	op(B): (k, n), packed in pb by PackBF16Pairs
//	C:     (m, n) with row stride ldc
func gemmBF16Plain(transA bool, i0, i1 int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int) {
	k, n := pb.k, pb.n
	kPairs := (k + 1) / 2
	opA := func(i, kk int) uint16 { // op(A)(i, kk) scaled and rounded to bfloat16
		if kk >= k {
			return 0
		}
		if transA {
			return Float32ToBF16(alpha * a[kk*lda+i])
		}
		return Float32ToBF16(alpha * a[i*lda+kk])
	}
	for i := i0; i < i1; i++ {
		for j := range n {
			cij := &c[i*ldc+j]
			if beta == 0 {
				*cij = 0
			} else {
				*cij *= beta
			}
			for pc := 0; pc < kPairs; pc += pb.kc { // one slice of pairs
				var acc float32
				for q := pc; q < min(pc+pb.kc, kPairs); q++ {
					aq := uint32(opA(i, 2*q+1))<<16 | uint32(opA(i, 2*q))
					bq := uint32(pb.pairs[pb.pairIndex(2*q+1, j)])<<16 | uint32(pb.pairs[pb.pairIndex(2*q, j)])
					acc = dotBF16Pair(acc, aq, bq)
				}
				if pc == 0 && beta == 0 {
					*cij = acc
				} else {
					*cij += acc
				}
			}
		}
	}
}

// columnPairs is Column of a PackedB packed by PackBF16Pairs.
func (p *PackedB) columnPairs(j int, dst []float32) {
	for kk := range p.k {
		dst[kk] = BF16ToFloat32(p.pairs[p.pairIndex(kk, j)])
	}
}

// checkPackedBF16 panics unless every product of prods is by a PackedB packed with
// PackBF16Pairs, of depth k.
func checkPackedBF16(prods []PackedProduct, k int) {
	for _, pr := range prods {
		if pr.B.pairs == nil || pr.B.k != k {
			panic(fmt.Sprintf("tensor.GemmPackedMulti: a bfloat16 product (PackBF16Pairs) of depth %d mixed with another kind or depth", k))
		}
	}
}
