package tensor

import (
	"fmt"
	"testing"
)

// BenchmarkPack times packing one (mc, kc) block of A and one (kc, nc) block of B for the tile
// and block shape of the selected kernel set, from row-major and transposed storage, in ns per
// packed element.
func BenchmarkPack(b *testing.B) {
	const nc = 1024
	mc, kc, mr, nr := active.mc, active.kc, active.mr, active.nr // the selected set's panels
	src := make([]float32, 1024*1024)
	for i := range src {
		src[i] = float32(i % 7)
	}
	dstA := make([]float32, mc*kc)
	dstB := make([]float32, kc*nc)
	for _, trans := range []bool{false, true} {
		b.Run(fmt.Sprintf("op=A/trans=%v", trans), func(b *testing.B) {
			for b.Loop() {
				packA(dstA, src, 1024, trans, 0, mc, 0, kc, 1, mr)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*mc*kc), "ns/elem")
		})
		b.Run(fmt.Sprintf("op=B/trans=%v", trans), func(b *testing.B) {
			for b.Loop() {
				packB(dstB, src, 1024, trans, 0, kc, 0, nc, nr)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*kc*nc), "ns/elem")
		})
	}
}
