package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGemmBF16 times the product of Qwen2.5-0.5B's prefill (512 tokens) by its MLP's up
// projection (896 -> 4864) and down projection (4864 -> 896), both of bfloat16 weights: by the
// bfloat16 product (PackBF16Pairs) and by the float32 one that widens the same weights
// (PackBF16), on the machine's workers.
func BenchmarkGemmBF16(b *testing.B) {
	for _, s := range [][3]int{{512, 4864, 896}, {512, 896, 4864}} {
		m, n, k := s[0], s[1], s[2]
		r := rand.New(rand.NewPCG(1, 2))
		a, w := randomBF16Operands(r, m, n, k)
		c := make([]float32, m*n)
		for _, arith := range []string{"bf16", "f32"} {
			b.Run(fmt.Sprintf("arith=%s/m=%d/n=%d/k=%d", arith, m, n, k), func(b *testing.B) {
				var pb PackedB
				if arith == "bf16" {
					pb.PackBF16Pairs(true, k, n, w, k)
				} else {
					pb.PackBF16(true, k, n, w, k)
				}
				for b.Loop() {
					GemmPacked(false, m, 1, a, k, &pb, 0, c, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkPackBF16Pairs times the packing of Qwen2.5-0.5B's MLP up projection W (4864, 896),
// stored as a checkpoint stores it (op(B) = W^T), for the bfloat16 product and for the float32
// one (PackBF16): part of a model's load time.
func BenchmarkPackBF16Pairs(b *testing.B) {
	const n, k = 4864, 896
	_, w := randomBF16Operands(rand.New(rand.NewPCG(1, 2)), 1, n, k)
	for _, arith := range []string{"bf16", "f32"} {
		b.Run("arith="+arith, func(b *testing.B) {
			var pb PackedB
			for b.Loop() {
				if arith == "bf16" {
					pb.PackBF16Pairs(true, k, n, w, k)
				} else {
					pb.PackBF16(true, k, n, w, k)
				}
			}
			b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
		})
	}
}
