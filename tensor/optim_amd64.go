//go:build amd64 && !purego

package tensor

// adamwAVX2 is adamwGeneric with AVX: the assembly updates the multiple-of-4 prefix, four
// float64 lanes at a time, and adamwGeneric the short tail.
func adamwAVX2(p, g, m, v []float32, c *adamStep) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	n := len(p) &^ 3
	if n > 0 {
		adamwBlocksAVX2(p[:n], g[:n], m[:n], v[:n], c)
	}
	if n < len(p) {
		adamwGeneric(p[n:], g[n:], m[n:], v[n:], c)
	}
}

// adamwBlocksAVX2 is adamwGeneric for len(p) a multiple of 4, with g, m and v at least as
// long (the caller checks): the same float64 operations in the same order, four lanes at a
// time, so the results are adamwGeneric's bit for bit.
//
//go:noescape
func adamwBlocksAVX2(p, g, m, v []float32, c *adamStep)
