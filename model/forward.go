package model

import (
	"fmt"
	"math"

	"agentr1/tensor"
)

// The model, top to bottom (Hugging Face Qwen2ForCausalLM; Qwen3ForCausalLM differs only
// inside the layer's attention, layer.go), over a left-padded batch of N = B*T positions:
//
//	x        = embed_tokens[tokens]                      (N, C)    the residual stream
//	x        = layer_l(x)   for l = 0, 1, ..., L-1       (N, C)    layer.go
//	final    = norm(x)                                   (N, C)    the final hidden states
//	logp, H  = head(final)                               (B, T)    head.go: lm_head, log-softmax, entropy
//
// Backward runs the same steps in reverse: the head's gradient with respect to the final
// hidden states, the final norm's, each layer's from the last to the first, and the
// embedding's, accumulating every parameter's gradient on the way.
//
// This file is the architecture and nothing else. Two pieces of speed machinery wrap it and
// live in their own files: data parallelism over the rows of a batch (shard.go: Forward and
// Backward run forward and backward below on groups of rows at once, one core each), and
// keep-or-recompute of activations (recompute.go: a workspace that has never run a Backward
// keeps one layer's activations; the attention weights and the head's probabilities are kept
// when they fit and recomputed otherwise).

// Forward runs the model over a left-padded batch tokens (B, T) with attentionMask (B, T)
// (1 = real token, 0 = padding; positions are cumsum(mask)-1 as Hugging Face builds them) and
// returns, both (B, T):
//
//	logp[b,t]    = log p(tokens[b,t] | tokens[b,<t])
//	entropy[b,t] = entropy of that predictive distribution
//
// for every t >= 1 with mask[b,t-1] = mask[b,t] = 1, and 0 elsewhere (t = 0, padding, and the
// first real token of a row, which has no real context). The results are views into ws, valid
// until its next Forward. With ws.Temperature set, both are those of softmax(logits/τ). It
// panics if a length does not match B*T, a token is outside the vocabulary, T exceeds
// max_position_embeddings or ws.Temperature is negative or not finite.
func (m *Model) Forward(ws *Workspace, tokens []int, attentionMask []float32, B, T int) (logp, entropy []float32) {
	checkBatch("model.Forward", m.Config, tokens, attentionMask, B, T)
	checkTemperature("model.Forward", ws.Temperature)
	return m.forwardInShards(ws, tokens, attentionMask, B, T) // forward below, on each group of rows (shard.go)
}

// forward is Forward on one group of rows: the trunk, then the fused head.
func (m *Model) forward(ws *Workspace, tokens []int, attentionMask []float32, B, T int) (logp, entropy []float32) {
	m.trunkForward(ws, tokens, attentionMask, B, T) // ws.final (N, C): the final hidden states
	ws.owner, ws.pass = m, passLogp
	return m.headForward(ws, tokens, attentionMask) // (B, T), (B, T)
}

// Backward accumulates into every Param.Grad the gradient of a loss L given dlogp = dL/dlogp
// and dentropy = dL/dentropy (both (B, T), either may be nil) for the batch of the last
// Forward on ws. It may be called more than once per Forward (gradients add up). It panics if
// ws does not hold a Forward of m or a slice has the wrong length.
func (m *Model) Backward(ws *Workspace, dlogp, dentropy []float32) {
	if ws.owner != m || ws.pass != passLogp {
		panic("model.Backward: the workspace does not hold a Forward of this model")
	}
	if N := ws.B * ws.T; (dlogp != nil && len(dlogp) != N) || (dentropy != nil && len(dentropy) != N) {
		panic(fmt.Sprintf("model.Backward: dlogp has %d and dentropy %d elements, want %d (B*T)", len(dlogp), len(dentropy), N))
	}
	m.EnableTraining()
	m.backwardInShards(ws, dlogp, dentropy) // backward below, on each group of rows (shard.go)
}

// backward is Backward on one group of rows: the fused head in reverse, then the trunk.
func (m *Model) backward(ws *Workspace, dlogp, dentropy []float32) {
	m.recomputeActivations(ws) // a lean Forward kept one layer's activations (recompute.go)
	ws.prepareBackward()
	dfinal := m.headBackward(ws, dlogp, dentropy) // (N, C) dL/d(final hidden states)
	m.trunkBackward(ws, dfinal)
}

// trunkForward embeds a left-padded batch, runs every decoder layer and the final norm, and
// returns the final hidden states (N, C), a view of ws.final. Its callers check the batch
// first (checkBatch).
func (m *Model) trunkForward(ws *Workspace, tokens []int, attentionMask []float32, B, T int) []float32 {
	cfg := m.Config
	N, C := B*T, cfg.HiddenSize
	ws.prepare(cfg, B, T)
	copy(ws.tokens, tokens)
	copy(ws.mask, attentionMask)
	PositionIDs(ws.positions, attentionMask, B, T)

	x := ws.embedded[:N*C]
	m.embedTokens(x, ws.tokens) // x (N, C) = embed_tokens[tokens]
	for l := range m.layers {
		x = m.layerForward(ws, l, x) // (N, C) the residual stream leaving layer l
	}
	final := ws.final[:N*C]
	tensor.RMSNormForward(final, ws.finalR[:N], x, m.norm.Data, N, C, float32(cfg.RMSNormEps)) // (N, C)
	return final
}

