package model

import "agentr1/tensor"

// One decoder layer (HF Qwen2DecoderLayer), pre-norm with two residual branches:
//
//	h1 = x  + o_proj(attention(rope(q_proj(n1)), rope(k_proj(n1)), v_proj(n1)))   n1 = input_layernorm(x)
//	h2 = h1 + down_proj(silu(gate_proj(n2)) * up_proj(n2))                          n2 = post_attention_layernorm(h1)
//
// layerForward and layerBackward below are the two directions of that computation, step by
// step in mirrored order.

// view returns the activation buffers of layer l sliced to the current batch: N rows and
// B*Hq*T attention statistics. A lean forward pass (see Workspace) gives every layer the same
// slot.
func (ws *Workspace) view(l int) layerActs {
	cfg := ws.cfg
	N := ws.B * ws.T
	C, I := cfg.HiddenSize, cfg.IntermediateSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	a := ws.layers[0]
	if ws.kept {
		a = ws.layers[l]
	}
	return layerActs{
		rstd1: a.rstd1[:N],
		q:     a.q[:N*Q], k: a.k[:N*K], v: a.v[:N*K],
		stats: a.stats[:N*cfg.NumAttentionHeads*2], attn: a.attn[:N*Q],
		probs:  a.probs[:min(len(a.probs), ws.B*cfg.NumAttentionHeads*ws.T*ws.T)],
		resid1: a.resid1[:N*C], rstd2: a.rstd2[:N],
		gate: a.gate[:N*I], up: a.up[:N*I],
		resid2: a.resid2[:N*C],
	}
}

// layerInput returns the residual stream entering layer l (N, C): the embeddings, or the
// previous layer's output (in a lean pass, only while layer l has not run).
func (ws *Workspace) layerInput(l int) []float32 {
	N, C := ws.B*ws.T, ws.cfg.HiddenSize
	if l == 0 {
		return ws.embedded[:N*C]
	}
	return ws.view(l - 1).resid2
}

// layerForward runs decoder layer l on the residual stream x (N, C), saving its activations.
func (m *Model) layerForward(ws *Workspace, l int, x []float32) {
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
	tensor.RMSNormForward(norm, a.rstd1, x, p.inputNorm.Data, N, C, eps) // n1
	tensor.LinearForward(a.q, norm, p.q.Data, p.qBias.Data, N, C, Q)
	tensor.LinearForward(a.k, norm, p.k.Data, p.kBias.Data, N, C, K)
	tensor.LinearForward(a.v, norm, p.v.Data, p.vBias.Data, N, C, K)
	m.rope.Forward(a.q, ws.positions, N, Hq)
	m.rope.Forward(a.k, ws.positions, N, Hkv)
	if ws.probs {
		tensor.AttentionForward(a.attn, a.probs, a.q, a.k, a.v, ws.mask, B, T, Hq, Hkv, D)
	} else {
		tensor.AttentionForwardStats(a.attn, a.stats, a.q, a.k, a.v, ws.mask, B, T, Hq, Hkv, D)
	}
	// resid1 (N, C) = x + attn (N, Q) @ o_proj (C, Q)^T
	copy(a.resid1, x)
	tensor.Gemm(false, true, N, C, Q, 1, a.attn, Q, p.o.Data, Q, 1, a.resid1, C)

	// MLP branch.
	tensor.RMSNormForward(norm, a.rstd2, a.resid1, p.postNorm.Data, N, C, eps) // n2
	tensor.LinearForward(a.gate, norm, p.gate.Data, nil, N, C, I)
	tensor.LinearForward(a.up, norm, p.up.Data, nil, N, C, I)
	// resid2 (N, C) = resid1 + act (N, I) @ down_proj (C, I)^T, act = silu(gate) * up formed
	// mlpChunk rows at a time in a buffer shared by all layers.
	copy(a.resid2, a.resid1)
	for r0 := 0; r0 < N; r0 += mlpChunk {
		n := min(mlpChunk, N-r0)
		act := ws.act[:n*I] // (n, I)
		tensor.SwiGLUForward(act, a.gate[r0*I:(r0+n)*I], a.up[r0*I:(r0+n)*I])
		tensor.Gemm(false, true, n, C, I, 1, act, I, p.down.Data, I, 1, a.resid2[r0*C:], C)
	}
}

// mlpChunk is the number of rows the MLP's SwiGLU product and its backward pass handle at a
// time: their (rows, I) buffers, four of them in backward, would otherwise hold every row of a
// long batch (40 rows x 600 tokens x I) at once. A variable so that tests can make it small.
var mlpChunk = 4096

