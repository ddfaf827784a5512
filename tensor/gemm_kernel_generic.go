package tensor

// gemmKernel2x4Generic is the pure-Go sgemm micro-kernel: C(2, 4) += Apanel(2, k) * Bpanel(k, 4)
// with the packed layouts of the kernels contract. The tile is small because the eight sums,
// two values of A and four of B must all fit in the 16 SSE registers the Go compiler uses for
// float32: a 4x4 tile spills to the stack on every step and runs at half this speed.
func gemmKernel2x4Generic(k int, a, b, c []float32, ldc int) {
	a = a[:2*k]
	b = b[:4*k]
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	for p := 0; p < k; p++ {
		ap := a[2*p : 2*p+2 : 2*p+2]
		bp := b[4*p : 4*p+4 : 4*p+4]
		a0, a1 := ap[0], ap[1]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
	}
	row := c[0:4:4]
	row[0] += c00
	row[1] += c01
	row[2] += c02
	row[3] += c03
	row = c[ldc : ldc+4 : ldc+4]
	row[0] += c10
	row[1] += c11
	row[2] += c12
	row[3] += c13
}
