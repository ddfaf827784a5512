package tensor

import "fmt"

// Elementwise add and multiply on flat slices, for the common case of broadcasting: the second
// operand y is broadcast along the leading dimensions of x, as PyTorch does when y's shape is a
// trailing part of x's (a bias or a scale over the last dimensions):
//
//	x: (rows, len(y))   y: (len(y))   z: (rows, len(y))   with rows = len(x) / len(y)
//
// BroadcastAddForward and BroadcastMulForward (broadcast.go) take any two shapes PyTorch
// broadcasts, such as (3, 1) against (2, 3, 5).

// AddForward computes z = x + y with y broadcast over the rows of x, overwriting z.
// It panics if len(y) does not divide len(x) or len(z) != len(x).
func AddForward(z, x, y []float32) {
	mustBroadcast("AddForward", x, y)
	mustLen("AddForward", "z", z, len(x))
	d := len(y)
	Parallel(len(x)/max(d, 1), rowChunk(d), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xr, zr := x[i*d:(i+1)*d], z[i*d:(i+1)*d] // (d)
			for j, b := range y {
				zr[j] = xr[j] + b
			}
		}
	})
}

// AddBackward accumulates the gradients of z = x + y (y broadcast):
//
//	dx (rows, d) += dz;   dy (d) += sum over rows of dz
//
// dx or dy may be nil. It panics if the lengths do not match as in AddForward.
func AddBackward(dx, dy, dz []float32) {
	if dy != nil {
		mustBroadcast("AddBackward", dz, dy)
	}
	mustLenOrNil("AddBackward", "dx", dx, len(dz))
	if dx != nil {
		Axpy(1, dz, dx)
	}
	if dy != nil {
		sumRows(dy, dz, nil)
	}
}

// MulForward computes z = x * y with y broadcast over the rows of x, overwriting z.
// It panics if len(y) does not divide len(x) or len(z) != len(x).
func MulForward(z, x, y []float32) {
	mustBroadcast("MulForward", x, y)
	mustLen("MulForward", "z", z, len(x))
	d := len(y)
	Parallel(len(x)/max(d, 1), rowChunk(d), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xr, zr := x[i*d:(i+1)*d], z[i*d:(i+1)*d] // (d)
			for j, s := range y {
				zr[j] = xr[j] * s
			}
		}
	})
}

// MulBackward accumulates the gradients of z = x * y (y broadcast):
//
//	dx (rows, d) += dz * y;   dy (d) += sum over rows of dz * x
//
// dx or dy may be nil. It panics if the lengths do not match as in MulForward.
func MulBackward(dx, dy, dz, x, y []float32) {
	mustBroadcast("MulBackward", x, y)
	mustLen("MulBackward", "dz", dz, len(x))
	mustLenOrNil("MulBackward", "dx", dx, len(x))
	mustLenOrNil("MulBackward", "dy", dy, len(y))
	d := len(y)
	if dx != nil {
		Parallel(len(x)/max(d, 1), rowChunk(d), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gr, dr := dz[i*d:(i+1)*d], dx[i*d:(i+1)*d] // (d)
				for j, s := range y {
					dr[j] += gr[j] * s
				}
			}
		})
	}
	if dy != nil {
		sumRows(dy, dz, x)
	}
}

// sumRows accumulates acc (d) += sum over rows i of g[i, :] (times x[i, :] when x is not nil),
// splitting the columns across workers so that each owns its part of acc.
func sumRows(acc, g, x []float32) {
	d := len(acc)
	if d == 0 {
		return
	}
	rows := len(g) / d
	Parallel(d, 64, func(lo, hi int) {
		a := acc[lo:hi]
		for i := 0; i < rows; i++ {
			gr := g[i*d+lo : i*d+hi]
			if x == nil {
				for j, v := range gr {
					a[j] += v
				}
				continue
			}
			xr := x[i*d+lo : i*d+hi]
			for j, v := range gr {
				a[j] += v * xr[j]
			}
		}
	})
}

// mustBroadcast panics unless y can be broadcast over the rows of x.
func mustBroadcast(fn string, x, y []float32) {
	if len(y) == 0 && len(x) == 0 {
		return
	}
	if len(y) == 0 || len(x)%len(y) != 0 {
		panic(fmt.Sprintf("tensor.%s: y of len %d cannot broadcast over x of len %d", fn, len(y), len(x)))
	}
}
