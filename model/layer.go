package model

import "agentr1/tensor"

// One decoder layer (HF Qwen2DecoderLayer), pre-norm with two residual branches:
//
//	h1 = x  + o_proj(attention(rope(q_proj(n1)), rope(k_proj(n1)), v_proj(n1)))   n1 = input_layernorm(x)
//	h2 = h1 + down_proj(silu(gate_proj(n2)) * up_proj(n2))                          n2 = post_attention_layernorm(h1)
//
// A Qwen3 layer (HF Qwen3DecoderLayer) has no q/k/v biases and normalises every query and key
// head vector (D) before the rotation: rope(q_norm(q_proj(n1))), rope(k_norm(k_proj(n1))),
// each an RMSNorm over D with its own weight (D) shared by all heads.
//
// layerForward and layerBackward below are the two directions of that computation, step by
// step in mirrored order.
//
// The same layer is written a second time: Decoder.forward (decoder.go) computes it token by
// token against a KV cache, and in reinforcement learning its sampled log-probabilities are
// the old log-probs of most steps (rl/trainer's default OldLogProbsSampled), PPO's ratio's
// denominator. TestDecoderMatchesForward holds the two copies' logits together, and
// TestSampledLogprobMatchesForward the sampled log-probs to Forward's.

// layerForward runs decoder layer l on the residual stream x (N, C), saving its activations,
// and returns the residual stream leaving it (N, C).
func (m *Model) layerForward(ws *Workspace, l int, x []float32) []float32 {
	cfg := m.Config
	B, T, N := ws.B, ws.T, ws.B*ws.T
	C, I, D := cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadSize()
	Hq, Hkv := cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	Q, K := Hq*D, Hkv*D
	eps := float32(cfg.RMSNormEps)
	p := &m.layers[l]
	a := ws.view(l)
	norm := ws.norm[:N*C] // shared by all layers; backward recomputes it

	// Attention branch. In a lean pass x may be this slot's resid2: it is read for the last
	// time by the copy into resid1, before resid2 is written.
	tensor.RMSNormForward(norm, a.rstd1, x, p.inputNorm.Data, N, C, eps) // n1 (N, C)
	linearForward(a.qProj, norm, p.q, p.qBias, N, C, Q)                  // (N, Hq, D)
	linearForward(a.kProj, norm, p.k, p.kBias, N, C, K)                  // (N, Hkv, D)
	linearForward(a.v, norm, p.v, p.vBias, N, C, K)                      // (N, Hkv, D)
	if p.qNorm != nil {                                                  // Qwen3: an RMSNorm over each head vector, rows (N*H, D)
		tensor.RMSNormForward(a.q, a.qRstd, a.qProj, p.qNorm.Data, N*Hq, D, eps)
		tensor.RMSNormForward(a.k, a.kRstd, a.kProj, p.kNorm.Data, N*Hkv, D, eps)
	}
	m.rope.Forward(a.q, ws.positions, N, Hq) // in place
	m.rope.Forward(a.k, ws.positions, N, Hkv)
	ws.attentionForward(a, B, T, Hq, Hkv, D) // a.attn (N, Hq, D), weights kept or recomputed (recompute.go)
	// resid1 (N, C) = x + attn (N, Q) @ o_proj (C, Q)^T
	copy(a.resid1, x)
	linearAccumulate(a.resid1, a.attn, p.o, N, Q, C)

	// MLP branch.
	tensor.RMSNormForward(norm, a.rstd2, a.resid1, p.postNorm.Data, N, C, eps) // n2 (N, C)
	linearForward(a.gate, norm, p.gate, nil, N, C, I)                          // (N, I)
	linearForward(a.up, norm, p.up, nil, N, C, I)                              // (N, I)
	// resid2 (N, C) = resid1 + act (N, I) @ down_proj (C, I)^T, act = silu(gate) * up formed
	// mlpChunk rows at a time in a buffer shared by all layers.
	copy(a.resid2, a.resid1)
	for r0 := 0; r0 < N; r0 += mlpChunk {
		n := min(mlpChunk, N-r0)
		act := ws.act[:n*I] // (n, I)
		tensor.SwiGLUForward(act, a.gate[r0*I:(r0+n)*I], a.up[r0*I:(r0+n)*I])
		linearAccumulate(a.resid2[r0*C:(r0+n)*C], act, p.down, n, I, C)
	}
	return a.resid2
}

// mlpChunk is the number of rows the MLP's SwiGLU product and its backward pass handle at a
// time: their (rows, I) buffers, four of them in backward, would otherwise hold every row of a
// long batch (40 rows x 600 tokens x I) at once. A variable so that tests can make it small.
var mlpChunk = 4096

