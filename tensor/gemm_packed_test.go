package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// packedImpls lists GemmPacked on every kernel set this machine supports, on one and three
// workers, B packed inside the call (the pack is part of the implementation under test). The
// tile twins are covered by TestGemmPackedMatchesGemm, against the blocked driver.
func packedImpls() []namedGemm {
	var impls []namedGemm
	for _, ks := range supportedKernels {
		for _, threads := range []int{1, 3} {
			impls = append(impls, namedGemm{ks.name + "/path=packed", threads,
				func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
					var pb PackedB
					pb.pack(ks, transB, k, n, b, ldb)
					GemmPacked(transA, m, alpha, a, lda, &pb, beta, c, ldc)
				}})
		}
	}
	return impls
}

// TestGemmPacked checks GemmPacked on every kernel set against gemmGeneric on every shape,
// transpose and scalar pair, with NaN guards around C.
func TestGemmPacked(t *testing.T) { checkEveryGemmCase(t, packedImpls()) }

// TestGemmPackedMatchesGemm checks that GemmPacked gives bit for bit what the unpacked driver
// of the same kernel set gives (gemmBlocked, or gemmSmallRows below packedRowsMin), on one
// and on two workers, and that repacking a PackedB for another shape replaces it entirely.
func TestGemmPackedMatchesGemm(t *testing.T) {
	// Below one tile, one and several k slices, several strips on two workers, edge tiles,
	// the avx512 part kernel's eight rows alone and after a full tile.
	shapes := []gemmCase{{1, 256, 256, 0, 0, 0}, {5, 100, 37, 0, 0, 0}, {16, 200, 300, 0, 0, 0},
		{30, 130, 260, 0, 0, 0}, {7, 17, 9, 0, 0, 0}, {8, 64, 70, 0, 0, 0}, {20, 300, 40, 0, 0, 0}}
	for _, ks := range append(append([]*kernels(nil), supportedKernels...), tileTwins...) {
		var pb PackedB // reused across shapes: every Pack must replace the last
		for _, tc := range shapes {
			for _, transB := range []bool{false, true} {
				for _, threads := range []int{1, 2} {
					name := fmt.Sprintf("impl=%s/threads=%d/%dx%dx%d/transB=%v", ks.name, threads, tc.m, tc.k, tc.n, transB)
					r := rand.New(rand.NewPCG(uint64(tc.m), uint64(tc.n)))
					a := fillMatrix(r, tc.m, tc.k, tc.k)
					b := fillMatrix(r, tc.k, tc.n, tc.n)
					if transB {
						b = fillMatrix(r, tc.n, tc.k, tc.k)
					}
					ldb := tc.n
					if transB {
						ldb = tc.k
					}
					old := SetWorkers(threads)
					want := make([]float32, tc.m*tc.n)
					got := make([]float32, tc.m*tc.n)
					for i := range got {
						got[i] = float32(math.NaN())
					}
					if tc.m < ks.packedRowsMin() {
						gemmSmallRows(ks, false, transB, tc.m, tc.n, tc.k, 0.5, a, tc.k, b, ldb, 0, want, tc.n)
					} else {
						gemmBlocked(ks, false, transB, tc.m, tc.n, tc.k, 0.5, a, tc.k, b, ldb, 0, want, tc.n)
					}
					pb.pack(ks, transB, tc.k, tc.n, b, ldb)
					GemmPacked(false, tc.m, 0.5, a, tc.k, &pb, 0, got, tc.n)
					SetWorkers(old)
					if i := bitDiff(got, want); i >= 0 {
						t.Errorf("%s: C[%d] = %v, want %v bit for bit", name, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestGemmPackedPanics checks that misuse panics with a message naming the function.
func TestGemmPackedPanics(t *testing.T) {
	buf := make([]float32, 64)
	var packed PackedB
	packed.Pack(false, 4, 4, buf, 4)
	cases := []struct {
		name, prefix string
		call         func()
	}{
		{"never packed", "tensor.GemmPacked:", func() { GemmPacked(false, 1, 1, buf, 1, &PackedB{}, 0, buf, 1) }},
		{"short a", "tensor.Gemm", func() { GemmPacked(false, 20, 1, buf, 4, &packed, 0, buf, 4) }},
		{"short c", "tensor.Gemm", func() { GemmPacked(false, 8, 1, buf, 4, &packed, 0, buf[:10], 4) }},
		{"negative k", "tensor.PackedB.Pack:", func() { new(PackedB).Pack(false, -1, 4, buf, 4) }},
		{"ldb < n", "tensor.PackedB.Pack:", func() { new(PackedB).Pack(false, 4, 8, buf, 4) }},
		{"short b", "tensor.PackedB.Pack:", func() { new(PackedB).Pack(true, 8, 9, buf, 8) }},
	}
	for _, tc := range cases {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if len(msg) < len(tc.prefix) || msg[:len(tc.prefix)] != tc.prefix {
					t.Errorf("%s: panic %q, want one starting with %s", tc.name, msg, tc.prefix)
				}
			}()
			tc.call()
		}()
	}
}

// BenchmarkGemmPacked times the decoding-step product C(m, n) = A(m, k) * W(n, k)^T on one
// worker with W packed ahead of time (GemmPacked) against the unpacked Gemm, for the row counts
// of a decoding batch.
func BenchmarkGemmPacked(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, shape := range []struct{ n, k int }{{688, 256}, {256, 688}, {4096, 256}} {
		for _, m := range []int{1, 4, 6, 8, 16, 80} {
			n, k := shape.n, shape.k
			a, w, c := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
			for i := range a {
				a[i] = r.Float32()
			}
			for i := range w {
				w[i] = r.Float32()
			}
			var pb PackedB
			pb.Pack(true, k, n, w, k)
			for _, path := range []string{"packed", "gemm"} {
				b.Run(fmt.Sprintf("impl=%s/path=%s/m=%d/n=%d/k=%d", active.name, path, m, n, k), func(b *testing.B) {
					defer SetWorkers(SetWorkers(1))
					for b.Loop() {
						if path == "packed" {
							GemmPacked(false, m, 1, a, k, &pb, 0, c, n)
						} else {
							Gemm(false, true, m, n, k, 1, a, k, w, k, 0, c, n)
						}
					}
					reportGFLOPs(b, 2*float64(m*n*k))
				})
			}
		}
	}
}

// TestGemmPackedMulti checks that products sharing op(A) through GemmPackedMulti give bit for
// bit what each gives through GemmPacked alone: several widths (one empty, one narrower than a
// panel), below and above one register tile of rows, on one and two workers, with beta 0 and 1.
func TestGemmPackedMulti(t *testing.T) {
	const k = 300
	widths := []int{256, 0, 7, 688, 128}
	for _, m := range []int{1, 5, 6, 16, 80} {
		for _, threads := range []int{1, 2} {
			for _, beta := range []float32{0, 1} {
				name := fmt.Sprintf("m=%d/threads=%d/beta=%v", m, threads, beta)
				r := rand.New(rand.NewPCG(uint64(m), 9))
				a := fillMatrix(r, m, k, k)
				pbs := make([]PackedB, len(widths))
				prods := make([]PackedProduct, len(widths))
				want := make([][]float32, len(widths))
				for i, n := range widths {
					w := fillMatrix(r, n, k, k)
					pbs[i].Pack(true, k, n, w, k)
					c0 := fillMatrix(r, m, n, n)[:m*n]
					prods[i] = PackedProduct{B: &pbs[i], Beta: beta, C: append([]float32(nil), c0...), Ldc: max(n, 1)}
					want[i] = append([]float32(nil), c0...)
				}
				old := SetWorkers(threads)
				for i := range widths {
					GemmPacked(false, m, 0.5, a, k, &pbs[i], beta, want[i], max(widths[i], 1))
				}
				GemmPackedMulti(false, m, 0.5, a, k, prods)
				SetWorkers(old)
				for i := range widths {
					if j := bitDiff(prods[i].C, want[i]); j >= 0 {
						t.Errorf("%s: product %d (n=%d): C[%d] = %v, want %v bit for bit", name, i, widths[i], j, prods[i].C[j], want[i][j])
					}
				}
			}
		}
	}
	defer func() {
		if msg, _ := recover().(string); len(msg) < 25 || msg[:25] != "tensor.GemmPackedMulti: p" {
			t.Errorf("products of different depths: panic %q, want tensor.GemmPackedMulti: products ...", msg)
		}
	}()
	var p1, p2 PackedB
	buf := make([]float32, 64)
	p1.Pack(true, 4, 2, buf, 4)
	p2.Pack(true, 5, 2, buf, 5)
	GemmPackedMulti(false, 8, 1, buf, 4, []PackedProduct{{B: &p1, C: buf, Ldc: 2}, {B: &p2, C: buf, Ldc: 2}})
}
