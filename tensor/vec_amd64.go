//go:build amd64 && !purego

package tensor

import "math"

// The assembly loops below handle a length that is a multiple of their vector width (8 floats
// for AVX2, 16 for AVX-512); these wrappers finish the short tail in Go, so the assembly has no
// partial-vector path.

// dotAVX2 is Dot with AVX2+FMA.
func dotAVX2(x, y []float32) float32 {
	n := len(x) &^ 7
	s := dotBlocksAVX2(x[:n], y[:n])
	for i := n; i < len(x); i++ {
		s += x[i] * y[i]
	}
	return s
}

// axpyAVX2 is Axpy with AVX2+FMA.
func axpyAVX2(alpha float32, x, y []float32) {
	n := len(x) &^ 7
	axpyBlocksAVX2(alpha, x[:n], y[:n])
	for i := n; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}

// scalAVX2 is Scal with AVX2.
func scalAVX2(alpha float32, x []float32) {
	n := len(x) &^ 7
	scalBlocksAVX2(alpha, x[:n])
	for i := n; i < len(x); i++ {
		x[i] *= alpha
	}
}

// dot4AVX2 computes the four inner products out[r] = a[r*lda : r*lda+len(b)] . b with AVX2+FMA,
// reading b once for all four rows.
func dot4AVX2(a []float32, lda int, b []float32, out *[4]float32) {
	k := len(b)
	if k == 0 {
		*out = [4]float32{}
		return
	}
	_ = a[3*lda+k-1]
	k8 := k &^ 7
	dot4BlocksAVX2(a, lda, b[:k8], out[:])
	for r := range out {
		row := a[r*lda:][:k]
		s := out[r]
		for p := k8; p < k; p++ {
			s += row[p] * b[p]
		}
		out[r] = s
	}
}

// dot4x2AVX2 computes the eight inner products out[c*4+r] = a[r*lda : r*lda+k] . b[c*ldb :
// c*ldb+k] of rows r = 0-3 of a and rows c = 0-1 of b with AVX2+FMA, each row loaded once for
// two or four products.
func dot4x2AVX2(a []float32, lda int, b []float32, ldb, k int, out *[8]float32) {
	if k == 0 {
		*out = [8]float32{}
		return
	}
	_ = a[3*lda+k-1]
	_ = b[ldb+k-1]
	k8 := k &^ 7
	dot4x2BlocksAVX2(a, lda, b, ldb, k8, out[:])
	for c := range 2 {
		brow := b[c*ldb:][:k]
		for r := range 4 {
			row := a[r*lda:][:k]
			s := out[c*4+r]
			for p := k8; p < k; p++ {
				s += row[p] * brow[p]
			}
			out[c*4+r] = s
		}
	}
}

// strip4x16AVX2 is the kernels' strip4x16 with AVX2+FMA: out[i*16+j] = sum_p a[i][p] *
// b[p*ldb+j] for the four rows a[0..3] (each at least k long) and the first cols (<= 16)
// columns of b, 0 in the other columns of out.
func strip4x16AVX2(k int, a *[4][]float32, b []float32, ldb, cols int, out *[64]float32) {
	if k == 0 || cols <= 0 {
		*out = [64]float32{}
		return
	}
	cols = min(cols, 16)
	_ = b[(k-1)*ldb+cols-1]
	strip4x16BlocksAVX2(k, a[0][:k], a[1][:k], a[2][:k], a[3][:k], b, ldb, cols, out[:])
}

// strip2x32AVX2 is the kernels' strip2x32 with AVX2+FMA: out[i*32+j] = sum_p a[i][p] *
// b[p*ldb+j] for the two rows a[0..1] (each at least k long) and the first cols (<= 32) columns
// of b, 0 in the other columns of out.
func strip2x32AVX2(k int, a0, a1 []float32, b []float32, ldb, cols int, out *[64]float32) {
	if k == 0 || cols <= 0 {
		*out = [64]float32{}
		return
	}
	cols = min(cols, 32)
	_ = b[(k-1)*ldb+cols-1]
	strip2x32BlocksAVX2(k, a0[:k], a1[:k], b, ldb, cols, out[:])
}

// maxAVX2 is the kernels' max with AVX2: the largest element of x ignoring NaN, -Inf for an
// empty x or one of NaN only.
func maxAVX2(x []float32) float32 {
	n := len(x) &^ 7
	m := float32(math.Inf(-1))
	if n > 0 {
		m = maxBlocksAVX2(x[:n])
	}
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	return m
}

// softmaxGradAVX2 is the kernels' softmaxGrad with AVX: d[i] = p[i] * (d[i] - c).
func softmaxGradAVX2(p, d []float32, c float32) {
	d = d[:len(p)]
	n := len(p) &^ 7
	if n > 0 {
		softmaxGradBlocksAVX2(p[:n], d[:n], c)
	}
	for i := n; i < len(p); i++ {
		d[i] = p[i] * (d[i] - c)
	}
}

// dotAVX512 is Dot with AVX-512F.
func dotAVX512(x, y []float32) float32 {
	n := len(x) &^ 15
	s := dotBlocksAVX512(x[:n], y[:n])
	for i := n; i < len(x); i++ {
		s += x[i] * y[i]
	}
	return s
}

// axpyAVX512 is Axpy with AVX-512F.
func axpyAVX512(alpha float32, x, y []float32) {
	n := len(x) &^ 15
	axpyBlocksAVX512(alpha, x[:n], y[:n])
	for i := n; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}

// scalAVX512 is Scal with AVX-512F.
func scalAVX512(alpha float32, x []float32) {
	n := len(x) &^ 15
	scalBlocksAVX512(alpha, x[:n])
	for i := n; i < len(x); i++ {
		x[i] *= alpha
	}
}