// layerBackward back-propagates through decoder layer l, whose input was x (N, C). On entry
// dres (N, C) holds d(loss)/d(resid2); on return it holds d(loss)/d(x). Parameter gradients
// accumulate into the layer's Param.Grad.
func (m *Model) layerBackward(ws *Workspace, l int, x, dres []float32) {
	cfg := m.Config
	B, T, N := ws.B, ws.T, ws.B*ws.T
	C, I, D := cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadSize()
	Hq, Hkv := cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	Q, K := Hq*D, Hkv*D
	eps := float32(cfg.RMSNormEps)
	p := &m.layers[l]
	a := ws.view(l)
	norm := ws.norm[:N*C]
	dnorm := ws.dnorm[:N*C]
	dq, dk, dv, dattn := ws.dq[:N*Q], ws.dk[:N*K], ws.dv[:N*K], ws.dattn[:N*Q]

	// MLP branch, in reverse, mlpChunk rows at a time; the residual passes dres through
	// unchanged. The chunk's RMSNorm output n2 and SwiGLU product are recomputed, bit for bit
	// as the forward pass made them.
	for r0 := 0; r0 < N; r0 += mlpChunk {
		n := min(mlpChunk, N-r0)
		resid1, rstd2 := a.resid1[r0*C:(r0+n)*C], a.rstd2[r0:r0+n] // (n, C), (n)
		gate, up := a.gate[r0*I:(r0+n)*I], a.up[r0*I:(r0+n)*I]     // (n, I)
		dresC, dnormC, normC := dres[r0*C:(r0+n)*C], dnorm[r0*C:(r0+n)*C], norm[r0*C:(r0+n)*C]
		act, dgate, dup, dact := ws.act[:n*I], ws.dgate[:n*I], ws.dup[:n*I], ws.dact[:n*I]
		tensor.RMSNormForward(normC, rstd2, resid1, p.postNorm.Data, n, C, eps) // n2
		tensor.SwiGLUForward(act, gate, up)
		// dact (n, I) = dres (n, C) @ down_proj (C, I)
		tensor.Gemm(false, false, n, I, C, 1, dresC, C, p.down.Data, I, 0, dact, I)
		tensor.LinearBackward(nil, p.down.Grad, nil, dresC, act, p.down.Data, n, I, C)
		clear(dgate)
		clear(dup)
		tensor.SwiGLUBackward(dgate, dup, dact, gate, up)
		// dnorm (n, C) = dgate (n, I) @ gate_proj (I, C) + dup @ up_proj
		tensor.Gemm(false, false, n, C, I, 1, dgate, I, p.gate.Data, C, 0, dnormC, C)
		tensor.LinearBackward(dnormC, p.up.Grad, nil, dup, normC, p.up.Data, n, C, I)
		tensor.LinearBackward(nil, p.gate.Grad, nil, dgate, normC, p.gate.Data, n, C, I)
		tensor.RMSNormBackward(dresC, p.postNorm.Grad, dnormC, resid1, p.postNorm.Data, rstd2, n, C)
	}

	// Attention branch, in reverse; dres now holds d(loss)/d(resid1).
	// dattn (N, Q) = dres (N, C) @ o_proj (C, Q)
	tensor.Gemm(false, false, N, Q, C, 1, dres, C, p.o.Data, Q, 0, dattn, Q)
	tensor.LinearBackward(nil, p.o.Grad, nil, dres, a.attn, p.o.Data, N, Q, C)
	clear(dq)
	clear(dk)
	clear(dv)
	ws.attentionBackward(a, dq, dk, dv, dattn, B, T, Hq, Hkv, D)
	m.rope.Backward(dq, ws.positions, N, Hq)
	m.rope.Backward(dk, ws.positions, N, Hkv)
	if p.qNorm != nil { // Qwen3: back through the per-head RMSNorms to the projections
		dqProj, dkProj := ws.dqProj[:N*Q], ws.dkProj[:N*K]
		clear(dqProj)
		clear(dkProj)
		tensor.RMSNormBackward(dqProj, p.qNorm.Grad, dq, a.qProj, p.qNorm.Data, a.qRstd, N*Hq, D)
		tensor.RMSNormBackward(dkProj, p.kNorm.Grad, dk, a.kProj, p.kNorm.Data, a.kRstd, N*Hkv, D)
		dq, dk = dqProj, dkProj
	}
	tensor.RMSNormForward(norm, a.rstd1, x, p.inputNorm.Data, N, C, eps) // n1, recomputed
	// dnorm (N, C) = dq @ q_proj + dk @ k_proj + dv @ v_proj
	tensor.Gemm(false, false, N, C, Q, 1, dq, Q, p.q.Data, C, 0, dnorm, C)
	tensor.LinearBackward(nil, p.q.Grad, grad(p.qBias), dq, norm, p.q.Data, N, C, Q)
	tensor.LinearBackward(dnorm, p.k.Grad, grad(p.kBias), dk, norm, p.k.Data, N, C, K)
	tensor.LinearBackward(dnorm, p.v.Grad, grad(p.vBias), dv, norm, p.v.Data, N, C, K)
	tensor.RMSNormBackward(dres, p.inputNorm.Grad, dnorm, x, p.inputNorm.Data, a.rstd1, N, C)
}
