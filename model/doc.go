// Package model is agentr1's policy and value model: the Qwen2 architecture (Hugging Face
// Qwen2ForCausalLM) at any size, trainable on the CPU and compatible with Hugging Face
// checkpoints.
//
// It is written in the manner of llm.c. The parameters are named tensors with their Hugging
// Face names in one allocation (params.go); a Workspace holds the activations of a batch shape
// that backward needs, recomputing the cheap ones (and, for long rows, the attention weights)
// rather than keeping them, and is reused across steps (workspace.go); each decoder layer has
// an explicit forward
// and backward pass side by side (layer.go); the output head is fused with the log-probability
// and entropy reductions that reinforcement learning needs, so the (B, T, V) logits are never
// materialised (head.go). On two or more cores a batch runs as groups of rows at once, one core
// each, with their gradients summed (shard.go). The kernels themselves (matrix products, RMSNorm, RoPE, attention,
// softmax) come from package tensor.
//
// The seam to package rl is Forward/Backward: Forward returns log p(token_t | tokens_<t) and the
// entropy of each predictive distribution over a left-padded batch; Backward takes
// d(loss)/d(logp) and d(loss)/d(entropy) and accumulates every parameter's gradient. The
// Critic (critic.go) is the same trunk with a scalar value head, as verl's critic.
//
// Inference runs through a Decoder (decoder.go): per-row KV caches, prefill with Append
// (prompts and, between turns, tool observations), batched Step, weight matrices packed once
// for the step's small products (decoder_weights.go), and Sampler (sampler.go) for
// temperature, top-k, top-p or greedy sampling with the log-prob of each sampled token.
//
// Checkpoints are Hugging Face folders: config.json (config.go) and safetensors files
// (safetensors.go, written here from the format's definition), sharded or not, in F32, BF16 or
// F16; Save writes what transformers' from_pretrained loads unchanged.
package model
