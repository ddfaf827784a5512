//go:build !amd64 || purego

package tensor

// copyRows16 copies runs rows of width floats (a multiple of 16) from src at stride ld into dst
// packed at stride width.
func copyRows16(dst, src []float32, ld, runs, width int) {
	for r := 0; r < runs; r++ {
		out := dst[r*width : (r+1)*width]
		for i, v := range src[r*ld:][:width] {
			out[i] = v
		}
	}
}
