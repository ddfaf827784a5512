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
// programming error, not bad input. Gradient slices may be nil when not wanted.
//
// Every operation the model runs has a plain reference loop in package tensor/ref, the
// definition the kernels here are tested against; AGENTR1_KERNELS=ref (see KernelName) runs
// each of them on those loops instead (dispatch_ref.go). The policy's output head fuses
// log-probs and entropy (model/head.go) and is tested against ref's loops of the same. The
// PyTorch-parity operations that the model does not use (elementwise and broadcast add/mul,
// the masked cross entropy and mean, the Tensor type) exist for the golden cases of
// torch_ops.json, which package golden/torchops runs; they are scalar loops with no SIMD kernel
// to hold to a reference.
//
// Where things are: tensor.go (the Tensor type), matmul.go and linear.go (over Gemm),
// elementwise.go and broadcast.go (broadcasting add/mul), softmax.go, rmsnorm.go, activation.go (SiLU, SwiGLU),
// rope.go, attention.go (training attention, keeping the weights or only per-row statistics),
// attention_decode.go (one decoding position against a KV cache), embedding.go, loss.go
// (log-probs, entropy, masked cross entropy, masked mean), optim.go (AdamW, ClipGradNorm),
// exp.go (the exponential of the softmax loops), gemm*.go (Gemm's drivers, packing, and
// PackedB/GemmPacked for a B packed once and reused). Large kernels split rows, columns or
// heads across Workers() goroutines with Parallel (the caller and a pool of long-lived helpers),
// always so that each goroutine owns the gradient elements it writes and the split depends only
// on the sizes and Workers(), so results are the same from run to run. Shards runs independent
// pieces of work (a batch cut into groups of rows) one goroutine each, with every kernel inside
// single-threaded.
package tensor
