package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Shapes are the shapes (m, n, k) of the bfloat16 product tests: edge tiles in every
// dimension (m not a multiple of 12 or 8, n not of 32, k odd), one pair, several slices of
// pairs, eight-row tiles, and more rows than one A block.
var bf16Shapes = [][3]int{
	{1, 1, 1}, {1, 33, 2}, {8, 32, 3}, {8, 64, 511}, {12, 32, 512}, {13, 33, 513},
	{7, 70, 37}, {30, 100, 1025}, {25, 300, 600}, {150, 40, 20}, {20, 96, 1200},
}

// randomBF16Operands returns op(A) (m, k) float32 and B (k, n) or, transB, (n, k) bfloat16,
// of ordinary magnitudes and mixed signs.
func randomBF16Operands(r *rand.Rand, m, n, k int) (a []float32, b []uint16) {
	a = make([]float32, m*k)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	b = make([]uint16, k*n)
	for i := range b {
		b[i] = Float32ToBF16(float32(r.NormFloat64() * 0.05))
	}
	return a, b
}

// TestGemmBF16Blocked checks the blocked bfloat16 product (the VDPBF16PS micro-kernels, 2
// workers) against gemmBF16Plain bit for bit over odd shapes, both layouts of A and B, and
// several alpha and beta; GemmPackedMulti of three products against each alone.
func TestGemmBF16Blocked(t *testing.T) {
	if bf16Kernels == nil {
		t.Skip("this CPU (or build) has no AVX512_BF16: the bfloat16 product is gemmBF16Plain itself")
	}
	defer SetWorkers(SetWorkers(2))
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range bf16Shapes {
		m, n, k := s[0], s[1], s[2]
		for _, tr := range [][2]bool{{false, true}, {true, false}} {
			transA, transB := tr[0], tr[1]
			for _, ab := range [][2]float32{{1, 0}, {1, 1}, {0.75, -0.5}} {
				alpha, beta := ab[0], ab[1]
				name := fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v", m, n, k, transA, transB, alpha, beta)
				a, b := randomBF16Operands(r, m, n, k)
				lda, ldb := k, n
				if transA {
					lda = m
				}
				if transB {
					ldb = k
				}
				var pb PackedB
				pb.PackBF16Pairs(transB, k, n, b, ldb)
				c0 := make([]float32, m*n)
				for i := range c0 {
					c0[i] = float32(r.NormFloat64())
				}
				got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
				GemmPacked(transA, m, alpha, a, lda, &pb, beta, got, n)
				gemmBF16Plain(transA, 0, m, alpha, a, lda, &pb, beta, want, n)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: C[%d] = %v (%#08x), gemmBF16Plain %v (%#08x)", name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}

	// Three products of one A (a decoding step's q, k and v) at once, as each alone.
	m, k := 8, 300
	a, _ := randomBF16Operands(r, m, 1, k)
	var pbs [3]PackedB
	var prods []PackedProduct
	var alone [][]float32
	for i, n := range []int{96, 40, 40} {
		_, b := randomBF16Operands(r, 1, n, k)
		pbs[i].PackBF16Pairs(true, k, n, b, k)
		c := make([]float32, m*n)
		GemmPacked(false, m, 1, a, k, &pbs[i], 0, c, n)
		alone = append(alone, c)
		prods = append(prods, PackedProduct{B: &pbs[i], C: make([]float32, m*n), Ldc: n})
	}
	GemmPackedMulti(false, m, 1, a, k, prods)
	for i, pr := range prods {
		for j := range pr.C {
			if math.Float32bits(pr.C[j]) != math.Float32bits(alone[i][j]) {
				t.Fatalf("GemmPackedMulti product %d: C[%d] = %v, alone %v", i, j, pr.C[j], alone[i][j])
			}
		}
	}
}

// TestGemmBF16Accuracy checks the bfloat16 product (GemmPacked, whichever implementation this
// machine runs) against the float64 product of the same bfloat16-rounded inputs: each element
// is a sum of k exact products (bfloat16 times bfloat16 fits float32's 24 bits) with at most
// k + slices roundings of a float32 sum, so by the standard bound of recursive summation
// (Higham 2002, "Accuracy and Stability of Numerical Algorithms", eq. 4.4)
//
//	|C - C64| <= (k + slices) * 2^-24 * sum_p |a_p b_p| (to first order)
func TestGemmBF16Accuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range bf16Shapes {
		m, n, k := s[0], s[1], s[2]
		name := fmt.Sprintf("m=%d n=%d k=%d", m, n, k)
		a, b := randomBF16Operands(r, m, n, k)
		var pb PackedB
		pb.PackBF16Pairs(false, k, n, b, n)
		c := make([]float32, m*n)
		GemmPacked(false, m, 1, a, k, &pb, 0, c, n)
		slices := ((k+1)/2 + pb.kc - 1) / pb.kc
		worst := 0.0
		for i := range m {
			for j := range n {
				var sum, abs float64
				for p := range k {
					ab := float64(BF16ToFloat32(Float32ToBF16(a[i*k+p]))) * float64(BF16ToFloat32(b[p*n+j]))
					sum += ab
					abs += math.Abs(ab)
				}
				bound := float64(k+slices) * 0x1p-24 * abs
				err := math.Abs(float64(c[i*n+j]) - sum)
				if err > bound {
					t.Fatalf("%s: C[%d,%d] = %v, float64 %v: error %.3g above the bound %.3g", name, i, j, c[i*n+j], sum, err, bound)
				}
				if abs > 0 {
					worst = max(worst, err/bound)
				}
			}
		}
		t.Logf("%s: largest error %.3f of the bound", name, worst)
	}
}

// TestPackBF16PairsColumn checks that Column reads back every column of op(B) packed by
// PackBF16Pairs, in both layouts, and that packing again with Pack replaces the pairs.
func TestPackBF16PairsColumn(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range [][2]int{{1, 1}, {7, 33}, {513, 70}, {600, 64}} {
		k, n := s[0], s[1]
		_, b := randomBF16Operands(r, 1, n, k) // (k, n), or read as (n, k) when transB
		for _, transB := range []bool{false, true} {
			ldb := n
			if transB {
				ldb = k
			}
			var pb PackedB
			pb.PackBF16Pairs(transB, k, n, b, ldb)
			col := make([]float32, k)
			for j := range n {
				pb.Column(j, col)
				for kk, v := range col {
					at := kk*ldb + j
					if transB {
						at = j*ldb + kk
					}
					want := b[at]
					if math.Float32bits(v) != uint32(want)<<16 {
						t.Fatalf("k=%d n=%d transB=%v: Column(%d)[%d] = %v, want %v", k, n, transB, j, kk, v, BF16ToFloat32(want))
					}
				}
			}
			wide := make([]float32, len(b))
			widenBF16(wide, b)
			pb.Pack(transB, k, n, wide, ldb)
			if pb.pairs != nil {
				t.Fatalf("k=%d n=%d: Pack kept the bfloat16 pairs", k, n)
			}
		}
	}
}

// TestGemmBF16RefSet checks that a product packed under the ref kernel set (which multiplies
// by gemmBF16Plain) gives gemmBF16Plain's bits, and that GemmPackedMulti refuses to mix a
// bfloat16 product with a float32 one, in either order.
func TestGemmBF16RefSet(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	m, n, k := 13, 40, 71
	a, b := randomBF16Operands(r, m, n, k)
	var pb PackedB
	withKernels(refKernels, func() { pb.PackBF16Pairs(false, k, n, b, n) })
	got, want := make([]float32, m*n), make([]float32, m*n)
	GemmPacked(false, m, 1, a, k, &pb, 0, got, n)
	gemmBF16Plain(false, 0, m, 1, a, k, &pb, 0, want, n)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("ref set: C[%d] = %v, gemmBF16Plain %v", i, got[i], want[i])
		}
	}

	var f32 PackedB
	wide := make([]float32, len(b))
	widenBF16(wide, b)
	f32.Pack(false, k, n, wide, n)
	for _, order := range [][2]*PackedB{{&pb, &f32}, {&f32, &pb}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("GemmPackedMulti of a bfloat16 and a float32 product did not panic")
				}
			}()
			GemmPackedMulti(false, m, 1, a, k, []PackedProduct{{B: order[0], C: got, Ldc: n}, {B: order[1], C: want, Ldc: n}})
		}()
	}
}