// dotBlocksAVX2 returns the inner product of x and y, len(x) == len(y) a multiple of 8, summed
// in four 8-wide partial sums. It is equivalent to
//
//	var s float32
//	for i := range x {
//		s += x[i] * y[i]
//	}
//	return s
//
//go:noescape
func dotBlocksAVX2(x, y []float32) float32

// axpyBlocksAVX2 computes y += alpha*x, len(x) == len(y) a multiple of 8. It is equivalent to
//
//	for i := range x {
//		y[i] += alpha * x[i]
//	}
//
//go:noescape
func axpyBlocksAVX2(alpha float32, x, y []float32)

// scalBlocksAVX2 computes x *= alpha, len(x) a multiple of 8. It is equivalent to
//
//	for i := range x {
//		x[i] *= alpha
//	}
//
//go:noescape
func scalBlocksAVX2(alpha float32, x []float32)

// softmaxGradBlocksAVX2 computes d[i] = p[i] * (d[i] - c), len(p) == len(d) a multiple of 8.
// It is equivalent to
//
//	for i := range p {
//		d[i] = p[i] * (d[i] - c)
//	}
//
//go:noescape
func softmaxGradBlocksAVX2(p, d []float32, c float32)

// dot4BlocksAVX2 computes the inner products of rows 0-3 of a, at stride lda, with b, len(b) a
// multiple of 8, into out[0:4]. The caller guarantees len(a) >= 3*lda+len(b) and len(out) >= 4.
// It is equivalent to
//
//	for r := 0; r < 4; r++ {
//		var s float32
//		for p := range b {
//			s += a[r*lda+p] * b[p]
//		}
//		out[r] = s
//	}
//
//go:noescape
func dot4BlocksAVX2(a []float32, lda int, b []float32, out []float32)

// dot4x2BlocksAVX2 computes the inner products of rows 0-3 of a, at stride lda, with rows 0-1
// of b, at stride ldb, over their first k elements (k a multiple of 8), into out[0:8]. The
// caller guarantees len(a) >= 3*lda+k, len(b) >= ldb+k and len(out) >= 8. It is equivalent to
//
//	for c := 0; c < 2; c++ {
//		for r := 0; r < 4; r++ {
//			var s float32
//			for p := 0; p < k; p++ {
//				s += a[r*lda+p] * b[c*ldb+p]
//			}
//			out[c*4+r] = s
//		}
//	}
//
//go:noescape
func dot4x2BlocksAVX2(a []float32, lda int, b []float32, ldb, k int, out []float32)

// strip4x16BlocksAVX2 computes out[i*16+j] = sum_p a_i[p] * b[p*ldb+j] for i = 0-3 and
// j < cols, and 0 for j >= cols, reading no element of b beyond column cols-1 of each row. The
// caller guarantees 1 <= cols <= 16, len(a_i) >= k, len(b) >= (k-1)*ldb+cols and
// len(out) >= 64. It is equivalent to
//
//	for i, ai := range [][]float32{a0, a1, a2, a3} {
//		for j := 0; j < 16; j++ {
//			var s float32
//			for p := 0; p < k && j < cols; p++ {
//				s += ai[p] * b[p*ldb+j]
//			}
//			out[i*16+j] = s
//		}
//	}
//
//go:noescape
func strip4x16BlocksAVX2(k int, a0, a1, a2, a3 []float32, b []float32, ldb, cols int, out []float32)

// strip2x32BlocksAVX2 computes out[i*32+j] = sum_p a_i[p] * b[p*ldb+j] for i = 0-1 and
// j < cols, and 0 for j >= cols, reading no element of b beyond column cols-1 of each row. The
// caller guarantees 1 <= cols <= 32, len(a_i) >= k, len(b) >= (k-1)*ldb+cols and
// len(out) >= 64. It is equivalent to
//
//	for i, ai := range [][]float32{a0, a1} {
//		for j := 0; j < 32; j++ {
//			var s float32
//			for p := 0; p < k && j < cols; p++ {
//				s += ai[p] * b[p*ldb+j]
//			}
//			out[i*32+j] = s
//		}
//	}
//
//go:noescape
func strip2x32BlocksAVX2(k int, a0, a1 []float32, b []float32, ldb, cols int, out []float32)

// maxBlocksAVX2 returns the largest element of x, len(x) a positive multiple of 8, ignoring
// NaN (-Inf when every element is NaN). Up to the sign of a zero maximum it is equivalent to
//
//	m := float32(math.Inf(-1))
//	for _, v := range x {
//		if v > m {
//			m = v
//		}
//	}
//	return m
//
//go:noescape
func maxBlocksAVX2(x []float32) float32

// dotBlocksAVX512 returns the inner product of x and y, len(x) == len(y) a multiple of 16,
// summed in four 16-wide partial sums. It is equivalent to
//
//	var s float32
//	for i := range x {
//		s += x[i] * y[i]
//	}
//	return s
//
//go:noescape
func dotBlocksAVX512(x, y []float32) float32

// axpyBlocksAVX512 computes y += alpha*x, len(x) == len(y) a multiple of 16. It is equivalent to
//
//	for i := range x {
//		y[i] += alpha * x[i]
//	}
//
//go:noescape
func axpyBlocksAVX512(alpha float32, x, y []float32)

// scalBlocksAVX512 computes x *= alpha, len(x) a multiple of 16. It is equivalent to
//
//	for i := range x {
//		x[i] *= alpha
//	}
//
//go:noescape
func scalBlocksAVX512(alpha float32, x []float32)
