package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkExpShiftSum times the vectorised exponential of the softmax loops, reporting
// nanoseconds per element; n = 100 leaves a last group shorter than a vector, as most of
// attention's causal rows do.
func BenchmarkExpShiftSum(b *testing.B) {
	for _, n := range []int{64, 100, 256, 4096} {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = -8 * r.Float32()
		}
		for _, ks := range supportedKernels {
			b.Run(fmt.Sprintf("impl=%s/n=%d", ks.name, n), func(b *testing.B) {
				for b.Loop() {
					ks.expSum(y, x, 1, 0)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
			})
		}
	}
}
