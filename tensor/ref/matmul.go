package ref

import "golang.org/x/exp/constraints"

// Gemm computes C = alpha * op(A) @ op(B) + beta * C for row-major matrices, where op(X) is X,
// or X transposed when its trans flag is set (the BLAS gemm contract, row-major):
//
//	op(A): (m, k), stored as a (m, k) with row stride lda, or a (k, m) when transA
//	op(B): (k, n), stored as b (k, n) with row stride ldb, or b (n, k) when transB
//	C:     (m, n), stored in c with row stride ldc
//
// With beta == 0, C is overwritten and its previous contents (even NaN) are ignored; with
// alpha == 0, A and B are not read (both as in the reference BLAS). Each element's k-sum is
// accumulated in float64.
func Gemm[F constraints.Float](transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	if alpha == 0 {
		k = 0 // C = beta*C
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64 // sum_p op(A)_ip op(B)_pj
			for p := 0; p < k; p++ {
				s += float64(at(a, lda, i, p, transA)) * float64(at(b, ldb, p, j, transB))
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * F(s)
			} else {
				c[i*ldc+j] = alpha*F(s) + beta*c[i*ldc+j]
			}
		}
	}
}

// at returns element (i, j) of op(X) for X stored with row stride ld: X_ij, or X_ji when trans.
func at[F constraints.Float](x []F, ld, i, j int, trans bool) F {
	if trans {
		return x[j*ld+i]
	}
	return x[i*ld+j]
}

// MatMulForward computes c = a @ b, overwriting c:
//
//	c_ij = sum_p a_ip b_pj      a: (m, k)   b: (k, n)   c: (m, n)
func MatMulForward[F constraints.Float](c, a, b []F, m, k, n int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += float64(a[i*k+p]) * float64(b[p*n+j])
			}
			c[i*n+j] = F(s)
		}
	}
}

// MatMulBackward accumulates the gradients of c = a @ b (the chain rule for a product):
//
//	da (m, k) += dc (m, n) @ b^T      da_ip += sum_j dc_ij b_pj
//	db (k, n) += a^T @ dc (m, n)      db_pj += sum_i a_ip dc_ij
//
// da or db may be nil.
func MatMulBackward[F constraints.Float](da, db, dc, a, b []F, m, k, n int) {
	if da != nil {
		for i := 0; i < m; i++ {
			for p := 0; p < k; p++ {
				var s float64
				for j := 0; j < n; j++ {
					s += float64(dc[i*n+j]) * float64(b[p*n+j])
				}
				da[i*k+p] += F(s)
			}
		}
	}
	if db != nil {
		for p := 0; p < k; p++ {
			for j := 0; j < n; j++ {
				var s float64
				for i := 0; i < m; i++ {
					s += float64(a[i*k+p]) * float64(dc[i*n+j])
				}
				db[p*n+j] += F(s)
			}
		}
	}
}

// LinearForward computes a fully connected layer as torch.nn.functional.linear does,
// overwriting y:
//
//	y_io = sum_j x_ij w_oj + bias_o     x: (n, in)   w: (out, in)   bias: (out)   y: (n, out)
//
// bias may be nil (no bias).
func LinearForward[F constraints.Float](y, x, w, bias []F, n, in, out int) {
	for i := 0; i < n; i++ {
		for o := 0; o < out; o++ {
			var s float64
			for j := 0; j < in; j++ {
				s += float64(x[i*in+j]) * float64(w[o*in+j])
			}
			if bias != nil {
				s += float64(bias[o])
			}
			y[i*out+o] = F(s)
		}
	}
}

// LinearBackward accumulates the gradients of y = x @ w^T + bias:
//
//	dx    (n, in)   += dy (n, out) @ w       dx_ij += sum_o dy_io w_oj
//	dw    (out, in) += dy^T @ x              dw_oj += sum_i dy_io x_ij
//	dbias (out)     += sum over rows of dy   dbias_o += sum_i dy_io
//
// Any of dx, dw, dbias may be nil.
func LinearBackward[F constraints.Float](dx, dw, dbias, dy, x, w []F, n, in, out int) {
	if dx != nil {
		for i := 0; i < n; i++ {
			for j := 0; j < in; j++ {
				var s float64
				for o := 0; o < out; o++ {
					s += float64(dy[i*out+o]) * float64(w[o*in+j])
				}
				dx[i*in+j] += F(s)
			}
		}
	}
	if dw != nil {
		for o := 0; o < out; o++ {
			for j := 0; j < in; j++ {
				var s float64
				for i := 0; i < n; i++ {
					s += float64(dy[i*out+o]) * float64(x[i*in+j])
				}
				dw[o*in+j] += F(s)
			}
		}
	}
	if dbias != nil {
		for o := 0; o < out; o++ {
			var s float64
			for i := 0; i < n; i++ {
				s += float64(dy[i*out+o])
			}
			dbias[o] += F(s)
		}
	}
}
