package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// benchShapes are the square sizes of the sgemm literature and the model's skinny products:
// (64, 256) x (256, 768) is a projection over a short batch, (16, 512) x (512, 32000) the
// language-model head over a vocabulary.
var benchShapes = []struct{ m, k, n int }{
	{128, 128, 128},
	{256, 256, 256},
	{512, 512, 512},
	{1024, 1024, 1024},
	{64, 256, 768},
	{16, 512, 32000},
}

// uniform returns n values drawn uniformly from [-1, 1).
func uniform(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return x
}

// reportGFLOPs reports the benchmark's floating-point rate, flops per iteration over wall time,
// as the metric GFLOP/s.
func reportGFLOPs(b *testing.B, flops float64) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkMatMul times C = A*B (no transposes, beta = 0) for every kernel set this machine
// supports on 1 and 2 workers, reporting GFLOP/s = 2*m*n*k per multiplication over wall time,
// and GFLOP/cpu-s over the CPU time of all threads: on a machine shared with other processes
// the first falls when they take our cores, the second mostly does not (with 2 workers it is
// the work per core-second, so parallel overhead shows as a drop against 1 worker).
//
//	go test -run '^$' -bench MatMul -count 3 ./tensor/
func BenchmarkMatMul(b *testing.B) {
	defer SetWorkers(SetWorkers(1))
	r := rand.New(rand.NewPCG(1, 2))
	for _, ks := range supportedKernels {
		for _, threads := range []int{1, 2} {
			for _, s := range benchShapes {
				name := fmt.Sprintf("impl=%s/threads=%d/size=%dx%dx%d", ks.name, threads, s.m, s.k, s.n)
				b.Run(name, func(b *testing.B) {
					SetWorkers(threads)
					a := uniform(r, s.m*s.k)      // (m, k)
					bm := uniform(r, s.k*s.n)     // (k, n)
					c := make([]float32, s.m*s.n) // (m, n)
					cpu0 := processCPUSeconds()
					for b.Loop() {
						gemmBlocked(ks, false, false, s.m, s.n, s.k, 1, a, s.k, bm, s.n, 0, c, s.n)
					}
					cpu := processCPUSeconds() - cpu0
					flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
					reportGFLOPs(b, flops)
					if cpu > 0 {
						b.ReportMetric(flops*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
					}
				})
			}
		}
	}
}

// BenchmarkGemmFewRows compares, for the selected kernels, the blocked driver with
// gemmSmallRows on the products of a decoding step: m = 1..24 rows against a (512, 32000) or
// (512, 1536) weight, stored transposed (Linear's layout) or not.
func BenchmarkGemmFewRows(b *testing.B) {
	defer SetWorkers(SetWorkers(1))
	ks := active
	r := rand.New(rand.NewPCG(1, 2))
	for _, threads := range []int{1, 2} {
		for _, n := range []int{1536, 32000} {
			for _, transB := range []bool{true, false} {
				for _, m := range []int{1, 4, 8, 16, 24} {
					const k = 512
					a := make([]float32, m*k) // (m, k)
					w := make([]float32, k*n) // (n, k) or (k, n)
					c := make([]float32, m*n) // (m, n)
					for i := range a {
						a[i] = r.Float32()
					}
					for i := range w {
						w[i] = r.Float32()
					}
					ldb := n
					if transB {
						ldb = k
					}
					for _, path := range []string{"blocked", "rows"} {
						name := fmt.Sprintf("threads=%d/transB=%v/path=%s/size=%dx%dx%d", threads, transB, path, m, k, n)
						b.Run(name, func(b *testing.B) {
							SetWorkers(threads)
							for b.Loop() {
								if path == "rows" {
									gemmSmallRows(ks, false, transB, m, n, k, 1, a, k, w, ldb, 0, c, n)
								} else {
									gemmBlocked(ks, false, transB, m, n, k, 1, a, k, w, ldb, 0, c, n)
								}
							}
							reportGFLOPs(b, 2*float64(m*n*k))
						})
					}
				}
			}
		}
	}
}

// BenchmarkGemmKernel times one micro-kernel call on packed panels that sit in L1 (k = 256):
// the ceiling the blocked driver can approach.
func BenchmarkGemmKernel(b *testing.B) {
	const k = 256
	for _, ks := range supportedKernels {
		b.Run("impl="+ks.name, func(b *testing.B) {
			a := make([]float32, ks.mr*k)     // (k, mr) packed A micro-panel
			bp := make([]float32, ks.nr*k)    // (k, nr) packed B micro-panel
			c := make([]float32, ks.mr*ks.nr) // (mr, nr)
			for b.Loop() {
				ks.gemmKernel(k, a, bp, c, ks.nr)
			}
			reportGFLOPs(b, 2*float64(ks.mr*ks.nr*k))
		})
	}
}

// transABenchShapes are the transposed-A products of a training step's backward pass, C(m, n)
// = A(k, m)^T B(k, n): attention's dV = P^T dO per query block (m keys, k queries, n the head
// width; A = the probabilities at row stride T, a power of two in bench-s and not in a warm
// start's batches), and the weight gradients dW = dY^T X of bench-s (q, gate/up, down, the
// 4096-word head) and of the default policy (hidden 128) over 4,000 tokens.
var transABenchShapes = []struct{ m, k, n, lda int }{
	{256, 256, 32, 256},
	{437, 437, 32, 437},
	{256, 2048, 256, 256},
	{688, 2048, 256, 688},
	{256, 2048, 688, 256},
	{4096, 2048, 256, 4096},
	{128, 4000, 384, 128},
	{128, 4000, 128, 128},
	{384, 4000, 128, 384},
	{768, 4000, 128, 768},
}

// BenchmarkGemmTransA compares, for the selected kernels on 2 workers, the blocked driver
// reading a transposed A in place (path=inplace, the strided micro-kernel) with packing it
// first (path=packed), on transABenchShapes.
func BenchmarkGemmTransA(b *testing.B) {
	defer SetWorkers(SetWorkers(2))
	if active.gemmKernelStrided == nil {
		b.Skip("the selected kernel set (" + active.name + ") has no strided micro-kernel")
	}
	packed := *active
	packed.gemmKernelStrided, packed.gemmKernelStridedSet = nil, nil
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range transABenchShapes {
		a := uniform(r, s.k*s.lda)    // (k, m) at stride lda
		bm := uniform(r, s.k*s.n)     // (k, n)
		c := make([]float32, s.m*s.n) // (m, n)
		for _, path := range []struct {
			name string
			ks   *kernels
		}{{"packed", &packed}, {"inplace", active}} {
			b.Run(fmt.Sprintf("path=%s/size=%dx%dx%d/lda=%d", path.name, s.m, s.k, s.n, s.lda), func(b *testing.B) {
				for b.Loop() {
					gemmBlocked(path.ks, true, false, s.m, s.n, s.k, 1, a, s.lda, bm, s.n, 0, c, s.n)
				}
				reportGFLOPs(b, 2*float64(s.m*s.n*s.k))
			})
		}
	}
}

// packBOrderShapes are products with a stored, untransposed B of the backward pass of bench-s
// (dW = dY^T X per 1,024-token shard, A transposed; dX = dY W), and plain products with B rows
// 1,536 to 32,000 floats apart.
var packBOrderShapes = []struct {
	m, k, n int
	transA  bool
}{
	{256, 1024, 256, true},
	{688, 1024, 256, true},
	{256, 1024, 688, true},
	{4096, 1024, 256, true},
	{1024, 256, 256, false},
	{1024, 4096, 256, false},
	{1024, 256, 1536, false},
	{1024, 1024, 1024, false},
	{512, 1024, 2048, false},
	{256, 256, 4096, false},
	{64, 256, 8192, false},
	{16, 512, 32000, false},
}

// BenchmarkPackBOrder compares, for the selected kernels on one worker, filling B's
// micro-panels row by row (order=rows) with panel by panel (order=panels) on whole products,
// the measurement behind packBRowsMinLd, in GFLOP/s.
//
//	go test -run '^$' -bench PackBOrder -count 4 ./tensor/
func BenchmarkPackBOrder(b *testing.B) {
	defer SetWorkers(SetWorkers(1))
	defer func(v int) { packBRowsMinLd = v }(packBRowsMinLd)
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range packBOrderShapes {
		a := uniform(r, s.m*s.k)      // (m, k), or (k, m) when transA
		bm := uniform(r, s.k*s.n)     // (k, n)
		c := make([]float32, s.m*s.n) // (m, n)
		lda := s.k
		if s.transA {
			lda = s.m
		}
		for _, order := range []string{"rows", "panels"} {
			b.Run(fmt.Sprintf("size=%dx%dx%d/transA=%v/order=%s", s.m, s.k, s.n, s.transA, order), func(b *testing.B) {
				packBRowsMinLd = math.MaxInt
				if order == "rows" {
					packBRowsMinLd = 0
				}
				for b.Loop() {
					gemmBlocked(active, s.transA, false, s.m, s.n, s.k, 1, a, lda, bm, s.n, 0, c, s.n)
				}
				reportGFLOPs(b, 2*float64(s.m*s.n*s.k))
			})
		}
	}
}
