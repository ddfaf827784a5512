//go:build amd64 && !purego

package tensor

// The AVX2 versions of RMSNorm's row loops (rmsnorm.go): the assembly handles the multiple-of-8
// prefix with the same operations in the same order, and the generic loops the tail.

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

// rmsWeightGradAVX2 is rmsWeightGradGeneric with AVX.
func rmsWeightGradAVX2(dw, g, x []float32, r float32) {
	g, x = g[:len(dw)], x[:len(dw)]
	n := len(dw) &^ 7
	rmsWeightGradBlocksAVX2(dw[:n], g[:n], x[:n], r)
	rmsWeightGradGeneric(dw[n:], g[n:], x[n:], r)
}

// rowSquareSumsAVX2 is rowSquareSumsGeneric with AVX: four rows' eight lanes in one pass over
// the multiple-of-8 prefix, the tail added to the same lanes in Go.
func rowSquareSumsAVX2(ss *[4]float64, x []float32, rows, d int) {
	if rows < 4 || d < 8 {
		rowSquareSumsGeneric(ss, x, rows, d)
		return
	}
	x = x[:4*d]
	var lanes [4][8]float64
	n := d &^ 7
	rowSquareSumsBlocksAVX2(&lanes, x, d, n)
	for t := range 4 {
		squareSumLanes(&lanes[t], x[t*d+n:(t+1)*d])
		ss[t] = sumLanes(&lanes[t])
	}
}

// rowWeightedDotsAVX2 is rowWeightedDotsGeneric with AVX, as rowSquareSumsAVX2.
func rowWeightedDotsAVX2(gx *[4]float64, g, w, x []float32, rows, d int) {
	if rows < 4 || d < 8 {
		rowWeightedDotsGeneric(gx, g, w, x, rows, d)
		return
	}
	g, w, x = g[:4*d], w[:d], x[:4*d]
	var lanes [4][8]float64
	n := d &^ 7
	rowWeightedDotsBlocksAVX2(&lanes, g, w, x, d, n)
	for t := range 4 {
		weightedDotLanes(&lanes[t], g[t*d+n:(t+1)*d], w[n:], x[t*d+n:(t+1)*d])
		gx[t] = sumLanes(&lanes[t])
	}
}

// rowSquareSumsBlocksAVX2 sets lanes[t][l] = sum over j < n, j%8 == l, of x[t*d+j]^2 for the
// four rows t of x (at least 4*d floats); n is a positive multiple of 8, at most d.
//
//go:noescape
func rowSquareSumsBlocksAVX2(lanes *[4][8]float64, x []float32, d, n int)

// rowWeightedDotsBlocksAVX2 sets lanes[t][l] = sum over j < n, j%8 == l, of
// (g[t*d+j]*w[j])*x[t*d+j] for the four rows t of g and x (at least 4*d floats, w at least n);
// n is a positive multiple of 8, at most d.
//
//go:noescape
func rowWeightedDotsBlocksAVX2(lanes *[4][8]float64, g, w, x []float32, d, n int)

// The Blocks functions take slices whose length is a multiple of 8, the others at least as
// long as the first (the wrappers above check); the assembly does not check.

//go:noescape
func rmsScaleBlocksAVX2(y, x, w []float32, r float32)

//go:noescape
func rmsGradBlocksAVX2(dx, g, x, w []float32, r, c float32)

//go:noescape
func rmsWeightGradBlocksAVX2(dw, g, x []float32, r float32)
