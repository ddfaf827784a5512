//go:build amd64 && !purego

package tensor

// The AVX2 versions of RMSNorm's row loops (rmsnorm.go): the assembly handles the multiple-of-8
// prefix with the same float32 operations in the same order, and the generic loops the tail.

// rmsScaleAVX2 is rmsScaleGeneric with AVX.
func rmsScaleAVX2(y, x, w []float32, r float32) {
	x, w = x[:len(y)], w[:len(y)]
	n := len(y) &^ 7
	rmsScaleBlocksAVX2(y[:n], x[:n], w[:n], r)
	rmsScaleGeneric(y[n:], x[n:], w[n:], r)
}

// rmsGradAVX2 is rmsGradGeneric with AVX.
func rmsGradAVX2(dx, g, x, w []float32, r, c float32) {
	g, x, w = g[:len(dx)], x[:len(dx)], w[:len(dx)]
	n := len(dx) &^ 7
	rmsGradBlocksAVX2(dx[:n], g[:n], x[:n], w[:n], r, c)
	rmsGradGeneric(dx[n:], g[n:], x[n:], w[n:], r, c)
}

// The Blocks functions take slices whose length is a multiple of 8, the others at least as
// long as the first (the wrappers above check); the assembly does not check.

//go:noescape
func rmsScaleBlocksAVX2(y, x, w []float32, r float32)

//go:noescape
func rmsGradBlocksAVX2(dx, g, x, w []float32, r, c float32)
