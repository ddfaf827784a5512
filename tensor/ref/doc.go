// Package ref is the plain reference for every tensor operation agentr1's model uses: one short
// loop per operation, its backward beside its forward, written to be read.
//
// Each function is the definition of its operation (the formula and its source are in its doc
// comment) with nothing else: no unrolled loops, no vector lanes, no cache blocking, no
// goroutines. Shapes are row-major and named in comments, e.g. x: (n, d) is n rows of d.
// Backward functions accumulate into their gradients (+=), as in llm.c, except RoPEBackward,
// which rotates its gradient in place; a nil gradient is skipped.
//
// The functions are generic over float32 and float64 (golang.org/x/exp/constraints.Float).
// Reductions (sums of products, sums of exponentials) are accumulated in float64 whatever F is,
// so the float32 instantiation is at least as accurate as the fast kernels, and the float64
// instantiation is the one the finite-difference checks differentiate.
//
// The package has three uses:
//
//   - a reader learns each operation here, without reading the fast kernels in package tensor;
//   - AGENTR1_KERNELS=ref makes package tensor run every operation through these loops, so the
//     whole model trains (slowly) on them;
//   - tests hold every fast kernel set (generic, avx2, avx512) to these results at a stated
//     tolerance.
//
// Functions panic on slices too short for their dimensions (an index out of range): they are
// called by package tensor, which checks its arguments first.
package ref
