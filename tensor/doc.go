// Package tensor holds agentr1's float32 tensors and the kernels of a Qwen2 decoder: matrix
// multiplication (Gemm, with SIMD micro-kernels chosen at run time), linear layers, RMSNorm,
// SiLU/SwiGLU, rotary embeddings, causal grouped-query attention, embeddings, softmax, log-probs,
// entropy, masked losses, AdamW and gradient clipping.
//
// Kernels work on flat row-major []float32 slices with explicit dimensions, in the manner of
// llm.c: the caller owns every buffer, so a training step can reuse them and allocate nothing
// large. Each forward function sits beside its backward function in the same file; backward
// functions accumulate into gradient buffers with += unless their comment says otherwise.
// Shapes are given in comments as (n, d) and so on. Kernels panic with a message naming the
// function and the mismatch when slice lengths do not match the dimensions: that is a
// programming error, not bad input.
package tensor
