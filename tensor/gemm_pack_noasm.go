//go:build !amd64 || purego

package tensor

// copyStrided copies runs runs of width floats (a multiple of 16) from src, one every srcStride
// floats, to dst, one every dstStride floats.
func copyStrided(dst []float32, dstStride int, src []float32, srcStride int, runs, width int) {
	for r := 0; r < runs; r++ {
		out := dst[r*dstStride:][:width]
		for i, v := range src[r*srcStride:][:width] {
			out[i] = v
		}
	}
}

// transpose8x8 is nil: without assembly, packB gathers transposed panels with gatherRuns.
var transpose8x8 func(dst []float32, dstStride int, src []float32, srcStride int, blocks int)

// pack6 is nil: without assembly, gatherRuns packs six-row panels in Go.
var pack6 func(dst, src []float32, ld, blocks int, scale float32)

// scatter6 is nil: without assembly, packA moves six-float runs with scale6.
var scatter6 func(dst []float32, dstStride int, src []float32, chunks int, scale float32)

// pack12 is nil: without assembly, gatherRuns packs twelve-row panels in Go.
var pack12 func(dst, src []float32, ld, blocks int, scale float32)

// scatter12 is nil: without assembly, packA moves twelve-float runs with copyRuns.
var scatter12 func(dst []float32, dstStride int, src []float32, chunks int, scale float32)

// widenBF16Blocks is nil: without assembly, widenBF16 widens in Go.
var widenBF16Blocks func(dst []float32, src []uint16)
