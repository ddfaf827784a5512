package tensor

import (
	"math"

	"agentr1/tensor/ref"
)

// RMSNormForward computes root-mean-square layer normalisation over the last axis, as
// Hugging Face's Qwen2RMSNorm does (Zhang & Sennrich 2019, eq. 4):
//
//	rstd_i = 1 / sqrt(mean_j x_ij^2 + eps)
//	y_ij   = w_j * x_ij * rstd_i
//
//	x: (n, d)   w: (d)   y: (n, d), overwritten   rstd: (n), overwritten, kept for backward
//
// The mean of squares is accumulated in float64 (in the lane order below). It panics if a slice length does not match
// its dimensions.
func RMSNormForward(y, rstd, x, w []float32, n, d int, eps float32) {
	mustDims("RMSNormForward", n, d)
	mustLen("RMSNormForward", "y", y, n*d)
	mustLen("RMSNormForward", "rstd", rstd, n)
	mustLen("RMSNormForward", "x", x, n*d)
	mustLen("RMSNormForward", "w", w, d)
	if active.ref {
		ref.RMSNormForward(y, rstd, x, w, n, d, eps)
		return
	}
	if serial(n, rowChunk(d)) {
		rmsNormRows(y, rstd, x, w, 0, n, d, eps)
		return
	}
	Parallel(n, rowChunk(d), func(lo, hi int) { rmsNormRows(y, rstd, x, w, lo, hi, d, eps) })
}

// rmsNormRows is RMSNormForward on rows [lo, hi).
func rmsNormRows(y, rstd, x, w []float32, lo, hi, d int, eps float32) {
	var ss [4]float64
	for i := lo; i < hi; i += 4 {
		rows := min(4, hi-i)
		active.rowSquareSums(&ss, x[i*d:(i+rows)*d], rows, d)
		for t := range rows {
			xr, yr := x[(i+t)*d:(i+t+1)*d], y[(i+t)*d:(i+t+1)*d] // (d)
			r := float32(1 / math.Sqrt(ss[t]/float64(d)+float64(eps)))
			rstd[i+t] = r
			active.rmsScale(yr, xr, w, r)
		}
	}
}

// RMSNorm's two row sums, sum_j x_j^2 (forward) and sum_j g_j w_j x_j (backward), are taken in
// float64 over eight lanes, the order of an eight-wide vector loop: lane l adds the terms
// j = l, l+8, l+16, ... one after another, and the row's sum is
//
//	((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7))
//
// (sumLanes), the halving of a vector register. Every kernel set gives these bits: the generic
// loops below define them, and TestRMSNormKernels holds the others to them.

// rowSquareSumsGeneric sets ss[t] = sum_j x_tj^2 for the rows rows (at most 4) of x (rows, d),
// in the lane order above.
func rowSquareSumsGeneric(ss *[4]float64, x []float32, rows, d int) {
	for t := range rows {
		var s [8]float64
		squareSumLanes(&s, x[t*d:(t+1)*d])
		ss[t] = sumLanes(&s)
	}
}

// rowWeightedDotsGeneric sets gx[t] = sum_j g_tj * w_j * x_tj for the rows rows (at most 4) of
// g and x (rows, d), in the lane order above, each term rounded as (g*w)*x in float64.
func rowWeightedDotsGeneric(gx *[4]float64, g, w, x []float32, rows, d int) {
	for t := range rows {
		var s [8]float64
		weightedDotLanes(&s, g[t*d:(t+1)*d], w[:d], x[t*d:(t+1)*d])
		gx[t] = sumLanes(&s)
	}
}

// squareSumLanes adds x[j]^2 to lane j%8 of s, j from 0 up. A square of a float32 is exact in
// float64, so a fused multiply-add gives the same bits as the product and the sum.
func squareSumLanes(s *[8]float64, x []float32) {
	s0, s1, s2, s3, s4, s5, s6, s7 := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
	for ; len(x) >= 8; x = x[8:] {
		v := x[:8:8]
		s0 += float64(v[0]) * float64(v[0])
		s1 += float64(v[1]) * float64(v[1])
		s2 += float64(v[2]) * float64(v[2])
		s3 += float64(v[3]) * float64(v[3])
		s4 += float64(v[4]) * float64(v[4])
		s5 += float64(v[5]) * float64(v[5])
		s6 += float64(v[6]) * float64(v[6])
		s7 += float64(v[7]) * float64(v[7])
	}
	s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = s0, s1, s2, s3, s4, s5, s6, s7
	for j, v := range x {
		s[j] += float64(v) * float64(v)
	}
}

