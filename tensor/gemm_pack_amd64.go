//go:build amd64 && !purego

package tensor

// copyRows16 copies runs rows of width floats (a multiple of 16) from src at stride ld into dst
// packed at stride width, with SSE moves (baseline amd64, so any kernel set may use it). It is
// equivalent to
//
//	for r := 0; r < runs; r++ {
//		copy(dst[r*width:(r+1)*width], src[r*ld:r*ld+width])
//	}
//
// It panics if the slices are too short (checked here; the assembly does not check).
func copyRows16(dst, src []float32, ld, runs, width int) {
	if runs == 0 {
		return
	}
	_ = dst[runs*width-1]
	_ = src[(runs-1)*ld+width-1]
	copyRows16SSE(dst, src, ld, runs, width)
}

//go:noescape
func copyRows16SSE(dst, src []float32, ld, runs, width int)
