package model

import (
	"fmt"
	"math"

	"agentr1/tensor"
)

// The output head fused with its reductions: instead of materialising logits (B, T, V) and
// then log-probabilities, Forward computes the logits of a chunk of rows, their softmax, and
// reduces each row to the log-probability of the token that follows and the entropy of the
// distribution. Only rows whose next token is real are computed (position t < T-1 with
// mask[t] = mask[t+1] = 1), so left padding and the last position cost nothing. The
// probabilities are kept for Backward when they fit Workspace.MaxKeptProbs, and recomputed
// chunk by chunk otherwise; Backward also skips rows whose upstream gradient is zero (prompt
// tokens in reinforcement learning).
//
// For a row with logits z (V) (divided by Workspace.Temperature when it is set), p = softmax(z),
// label y and entropy H = -sum_j p_j log p_j,
//
//	logp = z_y - logsumexp(z)            H = logsumexp(z) - sum_j p_j z_j
//	dL/dz_j = dlogp (1[j=y] - p_j) - dH p_j (log p_j + H)
//
// (the gradients of log_softmax gathered at y and of the entropy, as verl's
// logprobs_from_logits and entropy_from_logits compute them through autograd).

// headWork holds the buffers of the fused head.
type headWork struct {
	rows    []int     // (M) flat row b*T+t of each computed position t
	labels  []int     // (M) the token at t+1
	logp    []float32 // (N) log p(tokens[b,t] | tokens[b,<t]), stored at the label's position
	entropy []float32 // (N) entropy of the distribution predicting position t
	lse     []float32 // (N) logsumexp of the logits predicting position t (at the label's position)
	kept    bool      // probs holds all M rows
	probs   []float32 // (M, V) next-token probabilities when kept, else (chunk, V)
	z       []float32 // (chunk, V) logits of a chunk
	hidden  []float32 // (chunk, C) final hidden states of a chunk's rows
	dlogits []float32 // (chunk, V)
	dhidden []float32 // (chunk, C)
	active  []int     // (<= M) indices into rows with a non-zero upstream gradient

	chunkRows, chunkLabels []int // (chunk) rows and labels of one backward chunk
}

// headChunk returns the number of rows processed at once when the probabilities are not kept:
// about 4M logits, between 32 and 1024 rows.
func headChunk(V int) int { return min(1024, max(32, (1<<22)/max(V, 1))) }

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
	if τ := float64(ws.Temperature); τ < 0 || math.IsNaN(τ) || math.IsInf(τ, 0) {
		panic(fmt.Sprintf("model.Forward: Workspace.Temperature = %v, want > 0 (or 0 for none)", ws.Temperature))
	}
	if !ws.inShard { // a shard's rows were checked with their batch
		checkBatch("model.Forward", m.Config, tokens, attentionMask, B, T)
	}
	h := &ws.head
	N := B * T
	if ws.split(m, nil, B, T) {
		h.logp = grow(h.logp, N)
		h.entropy = grow(h.entropy, N)
		tensor.Shards(len(ws.shards), func(s int) {
			sh := &ws.shards[s]
			logp, entropy := sh.m.Forward(sh.ws, sh.tokens(tokens, T), sh.rows(attentionMask, T), sh.hi-sh.lo, T)
			copy(sh.rows(h.logp, T), logp)
			copy(sh.rows(h.entropy, T), entropy)
		})
		ws.owner, ws.pass = m, passLogp
		return h.logp, h.entropy
	}
	m.forwardTrunk(ws, tokens, attentionMask, B, T)
	ws.owner, ws.pass = m, passLogp
	h.logp = grow(h.logp, N)
	h.entropy = grow(h.entropy, N)
	h.lse = grow(h.lse, N)
	clear(h.logp)
	clear(h.entropy)
	clear(h.lse)
	h.rows, h.labels = h.rows[:0], h.labels[:0]
	for b := range B {
		for t := 0; t+1 < T; t++ {
			i := b*T + t
			if attentionMask[i] != 0 && attentionMask[i+1] != 0 {
				h.rows = append(h.rows, i)
				h.labels = append(h.labels, tokens[i+1])
			}
		}
	}
	m.headForward(ws, true)
	return h.logp, h.entropy
}

// headForward computes the head's probabilities for every row of ws.head.rows, chunk by
// chunk; with record, it also stores each row's log-probability and entropy. It keeps the
// probabilities for Backward when the workspace keeps its activations (see Workspace) and
// they fit MaxKeptProbs; a lean workspace's first Backward calls it again, with the same
// chunks, so the kept probabilities are those the first call computed, bit for bit.
func (m *Model) headForward(ws *Workspace, record bool) {
	h := &ws.head
	V, C := m.Config.VocabSize, m.Config.HiddenSize
	M := len(h.rows)
	limit := ws.MaxKeptProbs
	if limit <= 0 {
		limit = 1 << 26
	}
	h.kept = ws.keep && M*V <= limit
	chunk := headChunk(V)
	if h.kept {
		h.probs = grow(h.probs, M*V)
	} else {
		h.probs = grow(h.probs, chunk*V)
	}
	h.z = grow(h.z, chunk*V)
	h.hidden = grow(h.hidden, chunk*C)
	for lo := 0; lo < M; lo += chunk {
		hi := min(lo+chunk, M)
		probs := h.probs[:(hi-lo)*V]
		if h.kept {
			probs = h.probs[lo*V : hi*V]
		}
		m.headProbs(ws, h.rows[lo:hi], h.labels[lo:hi], probs, record)
	}
}