// weightedDotLanes adds g[j]*w[j]*x[j] to lane j%8 of s, j from 0 up; len(w) and len(x) are at
// least len(g). The conversion rounds each term before its addition, so that no compiler
// setting fuses them.
func weightedDotLanes(s *[8]float64, g, w, x []float32) {
	w, x = w[:len(g)], x[:len(g)]
	s0, s1, s2, s3, s4, s5, s6, s7 := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
	for ; len(g) >= 8; g, w, x = g[8:], w[8:], x[8:] {
		gv, wv, xv := g[:8:8], w[:8:8], x[:8:8]
		s0 += float64(float64(gv[0]) * float64(wv[0]) * float64(xv[0]))
		s1 += float64(float64(gv[1]) * float64(wv[1]) * float64(xv[1]))
		s2 += float64(float64(gv[2]) * float64(wv[2]) * float64(xv[2]))
		s3 += float64(float64(gv[3]) * float64(wv[3]) * float64(xv[3]))
		s4 += float64(float64(gv[4]) * float64(wv[4]) * float64(xv[4]))
		s5 += float64(float64(gv[5]) * float64(wv[5]) * float64(xv[5]))
		s6 += float64(float64(gv[6]) * float64(wv[6]) * float64(xv[6]))
		s7 += float64(float64(gv[7]) * float64(wv[7]) * float64(xv[7]))
	}
	s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = s0, s1, s2, s3, s4, s5, s6, s7
	for j, v := range g {
		s[j] += float64(float64(v) * float64(w[j]) * float64(x[j]))
	}
}

// sumLanes returns the row sum of eight lanes, in the order of the comment above.
func sumLanes(s *[8]float64) float64 {
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
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
	if active.ref {
		ref.RMSNormBackward(dx, dw, dy, x, w, rstd, n, d)
		return
	}
	if dx != nil {
		Parallel(n, rowChunk(d), func(lo, hi int) {
			var gx [4]float64 // sum_j dy_j w_j x_j of four rows
			for i := lo; i < hi; i += 4 {
				rows := min(4, hi-i)
				active.rowWeightedDots(&gx, dy[i*d:(i+rows)*d], w, x[i*d:(i+rows)*d], rows, d)
				for t := range rows {
					k := i + t
					xr, gr, dxr := x[k*d:(k+1)*d], dy[k*d:(k+1)*d], dx[k*d:(k+1)*d] // (d)
					r := rstd[k]
					c := float32(gx[t]) * r * r / float32(d)
					active.rmsGrad(dxr, gr, xr, w, r, c)
				}
			}
		})
	}
	if dw != nil {
		// Split over columns so that each worker owns its slice of dw.
		Parallel(d, 64, func(lo, hi int) {
			for i := 0; i < n; i++ {
				active.rmsWeightGrad(dw[lo:hi], dy[i*d+lo:i*d+hi], x[i*d+lo:i*d+hi], rstd[i])
			}
		})
	}
}

// rmsScaleGeneric sets y[j] = w[j] * (x[j] * r): a row of RMSNormForward's output given its r.
// Every kernel set's rmsScale matches it bit for bit (two float32 products, in this order).
func rmsScaleGeneric(y, x, w []float32, r float32) {
	x, w = x[:len(y)], w[:len(y)]
	for j, v := range x {
		y[j] = w[j] * (v * r)
	}
}

// rmsGradGeneric adds r * (g[j]*w[j] - x[j]*c) to dx[j]: a row of RMSNormBackward's input
// gradient given its r and c = r^2 * (sum_j g_j w_j x_j) / d. The conversions round each
// product and the difference to float32, so that no compiler setting fuses them into
// multiply-adds; every kernel set's rmsGrad matches it bit for bit.
func rmsGradGeneric(dx, g, x, w []float32, r, c float32) {
	g, x, w = g[:len(dx)], x[:len(dx)], w[:len(dx)]
	for j, v := range x {
		dx[j] += float32(r * float32(float32(g[j]*w[j])-float32(v*c)))
	}
}

// rmsWeightGradGeneric adds (g[j]*x[j]) * r to dw[j]: one row's part of RMSNormBackward's
// weight gradient. The conversion rounds the product before the sum, so that no compiler
// setting fuses them; every kernel set's rmsWeightGrad matches it bit for bit.
func rmsWeightGradGeneric(dw, g, x []float32, r float32) {
	g, x = g[:len(dw)], x[:len(dw)]
	for j, v := range x {
		dw[j] += float32(g[j] * v * r)
	}
}
