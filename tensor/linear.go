package tensor

import "agentr1/tensor/ref"

// LinearForward computes a fully connected layer as torch.nn.functional.linear does,
// overwriting y:
//
//	y (n, out) = x (n, in) @ w (out, in)^T + bias (out)
//
// bias may be nil (no bias). It panics if a slice length does not match its dimensions.
func LinearForward(y, x, w, bias []float32, n, in, out int) {
	mustDims("LinearForward", n, in, out)
	mustLen("LinearForward", "y", y, n*out)
	mustLen("LinearForward", "x", x, n*in)
	mustLen("LinearForward", "w", w, out*in)
	mustLenOrNil("LinearForward", "bias", bias, out)
	if active.ref {
		ref.LinearForward(y, x, w, bias, n, in, out)
		return
	}
	Gemm(false, true, n, out, in, 1, x, max(in, 1), w, max(in, 1), 0, y, max(out, 1))
	if bias != nil {
		Parallel(n, rowChunk(out), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				// row += 1*bias: the product by 1 is exact, so each element is row + bias
				// rounded once, as a plain addition.
				active.axpy(1, bias, y[i*out:(i+1)*out])
			}
		})
	}
}

// LinearBackward accumulates the gradients of y = x @ w^T + bias:
//
//	dx    (n, in)   += dy (n, out) @ w (out, in)
//	dw    (out, in) += dy^T @ x (n, in)
//	dbias (out)     += sum over rows of dy
//
// Any of dx, dw, dbias may be nil when not wanted. It panics if a slice length does not match
// its dimensions.
func LinearBackward(dx, dw, dbias, dy, x, w []float32, n, in, out int) {
	mustDims("LinearBackward", n, in, out)
	mustLenOrNil("LinearBackward", "dx", dx, n*in)
	mustLenOrNil("LinearBackward", "dw", dw, out*in)
	mustLenOrNil("LinearBackward", "dbias", dbias, out)
	mustLen("LinearBackward", "dy", dy, n*out)
	mustLen("LinearBackward", "x", x, n*in)
	mustLen("LinearBackward", "w", w, out*in)
	if active.ref {
		ref.LinearBackward(dx, dw, dbias, dy, x, w, n, in, out)
		return
	}
	if dx != nil {
		Gemm(false, false, n, in, out, 1, dy, max(out, 1), w, max(in, 1), 1, dx, max(in, 1))
	}
	if dw != nil {
		Gemm(true, false, out, in, n, 1, dy, max(out, 1), x, max(in, 1), 1, dw, max(in, 1))
	}
	if dbias != nil {
		// Split over output columns so that each worker owns its slice of dbias.
		Parallel(out, 64, func(lo, hi int) {
			db := dbias[lo:hi]
			for i := 0; i < n; i++ {
				row := dy[i*out+lo : i*out+hi]
				for j, g := range row {
					db[j] += g
				}
			}
		})
	}
}

// rowChunk is the minimum number of rows of length d one worker should take: enough that a
// chunk holds at least about 16K elements, so that goroutine start-up stays negligible.
func rowChunk(d int) int {
	const minWork = 1 << 14
	if d <= 0 {
		return minWork
	}
	return max(1, minWork/d)
}