// headProbs computes the logits (n, V) of the given rows of ws.final and their softmax into
// probs (n, V); with record, it also stores each row's log-probability of its label and its
// entropy at the label's position. With z = logits, p = softmax(z) and any j with p_j > 0
// (the row's argmax has p_j >= 1/V), logsumexp(z) = z_j - log p_j.
func (m *Model) headProbs(ws *Workspace, rows, labels []int, probs []float32, record bool) {
	h := &ws.head
	n, V, C := len(rows), m.Config.VocabSize, m.Config.HiddenSize
	hidden := ws.gatherFinal(rows) // (n, C)
	z := h.z[:n*V]
	tensor.LinearForward(z, hidden, m.lmHead.Data, nil, n, C, V)
	if s := ws.logitScale(); s != 1 {
		tensor.Scal(s, z) // z = logits / Temperature
	}
	tensor.SoftmaxForward(probs, z, n, V)
	if !record {
		return
	}
	tensor.Parallel(n, max(1, (1<<14)/max(V, 1)), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			zr, pr := z[i*V:(i+1)*V], probs[i*V:(i+1)*V] // (V)
			top := tensor.Argmax(zr)
			lse := float64(zr[top]) - math.Log(float64(pr[top]))
			r := rows[i] + 1
			h.logp[r] = float32(float64(zr[labels[i]]) - lse)
			h.lse[r] = float32(lse)
			h.entropy[r] = float32(lse - float64(tensor.Dot(pr, zr)))
		}
	})
}

// logitScale is the factor the head multiplies its logits by: 1/Temperature, or 1.
func (ws *Workspace) logitScale() float32 {
	if ws.Temperature == 0 || ws.Temperature == 1 {
		return 1
	}
	return 1 / ws.Temperature
}

// consecutive reports whether rows (ascending, distinct) are a run r, r+1, ..., so that their
// hidden states form one block of ws.final.
func consecutive(rows []int) bool { return len(rows) > 0 && rows[len(rows)-1]-rows[0] == len(rows)-1 }

// gatherFinal returns the final hidden states (n, C) of rows: a view into ws.final when the
// rows are consecutive, else a copy in ws.head.hidden.
func (ws *Workspace) gatherFinal(rows []int) []float32 {
	C := ws.cfg.HiddenSize
	n := len(rows)
	if consecutive(rows) {
		return ws.final[rows[0]*C : (rows[n-1]+1)*C]
	}
	hidden := ws.head.hidden[:n*C]
	for i, r := range rows {
		copy(hidden[i*C:(i+1)*C], ws.final[r*C:(r+1)*C])
	}
	return hidden
}

