package tensor

// gemmKernel4x4Generic is the pure-Go sgemm micro-kernel: C(4, 4) += Apanel(4, k) * Bpanel(k, 4)
// with the packed layouts of the kernels contract. The 16 sums live in local variables, which
// the compiler keeps in registers, so each step loads 8 floats for 16 multiply-adds.
func gemmKernel4x4Generic(k int, a, b, c []float32, ldc int) {
	a = a[:4*k]
	b = b[:4*k]
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	var c20, c21, c22, c23 float32
	var c30, c31, c32, c33 float32
	for p := 0; p+4 <= len(a); p += 4 {
		ap := a[p : p+4 : p+4]
		bp := b[p : p+4 : p+4]
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
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
	row = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	row[0] += c20
	row[1] += c21
	row[2] += c22
	row[3] += c23
	row = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	row[0] += c30
	row[1] += c31
	row[2] += c32
	row[3] += c33
}
