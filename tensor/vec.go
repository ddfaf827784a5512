package tensor

import (
	"fmt"

	"agentr1/tensor/ref"
)

// Dot returns the inner product sum_i x[i]*y[i], accumulated in float32 (BLAS sdot).
// The summation order depends on the kernel set (see KernelName), so results may differ from a
// left-to-right sum in the last bits.
// It panics if len(x) != len(y).
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("tensor.Dot: len(x)=%d != len(y)=%d", len(x), len(y)))
	}
	return active.dot(x, y)
}

// Axpy computes y += alpha*x element-wise (BLAS saxpy).
// It panics if len(x) != len(y).
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("tensor.Axpy: len(x)=%d != len(y)=%d", len(x), len(y)))
	}
	active.axpy(alpha, x, y)
}

// Scal computes x *= alpha element-wise (BLAS sscal). Like sscal, alpha == 0 multiplies, so NaN
// and Inf in x stay NaN.
func Scal(alpha float32, x []float32) {
	active.scal(alpha, x)
}

// Argmax returns the index of the first largest element of x, as the loop
//
//	best := 0
//	for i, v := range x {
//		if v > x[best] {
//			best = i
//		}
//	}
//
// does whenever x[0] is not NaN (a NaN element is never the largest; with x[0] NaN the loop
// keeps 0, Argmax the first largest other element; if every element is NaN, 0). It finds the
// maximum with the kernel set's vector max, then its first occurrence. It panics if x is
// empty.
func Argmax(x []float32) int {
	if len(x) == 0 {
		panic("tensor.Argmax: empty x")
	}
	if active.ref {
		return ref.Argmax(x)
	}
	return argmax(active, x)
}

// argmax is Argmax with the kernel set ks.
func argmax(ks *kernels, x []float32) int {
	m := ks.max(x)
	for i, v := range x {
		if v == m {
			return i
		}
	}
	return 0 // every element NaN
}

// dotGeneric is the pure-Go Dot: four independent partial sums, so the loop is not bound by the
// latency of one chain of additions, combined as (s0+s1)+(s2+s3) plus the tail.
func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot4Generic is the pure-Go four-row inner product: out[r] = a[r*lda : r*lda+len(b)] . b.
func dot4Generic(a []float32, lda int, b []float32, out *[4]float32) {
	k := len(b)
	for r := range out {
		out[r] = dotGeneric(a[r*lda:][:k], b)
	}
}

// dot4x2Generic is the pure-Go four-by-two inner product:
// out[c*4+r] = a[r*lda : r*lda+k] . b[c*ldb : c*ldb+k].
func dot4x2Generic(a []float32, lda int, b []float32, ldb, k int, out *[8]float32) {
	for c := range 2 {
		for r := range 4 {
			out[c*4+r] = dotGeneric(a[r*lda:][:k], b[c*ldb:][:k])
		}
	}
}

// axpyGeneric is the pure-Go Axpy.
func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// softmaxGradGeneric is the pure-Go softmaxGrad: d[i] = p[i] * (d[i] - c).
func softmaxGradGeneric(p, d []float32, c float32) {
	d = d[:len(p)]
	for i, pi := range p {
		d[i] = pi * (d[i] - c)
	}
}

// scalGeneric is the pure-Go Scal.
func scalGeneric(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}