// Backward accumulates into every Param.Grad the gradient of a loss L given dlogp = dL/dlogp
// and dentropy = dL/dentropy (both (B, T), either may be nil) for the batch of the last
// Forward on ws. It may be called more than once per Forward (gradients add up). It panics if
// ws does not hold a Forward of m or a slice has the wrong length.
func (m *Model) Backward(ws *Workspace, dlogp, dentropy []float32) {
	if ws.owner != m || ws.pass != passLogp {
		panic("model.Backward: the workspace does not hold a Forward of this model")
	}
	N, V, C := ws.B*ws.T, m.Config.VocabSize, m.Config.HiddenSize
	if (dlogp != nil && len(dlogp) != N) || (dentropy != nil && len(dentropy) != N) {
		panic(fmt.Sprintf("model.Backward: dlogp has %d and dentropy %d elements, want %d (B*T)", len(dlogp), len(dentropy), N))
	}
	if ws.sharded {
		tensor.Shards(len(ws.shards), func(s int) {
			sh := &ws.shards[s]
			sh.m.Backward(sh.ws, sh.rows(dlogp, ws.T), sh.rows(dentropy, ws.T))
		})
		ws.mergeGrads(m.Params)
		return
	}
	m.keepActivations(ws)
	ws.prepareBackward()
	h := &ws.head
	// Only rows with a non-zero upstream gradient contribute.
	h.active = h.active[:0]
	for i, r := range h.rows {
		if (dlogp != nil && dlogp[r+1] != 0) || (dentropy != nil && dentropy[r+1] != 0) {
			h.active = append(h.active, i)
		}
	}
	dfinal := ws.dfinal[:N*C]
	clear(dfinal)
	chunk := headChunk(V)
	h.dlogits = grow(h.dlogits, chunk*V)
	h.dhidden = grow(h.dhidden, chunk*C)
	h.hidden = grow(h.hidden, chunk*C)
	h.z = grow(h.z, chunk*V)
	rows, labels := h.chunkRows[:0], h.chunkLabels[:0]
	for lo := 0; lo < len(h.active); lo += chunk {
		hi := min(lo+chunk, len(h.active))
		n := hi - lo
		rows, labels = rows[:0], labels[:0]
		for _, a := range h.active[lo:hi] {
			rows = append(rows, h.rows[a])
			labels = append(labels, h.labels[a])
		}
		dl := h.dlogits[:n*V]
		// The entropy term needs log p_j = z_j - logsumexp(z), so the logits z: recompute them
		// (into h.z) with the probabilities, one matrix product, rather than take V logarithms
		// of the kept probabilities per row.
		recompute := !h.kept || dentropy != nil
		if recompute {
			m.headProbs(ws, rows, labels, dl, false) // logits into h.z, probabilities into dl
		}
		// dl (n, V) = dL/dlogits from the probabilities (kept, or recomputed in place).
		tensor.Parallel(n, max(1, (1<<14)/max(V, 1)), func(a, b int) {
			for i := a; i < b; i++ {
				d := dl[i*V : (i+1)*V] // (V)
				p := d
				if !recompute {
					k := h.active[lo+i]
					p = h.probs[k*V : (k+1)*V]
				}
				r := rows[i] + 1
				var g, e, H float32
				if dlogp != nil {
					g = dlogp[r]
				}
				if dentropy != nil {
					e, H = dentropy[r], h.entropy[r]
				}
				if e == 0 {
					// d = -g * p, with the kernel set's vector scaling (one product each, as
					// the scalar loop it replaces).
					if !recompute {
						copy(d, p)
					}
					tensor.Scal(-g, d)
				} else {
					z, lse := h.z[i*V:(i+1)*V], h.lse[r] // (V) logits; log p_j = z_j - lse
					for j, pj := range p {
						dj := -g * pj
						if pj > 0 {
							dj -= e * pj * ((z[j] - lse) + H)
						}
						d[j] = dj
					}
				}
				d[labels[i]] += g
			}
		})
		if s := ws.logitScale(); s != 1 {
			tensor.Scal(s, dl) // dL/dlogits = dL/dz / Temperature, with z = logits / Temperature
		}
		hidden := ws.gatherFinal(rows)
		tensor.LinearBackward(nil, m.lmHead.Grad, nil, dl, hidden, m.lmHead.Data, n, C, V)
		if consecutive(rows) {
			// dfinal[rows] (n, C) += dl (n, V) @ lm_head (V, C)
			tensor.Gemm(false, false, n, C, V, 1, dl, V, m.lmHead.Data, C, 1, dfinal[rows[0]*C:], C)
			continue
		}
		dhidden := h.dhidden[:n*C]
		// dhidden (n, C) = dl (n, V) @ lm_head (V, C), scattered into dfinal
		tensor.Gemm(false, false, n, C, V, 1, dl, V, m.lmHead.Data, C, 0, dhidden, C)
		for i, r := range rows {
			tensor.Axpy(1, dhidden[i*C:(i+1)*C], dfinal[r*C:(r+1)*C])
		}
	}
	h.chunkRows, h.chunkLabels = rows, labels
	m.backwardTrunk(ws)
}

// ForwardLogits runs the model over a left-padded batch as Forward does and returns the full
// logits (B, T, V) (a view into ws, valid until its next Forward), for supervised fine-tuning
// and golden checks. It panics as Forward does.
func (m *Model) ForwardLogits(ws *Workspace, tokens []int, attentionMask []float32, B, T int) []float32 {
	checkBatch("model.ForwardLogits", m.Config, tokens, attentionMask, B, T)
	m.forwardTrunk(ws, tokens, attentionMask, B, T)
	ws.owner, ws.pass = m, passLogits
	N, V, C := B*T, m.Config.VocabSize, m.Config.HiddenSize
	ws.logits = grow(ws.logits, N*V)
	tensor.LinearForward(ws.logits, ws.final[:N*C], m.lmHead.Data, nil, N, C, V)
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
	m.keepActivations(ws)
	ws.prepareBackward()
	final := ws.final[:N*C]
	// dfinal (N, C) = dlogits (N, V) @ lm_head (V, C); dlm_head += dlogits^T @ final
	tensor.Gemm(false, false, N, C, V, 1, dlogits, V, m.lmHead.Data, C, 0, ws.dfinal[:N*C], C)
	tensor.LinearBackward(nil, m.lmHead.Grad, nil, dlogits, final, m.lmHead.Data, N, C, V)
	m.backwardTrunk(ws)
}
