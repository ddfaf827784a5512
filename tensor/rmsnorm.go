package tensor

import "math"

// RMSNormForward computes root-mean-square layer normalisation over the last axis, as
// Hugging Face's Qwen2RMSNorm does (Zhang & Sennrich 2019, eq. 4):
//
//	rstd_i = 1 / sqrt(mean_j x_ij^2 + eps)
//	y_ij   = w_j * x_ij * rstd_i
//
//	x: (n, d)   w: (d)   y: (n, d), overwritten   rstd: (n), overwritten, kept for backward
//
// The mean of squares is accumulated in float64. It panics if a slice length does not match
// its dimensions.
func RMSNormForward(y, rstd, x, w []float32, n, d int, eps float32) {
	mustDims("RMSNormForward", n, d)
	mustLen("RMSNormForward", "y", y, n*d)
	mustLen("RMSNormForward", "rstd", rstd, n)
	mustLen("RMSNormForward", "x", x, n*d)
	mustLen("RMSNormForward", "w", w, d)
	if serial(n, rowChunk(d)) {
		rmsNormRows(y, rstd, x, w, 0, n, d, eps)
		return
	}
	Parallel(n, rowChunk(d), func(lo, hi int) { rmsNormRows(y, rstd, x, w, lo, hi, d, eps) })
}

// rmsNormRows is RMSNormForward on rows [lo, hi).
func rmsNormRows(y, rstd, x, w []float32, lo, hi, d int, eps float32) {
	for i := lo; i < hi; i++ {
		xr, yr := x[i*d:(i+1)*d], y[i*d:(i+1)*d] // (d)
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		r := float32(1 / math.Sqrt(ss/float64(d)+float64(eps)))
		rstd[i] = r
		for j, v := range xr {
			yr[j] = w[j] * (v * r)
		}
	}
}

// RMSNormBackward accumulates the gradients of RMSNormForward, given its saved rstd (n).
// With g_j = dy_j * w_j and r = rstd_i, differentiating y_j = w_j x_j r and
// dr/dx_k = -r^3 x_k / d gives
//
//	dx_ik += r * (g_k - x_ik * r^2 * (sum_j g_j x_ij) / d)
//	dw_j  += sum_i dy_ij * x_ij * r_i
//
// dx or dw may be nil. It panics if a slice length does not match its dimensions.
func RMSNormBackward(dx, dw, dy, x, w, rstd []float32, n, d int) {
	mustDims("RMSNormBackward", n, d)
	mustLenOrNil("RMSNormBackward", "dx", dx, n*d)
	mustLenOrNil("RMSNormBackward", "dw", dw, d)
	mustLen("RMSNormBackward", "dy", dy, n*d)
	mustLen("RMSNormBackward", "x", x, n*d)
	mustLen("RMSNormBackward", "w", w, d)
	mustLen("RMSNormBackward", "rstd", rstd, n)
	if dx != nil {
		Parallel(n, rowChunk(d), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				xr, gr, dxr := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], dx[i*d:(i+1)*d] // (d)
				r := rstd[i]
				var gx float64 // sum_j dy_j w_j x_j
				for j, v := range xr {
					gx += float64(gr[j]) * float64(w[j]) * float64(v)
				}
				c := float32(gx) * r * r / float32(d)
				for j, v := range xr {
					dxr[j] += r * (gr[j]*w[j] - v*c)
				}
			}
		})
	}
	if dw != nil {
		// Split over columns so that each worker owns its slice of dw.
		Parallel(d, 64, func(lo, hi int) {
			dwc := dw[lo:hi]
			for i := 0; i < n; i++ {
				r := rstd[i]
				xr, gr := x[i*d+lo:i*d+hi], dy[i*d+lo:i*d+hi]
				for j, v := range xr {
					dwc[j] += gr[j] * v * r
				}
			}
		})
	}
}
