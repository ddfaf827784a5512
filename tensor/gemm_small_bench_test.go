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
	benchSmallRowsScores(b)
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct{ n, k int }{{688, 256}, {256, 688}, {4096, 256}} {
		m, n, k := 16, shape.n, shape.k
		a, w, c := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
		for i := range a {
			a[i] = r.Float32()
		}
		for i := range w {
			w[i] = r.Float32()
		}
		single := *active
		single.dot4x2 = nil
		for _, ks := range []*kernels{active, &single} {
			name := "dot4x2"
			if ks.dot4x2 == nil {
				name = "dot4"
			}
			b.Run(fmt.Sprintf("impl=%s/kernel=%s/m=%d/n=%d/k=%d", active.name, name, m, n, k), func(b *testing.B) {
				old := SetWorkers(1)
				defer SetWorkers(old)
				for b.Loop() {
					gemmSmallRows(ks, false, true, m, n, k, 1, a, k, w, k, 0, c, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// benchSmallRowsScores is the non-transposed half of BenchmarkGemmSmallRows.
func benchSmallRowsScores(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const m, k, ldb = 2, 32, 256
	for _, n := range []int{40, 150, 250} {
		a, kc, c := make([]float32, m*k), make([]float32, k*ldb), make([]float32, m*n)
		for i := range a {
			a[i] = r.Float32()
		}
		for i := range kc {
			kc[i] = r.Float32()
		}
		axpyOnly := *active
		axpyOnly.strip4x16 = nil
		for _, ks := range []*kernels{active, &axpyOnly} {
			name := "strip4x16"
			if ks.strip4x16 == nil {
				name = "axpy"
			}
			b.Run(fmt.Sprintf("impl=%s/kernel=%s/m=%d/n=%d/k=%d", active.name, name, m, n, k), func(b *testing.B) {
				old := SetWorkers(1)
				defer SetWorkers(old)
				for b.Loop() {
					gemmSmallRows(ks, false, false, m, n, k, 1, a, k, kc, ldb, 0, c, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
