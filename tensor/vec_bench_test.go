package tensor

import (
	"fmt"
	"testing"
)

// BenchmarkVec times Dot, Axpy and Scal of every kernel set this machine supports on vectors
// that fit in L1 (n = 2048) and in L2 (n = 65536), reporting GFLOP/s (2 flops per element for Dot
// and Axpy, 1 for Scal).
func BenchmarkVec(b *testing.B) {
	for _, ks := range supportedKernels {
		for _, n := range []int{2048, 65536} {
			x := make([]float32, n) // (n)
			y := make([]float32, n) // (n)
			for i := range x {
				x[i] = float32(i%13) / 13
				y[i] = float32(i%7) / 7
			}
			ops := []struct {
				name  string
				flops int
				run   func()
			}{
				{"dot", 2, func() { ks.dot(x, y) }},
				{"axpy", 2, func() { ks.axpy(1e-3, x, y) }},
				{"scal", 1, func() { ks.scal(1, x) }},
			}
			for _, op := range ops {
				b.Run(fmt.Sprintf("op=%s/impl=%s/n=%d", op.name, ks.name, n), func(b *testing.B) {
					for b.Loop() {
						op.run()
					}
					reportGFLOPs(b, float64(op.flops*n))
				})
			}
		}
	}
}