// layerBackward back-propagates through decoder layer l, whose input was x (N, C). On entry
// ws.dres (N, C) holds d(loss)/d(resid2); on return it holds d(loss)/d(x). Parameter gradients
// accumulate into the layer's Param.Grad.
func (m *Model) layerBackward(ws *Workspace, l int, x []float32) {
	cfg := m.Config
	B, T, N := ws.B, ws.T, ws.B*ws.T
	C, I, D := cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadSize()
	Hq, Hkv := cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	Q, K := Hq*D, Hkv*D
	eps := float32(cfg.RMSNormEps)
	p := &m.layers[l]
	a := ws.view(l)
	norm := ws.norm[:N*C]
	dres := ws.dres[:N*C]
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
	if ws.probs {
		tensor.AttentionBackward(dq, dk, dv, dattn, a.probs, a.q, a.k, a.v, B, T, Hq, Hkv, D)
	} else {
		tensor.AttentionBackwardStats(dq, dk, dv, dattn, a.stats, a.q, a.k, a.v, ws.mask, B, T, Hq, Hkv, D)
	}
	m.rope.Backward(dq, ws.positions, N, Hq)
	m.rope.Backward(dk, ws.positions, N, Hkv)
	tensor.RMSNormForward(norm, a.rstd1, x, p.inputNorm.Data, N, C, eps) // n1, recomputed
	// dnorm (N, C) = dq @ q_proj + dk @ k_proj + dv @ v_proj
	tensor.Gemm(false, false, N, C, Q, 1, dq, Q, p.q.Data, C, 0, dnorm, C)
	tensor.LinearBackward(nil, p.q.Grad, p.qBias.Grad, dq, norm, p.q.Data, N, C, Q)
	tensor.LinearBackward(dnorm, p.k.Grad, p.kBias.Grad, dk, norm, p.k.Data, N, C, K)
	tensor.LinearBackward(dnorm, p.v.Grad, p.vBias.Grad, dv, norm, p.v.Data, N, C, K)
	tensor.RMSNormBackward(dres, p.inputNorm.Grad, dnorm, x, p.inputNorm.Data, a.rstd1, N, C)
}

// forwardTrunk embeds a left-padded batch and runs every decoder layer and the final norm,
// leaving the final hidden states in ws.final. Its callers check the batch first (checkBatch).
func (m *Model) forwardTrunk(ws *Workspace, tokens []int, attentionMask []float32, B, T int) {
	cfg := m.Config
	ws.prepare(cfg, B, T)
	N, C := B*T, cfg.HiddenSize
	copy(ws.tokens, tokens)
	copy(ws.mask, attentionMask)
	// Positions as HF builds them for left padding: position_ids = cumsum(mask) - 1, with
	// padding at 0 (the reference masks them; they never reach a real token).
	for b := range B {
		seen := 0
		for t := range T {
			i := b*T + t
			if attentionMask[i] != 0 {
				ws.positions[i] = seen
				seen++
			} else {
				ws.positions[i] = 0
			}
		}
	}
	x := ws.embedded[:N*C]
	tensor.EmbeddingForward(x, m.embed.Data, ws.tokens, C)
	for l := range m.layers {
		m.layerForward(ws, l, x)
		x = ws.view(l).resid2
	}
	tensor.RMSNormForward(ws.final[:N*C], ws.finalR[:N], x, m.norm.Data, N, C, float32(cfg.RMSNormEps))
}

// backwardTrunk back-propagates d(loss)/d(final hidden states), held in ws.dfinal (N, C),
// through the final norm, every layer and the embedding.
func (m *Model) backwardTrunk(ws *Workspace) {
	N, C := ws.B*ws.T, m.Config.HiddenSize
	L := len(m.layers)
	dres := ws.dres[:N*C]
	clear(dres)
	tensor.RMSNormBackward(dres, m.norm.Grad, ws.dfinal[:N*C], ws.layerInput(L), m.norm.Data, ws.finalR[:N], N, C)
	for l := L - 1; l >= 0; l-- {
		m.layerBackward(ws, l, ws.layerInput(l))
	}
	tensor.EmbeddingBackward(m.embed.Grad, dres, ws.tokens, C)
}

// keepActivations, called by every Backward before it touches its buffers, makes sure ws holds every layer's activations of its last forward pass: after
// a lean pass (see Workspace) it switches ws to keeping them and runs the trunk again on the
// saved tokens and mask, and the head's probabilities over the same chunks. Both are
// deterministic, so the final hidden states and everything the head computed from them stay
// exactly as they were.
func (m *Model) keepActivations(ws *Workspace) {
	if ws.kept {
		return
	}
	owner, pass := ws.owner, ws.pass
	tokens := append([]int(nil), ws.tokens...)
	mask := append([]float32(nil), ws.mask...)
	ws.keep = true
	m.forwardTrunk(ws, tokens, mask, ws.B, ws.T)
	ws.owner, ws.pass = owner, pass
	if pass == passLogp {
		m.headForward(ws, false) // keep the head's probabilities too, where they fit
	}
}
