package model

import "agentr1/tensor"

// Keep or recompute: what a forward pass saves for its backward pass, and what backward
// computes again instead. Every recomputation here runs the same kernels on the same inputs
// in the same order as the forward pass did, so it gives the same values bit for bit: the
// choice costs time or memory, never a difference in the result.
//
//   - A lean workspace (one that has never run a Backward) keeps one layer's activations,
//     reused layer after layer; its first Backward runs the forward pass again keeping every
//     layer's (recomputeActivations).
//   - Attention keeps its weights (B, Hq, T, T) while they fit Workspace.MaxKeptAttention, and
//     otherwise two statistics per query row from which backward rebuilds them block by block
//     (attentionForward, attentionBackward).
//   - The head keeps its next-token probabilities while they fit Workspace.MaxKeptProbs, and
//     otherwise backward recomputes them chunk by chunk from the final hidden states
//     (headChunkProbs).
//   - Inside a layer, the RMSNorm outputs and the SwiGLU product are always recomputed in
//     backward (layer.go), into buffers shared by all layers.

// recomputeActivations, called by every backward pass before it touches its buffers, makes
// sure ws holds every layer's activations of its last forward pass: after a lean pass it
// switches ws to keeping them and runs the trunk again on the saved tokens and mask, and the
// head's probabilities over the same chunks. Both are deterministic, so the final hidden
// states and everything the head computed from them stay exactly as they were.
func (m *Model) recomputeActivations(ws *Workspace) {
	if ws.kept {
		return
	}
	owner, pass := ws.owner, ws.pass
	tokens := append([]int(nil), ws.tokens...)
	mask := append([]float32(nil), ws.mask...)
	ws.keep = true
	m.trunkForward(ws, tokens, mask, ws.B, ws.T)
	ws.owner, ws.pass = owner, pass
	if pass == passLogp {
		m.headChunks(ws, false) // keep the head's probabilities too, where they fit
	}
}

// attentionForward computes layer activations a's attention output a.attn (N, Hq, D) from its
// queries, keys and values, keeping the attention weights in a.attnWeights when the workspace keeps
// them and two statistics per query row in a.stats otherwise.
func (ws *Workspace) attentionForward(a layerActs, B, T, Hq, Hkv, D int) {
	if ws.keptAttention {
		tensor.AttentionForward(a.attn, a.attnWeights, a.q, a.k, a.v, ws.mask, B, T, Hq, Hkv, D)
		return
	}
	tensor.AttentionForwardStats(a.attn, a.stats, a.q, a.k, a.v, ws.mask, B, T, Hq, Hkv, D)
}

// attentionBackward accumulates into dq, dk, dv the gradients of attention given dattn =
// d(loss)/d(a.attn), from the kept weights or, rebuilding them, from the statistics.
func (ws *Workspace) attentionBackward(a layerActs, dq, dk, dv, dattn []float32, B, T, Hq, Hkv, D int) {
	if ws.keptAttention {
		tensor.AttentionBackward(dq, dk, dv, dattn, a.attnWeights, a.q, a.k, a.v, B, T, Hq, Hkv, D)
		return
	}
	tensor.AttentionBackwardStats(dq, dk, dv, dattn, a.stats, a.q, a.k, a.v, ws.mask, B, T, Hq, Hkv, D)
}

// headChunkProbs writes into probs (n, V) the next-token probabilities of one chunk of the
// head's rows (active indexes ws.head.rows; rows and labels are those rows and their labels):
// a copy of the kept probabilities, or recomputed from the final hidden states. withLogits
// asks for the logits too (the entropy's gradient needs log p_j = z_j - logsumexp(z)): they
// are recomputed into ws.head.z with the probabilities, one matrix product, rather than
// taking V logarithms of the kept probabilities per row.
func (m *Model) headChunkProbs(ws *Workspace, active, rows, labels []int, probs []float32, withLogits bool) {
	h := &ws.head
	V := m.Config.VocabSize
	if h.keptProbs && !withLogits {
		for i, k := range active {
			copy(probs[i*V:(i+1)*V], h.probs[k*V:(k+1)*V])
		}
		return
	}
	m.headProbs(ws, rows, labels, probs, false)
}