// trunkBackward back-propagates dfinal = dL/d(final hidden states) (N, C) through the final
// norm, every layer from the last to the first, and the embedding.
func (m *Model) trunkBackward(ws *Workspace, dfinal []float32) {
	N, C := ws.B*ws.T, m.Config.HiddenSize
	L := len(m.layers)
	dx := ws.dres[:N*C] // (N, C) dL/d(residual stream), carried down through the layers
	clear(dx)
	tensor.RMSNormBackward(dx, m.norm.Grad, dfinal, ws.layerInput(L), m.norm.Data, ws.finalR[:N], N, C)
	for l := L - 1; l >= 0; l-- {
		m.layerBackward(ws, l, ws.layerInput(l), dx) // dx: dL/d(layer l's output) -> dL/d(its input)
	}
	tensor.EmbeddingBackward(m.embed.Grad, dx, ws.tokens, C)
}

// PositionIDs writes into positions (B, T) the rotary position of every token of a left-padded
// batch with attentionMask (B, T) (1 = real token, 0 = padding): cumsum(mask) - 1 along each
// row, as Hugging Face builds position_ids for left padding, and 0 on padding (attention masks
// padding, so its position never reaches a real token). A row's first real token is at position
// 0 however much padding precedes it. Forward, ForwardLogits and the Critic take their positions
// from it.
//
// Source: verl utils/model.compute_position_id_with_mask, clip(cumsum(mask) - 1, min=0), which
// it equals on left-padded rows. It panics if a slice is shorter than B*T.
func PositionIDs(positions []int, attentionMask []float32, B, T int) {
	for b := range B {
		seen := 0
		for t := range T {
			i := b*T + t
			if attentionMask[i] != 0 {
				positions[i] = seen
				seen++
			} else {
				positions[i] = 0
			}
		}
	}
}

// ForwardLogits runs the model over a left-padded batch as Forward does and returns the full
// logits (B, T, V) (a view into ws, valid until its next Forward), for supervised fine-tuning
// and the golden checks of golden/qwen. It never splits the batch across cores. It panics as
// Forward does.
func (m *Model) ForwardLogits(ws *Workspace, tokens []int, attentionMask []float32, B, T int) []float32 {
	checkBatch("model.ForwardLogits", m.Config, tokens, attentionMask, B, T)
	N, V, C := B*T, m.Config.VocabSize, m.Config.HiddenSize
	final := m.trunkForward(ws, tokens, attentionMask, B, T) // (N, C)
	ws.owner, ws.pass = m, passLogits
	ws.logits = grow(ws.logits, N*V)
	linearForward(ws.logits, final, m.lmHead, nil, N, C, V) // (N, V)
	return ws.logits
}

// BackwardLogits accumulates into every Param.Grad the gradient of a loss given
// dlogits = dL/dlogits (B, T, V) for the batch of the last ForwardLogits on ws. It panics if ws
// does not hold a forward pass of m or dlogits has the wrong length.
func (m *Model) BackwardLogits(ws *Workspace, dlogits []float32) {
	N, V, C := ws.B*ws.T, m.Config.VocabSize, m.Config.HiddenSize
	if ws.owner != m || ws.pass != passLogits {
		panic("model.BackwardLogits: the workspace does not hold a ForwardLogits of this model")
	}
	if len(dlogits) != N*V {
		panic(fmt.Sprintf("model.BackwardLogits: dlogits has %d elements, want %d (B*T*V)", len(dlogits), N*V))
	}
	m.EnableTraining()
	m.recomputeActivations(ws)
	ws.prepareBackward()
	final, dfinal := ws.final[:N*C], ws.dfinal[:N*C]
	// dfinal (N, C) = dlogits (N, V) @ lm_head (V, C); dlm_head += dlogits^T @ final
	tensor.Gemm(false, false, N, C, V, 1, dlogits, V, m.lmHead.Data, C, 0, dfinal, C)
	tensor.LinearBackward(nil, m.lmHead.Grad, nil, dlogits, final, m.lmHead.Data, N, C, V)
	m.trunkBackward(ws, dfinal)
}

// checkTemperature panics, naming the caller fn, unless τ is 0 (none) or positive and finite.
func checkTemperature(fn string, τ float32) {
	if t := float64(τ); t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
		panic(fmt.Sprintf("%s: Workspace.Temperature = %v, want > 0 (or 0 for none)", fn, τ))
	}
}

// checkBatch panics, naming the caller fn, if a (B, T) batch does not fit cfg: lengths that do
// not match B*T, T beyond max_position_embeddings, or a token outside the vocabulary. The
// entry points check a batch before splitting it, so that misuse panics on the caller's
// goroutine.
func checkBatch(fn string, cfg Config, tokens []int, attentionMask []float32, B, T int) {
	if B < 0 || T < 0 || len(tokens) != B*T || len(attentionMask) != B*T {
		panic(fmt.Sprintf("%s: B=%d T=%d with %d tokens and %d mask entries", fn, B, T, len(tokens), len(attentionMask)))
	}
	if T > cfg.MaxPositionEmbeddings {
		panic(fmt.Sprintf("%s: T=%d exceeds max_position_embeddings %d", fn, T, cfg.MaxPositionEmbeddings))
	}
	for i, id := range tokens {
		if id < 0 || id >= cfg.VocabSize {
			panic(fmt.Sprintf("%s: token %d at %d outside the vocabulary [0, %d)", fn, id, i, cfg.VocabSize))
		}
	}
}
