package ref

import (
	"math"

	"golang.org/x/exp/constraints"
)

// RMSNormForward normalises each row of x by its root mean square and scales it by w, as
// Hugging Face's Qwen2RMSNorm does (Zhang & Sennrich 2019, "Root Mean Square Layer
// Normalization", eq. 4):
//
//	rstd_i = 1 / sqrt(mean_j x_ij^2 + eps)
//	y_ij   = w_j * x_ij * rstd_i
//
//	x: (n, d)   w: (d)   y: (n, d), overwritten   rstd: (n), overwritten, kept for the backward
func RMSNormForward[F constraints.Float](y, rstd, x, w []F, n, d int, eps F) {
	for i := 0; i < n; i++ {
		var ss float64 // sum_j x_ij^2
		for j := 0; j < d; j++ {
			ss += float64(x[i*d+j]) * float64(x[i*d+j])
		}
		r := 1 / math.Sqrt(ss/float64(d)+float64(eps))
		rstd[i] = F(r)
		for j := 0; j < d; j++ {
			y[i*d+j] = F(float64(w[j]) * float64(x[i*d+j]) * r)
		}
	}
}

// RMSNormBackward accumulates the gradients of RMSNormForward given its saved rstd. With
// r = rstd_i and g = dy_i, the derivative of y_ik = w_k x_ik r through r = (mean x^2 + eps)^(-1/2)
// (dr/dx_ik = -r^3 x_ik / d) gives
//
//	dx_ik += r * (g_k w_k - x_ik * r^2 * (sum_j g_j w_j x_ij) / d)
//	dw_j  += sum_i dy_ij * x_ij * r_i
//
// dx or dw may be nil.
func RMSNormBackward[F constraints.Float](dx, dw, dy, x, w, rstd []F, n, d int) {
	for i := 0; i < n; i++ {
		r := float64(rstd[i])
		if dx != nil {
			var gwx float64 // sum_j g_j w_j x_ij
			for j := 0; j < d; j++ {
				gwx += float64(dy[i*d+j]) * float64(w[j]) * float64(x[i*d+j])
			}
			c := gwx * r * r / float64(d)
			for k := 0; k < d; k++ {
				dx[i*d+k] += F(r * (float64(dy[i*d+k])*float64(w[k]) - float64(x[i*d+k])*c))
			}
		}
		if dw != nil {
			for j := 0; j < d; j++ {
				dw[j] += F(float64(dy[i*d+j]) * float64(x[i*d+j]) * r)
			}
		}
	}
}
