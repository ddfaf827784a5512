// Package model is agentr1's policy and value model: the Qwen2 architecture (Hugging Face
// Qwen2ForCausalLM) at any size, trainable on the CPU and compatible with Hugging Face
// checkpoints, and its Qwen3 variant (Qwen3ForCausalLM: no q/k/v biases, an RMSNorm of each
// query and key head vector before the rotary embedding, and a head size of its own).
//
// # Where to start reading
//
// Open forward.go first: Model.Forward and Model.Backward are the architecture top to bottom
// (embedding, the decoder layers, the final norm, the head) and the same steps in reverse.
// Then layer.go, one decoder layer's forward and backward passes side by side (RMSNorm,
// q/k/v projections, RoPE, attention, o_proj, residual, RMSNorm, SwiGLU MLP, residual), and
// head.go, the output head fused with the log-probability and entropy reductions that
// reinforcement learning needs, so the (B, T, V) logits are never materialised. The
// parameters are named tensors with their Hugging Face names in one allocation (params.go).
// The kernels themselves (matrix products, RMSNorm, RoPE, attention, softmax) come from
// package tensor.
//
// The speed machinery sits in files a first reading can skip: shard.go cuts a batch into
// groups of rows run at once, one core each, with their gradients summed; recompute.go
// decides which activations a forward pass keeps for backward and which backward computes
// again (bit for bit the same); workspace.go holds those buffers, sized once per batch shape
// and reused across steps.
//
// The seam to package rl is Forward/Backward: Forward returns log p(token_t | tokens_<t) and the
// entropy of each predictive distribution over a left-padded batch; Backward takes
// d(loss)/d(logp) and d(loss)/d(entropy) and accumulates every parameter's gradient. The
// Critic (critic.go) is the same trunk with a scalar value head, as verl's critic.
//
// Inference runs through a Decoder (decoder.go): per-row KV caches, prefill with Append or,
// for several rows at once on all cores, AppendRows (prompts and, between turns, tool
// observations), batched Step, weight matrices packed once
// for the step's small products (decoder_weights.go), and Sampler (sampler.go) for
// temperature, top-k, top-p or greedy sampling with the log-prob of each sampled token.
//
// Checkpoints are Hugging Face folders: config.json (config.go) and safetensors files
// (safetensors.go, written here from the format's definition), sharded or not, in F32, BF16 or
// F16; Save writes what transformers' from_pretrained loads unchanged.
package model
