package tensor

import (
	"math"

	"agentr1/tensor/ref"
)

// SoftmaxForward computes y = softmax(x) over the last axis of x (n, d), overwriting y (n, d).
// It subtracts the row maximum before exponentiating (numerically stable) and sums in float64.
// It panics if a slice length does not match its dimensions.
func SoftmaxForward(y, x []float32, n, d int) {
	mustDims("SoftmaxForward", n, d)
	mustLen("SoftmaxForward", "y", y, n*d)
	mustLen("SoftmaxForward", "x", x, n*d)
	if active.ref {
		ref.SoftmaxForward(y, x, n, d)
		return
	}
	if serial(n, rowChunk(d)) {
		softmaxRows(y, x, 0, n, d)
		return
	}
	Parallel(n, rowChunk(d), func(lo, hi int) { softmaxRows(y, x, lo, hi, d) })
}

// softmaxRows is SoftmaxForward on rows [lo, hi).
func softmaxRows(y, x []float32, lo, hi, d int) {
	for i := lo; i < hi; i++ {
		softmaxRow(y[i*d:(i+1)*d], x[i*d:(i+1)*d])
	}
}

// SoftmaxBackward accumulates the gradient of y = softmax(x) given the forward output y:
//
//	dx_j += y_j * (dy_j - sum_k dy_k y_k)
//
// dx may be nil (nothing to do). It panics if a slice length does not match its dimensions.
func SoftmaxBackward(dx, dy, y []float32, n, d int) {
	mustDims("SoftmaxBackward", n, d)
	mustLenOrNil("SoftmaxBackward", "dx", dx, n*d)
	mustLen("SoftmaxBackward", "dy", dy, n*d)
	mustLen("SoftmaxBackward", "y", y, n*d)
	if active.ref {
		ref.SoftmaxBackward(dx, dy, y, n, d)
		return
	}
	if dx == nil {
		return
	}
	Parallel(n, rowChunk(d), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dxr, dyr, yr := dx[i*d:(i+1)*d], dy[i*d:(i+1)*d], y[i*d:(i+1)*d] // (d)
			var dot float64
			for j, p := range yr {
				dot += float64(dyr[j]) * float64(p)
			}
			for j, p := range yr {
				dxr[j] += p * (dyr[j] - float32(dot))
			}
		}
	})
}

// LogSoftmaxForward computes y = log_softmax(x) = x - logsumexp(x) over the last axis of
// x (n, d), overwriting y (n, d). It panics if a slice length does not match its dimensions.
func LogSoftmaxForward(y, x []float32, n, d int) {
	mustDims("LogSoftmaxForward", n, d)
	mustLen("LogSoftmaxForward", "y", y, n*d)
	mustLen("LogSoftmaxForward", "x", x, n*d)
	if active.ref {
		ref.LogSoftmaxForward(y, x, n, d)
		return
	}
	Parallel(n, rowChunk(d), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xr, yr := x[i*d:(i+1)*d], y[i*d:(i+1)*d] // (d)
			lse := logSumExp(xr)
			for j, v := range xr {
				yr[j] = float32(float64(v) - lse)
			}
		}
	})
}

// LogSoftmaxBackward accumulates the gradient of y = log_softmax(x) given the forward output y:
//
//	dx_j += dy_j - exp(y_j) * sum_k dy_k
//
// dx may be nil (nothing to do). It panics if a slice length does not match its dimensions.
func LogSoftmaxBackward(dx, dy, y []float32, n, d int) {
	mustDims("LogSoftmaxBackward", n, d)
	mustLenOrNil("LogSoftmaxBackward", "dx", dx, n*d)
	mustLen("LogSoftmaxBackward", "dy", dy, n*d)
	mustLen("LogSoftmaxBackward", "y", y, n*d)
	if active.ref {
		ref.LogSoftmaxBackward(dx, dy, y, n, d)
		return
	}
	if dx == nil {
		return
	}
	Parallel(n, rowChunk(d), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dxr, dyr, yr := dx[i*d:(i+1)*d], dy[i*d:(i+1)*d], y[i*d:(i+1)*d] // (d)
			var sum float64
			for _, g := range dyr {
				sum += float64(g)
			}
			expChunks(yr, 0, func(c0 int, e []float32) { // e_j = exp(y_j) = softmax(x)_j
				for j, ej := range e {
					dxr[c0+j] += float32(float64(dyr[c0+j]) - float64(ej)*sum)
				}
			})
		}
	})
}

// softmaxRow writes softmax(x) into y (both of length d), max-shifted, summing in float64.
// A row whose entries are all -Inf yields zeros. y may be x.
func softmaxRow(y, x []float32) {
	m := active.max(x)
	if math.IsInf(float64(m), -1) {
		clear(y)
		return
	}
	sum := expShiftSum(y, x, 1, m) // y_j = exp(x_j - m)
	active.scal(float32(1/sum), y)
}

// rowMax returns the largest element of x, or -Inf for an empty row.
func rowMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// expChunk is the length of the stack buffers the exponential loops work through.
const expChunk = 256

// expChunks calls f(c0, e) for consecutive chunks [c0, c0+len(e)) of x, with e[j] =
// exp(x[c0+j] - shift) in a stack buffer of at most expChunk values, each chunk one vectorised
// expShiftSum call.
func expChunks(x []float32, shift float32, f func(c0 int, e []float32)) {
	var buf [expChunk]float32
	for c0 := 0; c0 < len(x); c0 += expChunk {
		e := buf[:min(expChunk, len(x)-c0)]
		expShiftSum(e, x[c0:c0+len(e)], 1, shift)
		f(c0, e)
	}
}

// logSumExp returns log(sum_j exp(x_j)) computed stably (max shift, float64 sum).
func logSumExp(x []float32) float64 {
	m := rowMax(x)
	if math.IsInf(float64(m), -1) {
		return float64(m)
	}
	var buf [expChunk]float32 // exp(x_j - m) for one chunk, discarded
	var sum float64
	for c0 := 0; c0 < len(x); c0 += expChunk {
		c := x[c0:min(c0+expChunk, len(x))]
		sum += expShiftSum(buf[:len(c)], c, 1, m)
	}
	return float64(m) + math.Log(sum)
}
