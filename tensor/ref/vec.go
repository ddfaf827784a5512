package ref

import "golang.org/x/exp/constraints"

// Dot returns sum_i x_i * y_i (BLAS dot), accumulated in float64. len(y) must be at least
// len(x).
func Dot[F constraints.Float](x, y []F) F {
	var s float64
	for i := range x {
		s += float64(x[i]) * float64(y[i])
	}
	return F(s)
}

// Axpy computes y_i += alpha * x_i (BLAS axpy). len(y) must be at least len(x).
func Axpy[F constraints.Float](alpha F, x, y []F) {
	for i := range x {
		y[i] += alpha * x[i]
	}
}

// Scal computes x_i *= alpha (BLAS scal).
func Scal[F constraints.Float](alpha F, x []F) {
	for i := range x {
		x[i] *= alpha
	}
}

// Argmax returns the index of the first largest element of x, NaN elements never being the
// largest (0 when every element is NaN). x must not be empty.
func Argmax[F constraints.Float](x []F) int {
	best := -1
	for i, v := range x {
		if v == v && (best < 0 || v > x[best]) { // v == v: v is not NaN
			best = i
		}
	}
	return max(best, 0)
}
