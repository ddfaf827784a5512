package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGemmSmallRows times the decoding-step product C(16, n) = A(16, k) * W(n, k)^T of
// gemmSmallRows on one worker with the pairwise dot4x2 kernel and with single-row dot4 only,
// and the attention scores of one head group, C(2, L) = q(2, 32) * K(32, L) with K's rows 256
// apart, with the strip4x16 kernel and with axpys only.
func BenchmarkGemmSmallRows(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const qm, qk, ldk = 2, 32, 256
	for _, n := range []int{40, 150, 250} {
		a, kc := randFloats(r, qm*qk), randFloats(r, qk*ldk) // (2, 32), (32, 256)
		axpyOnly := *active
		axpyOnly.strip4x16 = nil
		benchSmallRows(b, "strip4x16", active, false, qm, n, qk, a, qk, kc, ldk)
		benchSmallRows(b, "axpy", &axpyOnly, false, qm, n, qk, a, qk, kc, ldk)
	}
	r = rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct{ n, k int }{{688, 256}, {256, 688}, {4096, 256}} {
		m, n, k := 16, shape.n, shape.k
		a, w := randFloats(r, m*k), randFloats(r, n*k) // (m, k), (n, k)
		single := *active
		single.dot4x2 = nil
		benchSmallRows(b, "dot4x2", active, true, m, n, k, a, k, w, k)
		benchSmallRows(b, "dot4", &single, true, m, n, k, a, k, w, k)
	}
}

// benchSmallRows runs one sub-benchmark of gemmSmallRows with kernel set ks (named kernel) on
// one worker: C(m, n) = A(m, k) * B, B (n, k) transposed when transB, else (k, n), with leading
// dimensions lda and ldb.
func benchSmallRows(b *testing.B, kernel string, ks *kernels, transB bool, m, n, k int, a []float32, lda int, bm []float32, ldb int) {
	c := make([]float32, m*n) // (m, n)
	b.Run(fmt.Sprintf("impl=%s/kernel=%s/m=%d/n=%d/k=%d", active.name, kernel, m, n, k), func(b *testing.B) {
		old := SetWorkers(1)
		defer SetWorkers(old)
		for b.Loop() {
			gemmSmallRows(ks, false, transB, m, n, k, 1, a, lda, bm, ldb, 0, c, n)
		}
		reportGFLOPs(b, 2*float64(m*n*k))
	})
}

// randFloats returns n uniform values in [0, 1) from r.
func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()
	}
	return x
}
