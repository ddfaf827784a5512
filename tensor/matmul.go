package tensor

import "agentr1/tensor/ref"

// MatMulForward computes c = a @ b, overwriting c.
//
//	a: (m, k)   b: (k, n)   c: (m, n)
//
// It panics if a slice length does not match its dimensions.
func MatMulForward(c, a, b []float32, m, k, n int) {
	mustDims("MatMulForward", m, k, n)
	mustLen("MatMulForward", "c", c, m*n)
	mustLen("MatMulForward", "a", a, m*k)
	mustLen("MatMulForward", "b", b, k*n)
	if active.ref {
		ref.MatMulForward(c, a, b, m, k, n)
		return
	}
	Gemm(false, false, m, n, k, 1, a, max(k, 1), b, max(n, 1), 0, c, max(n, 1))
}

// MatMulBackward accumulates the gradients of c = a @ b:
//
//	da (m, k) += dc (m, n) @ b^T
//	db (k, n) += a^T @ dc (m, n)
//
// da or db may be nil when not wanted. It panics if a slice length does not match its
// dimensions.
func MatMulBackward(da, db, dc, a, b []float32, m, k, n int) {
	mustDims("MatMulBackward", m, k, n)
	mustLenOrNil("MatMulBackward", "da", da, m*k)
	mustLenOrNil("MatMulBackward", "db", db, k*n)
	mustLen("MatMulBackward", "dc", dc, m*n)
	mustLen("MatMulBackward", "a", a, m*k)
	mustLen("MatMulBackward", "b", b, k*n)
	if active.ref {
		ref.MatMulBackward(da, db, dc, a, b, m, k, n)
		return
	}
	if da != nil {
		Gemm(false, true, m, k, n, 1, dc, max(n, 1), b, max(n, 1), 1, da, max(k, 1))
	}
	if db != nil {
		Gemm(true, false, k, n, m, 1, a, max(k, 1), dc, max(n, 1), 1, db, max(n, 1))
	}
}
