package model

import (
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
//
// Plain definition: tensor/ref's LogProbsForward and EntropyForward over the full logits, and
// their LogProbsBackward and EntropyBackward. model/forward_test.go holds the head to them:
// TestForwardMatchesLogits for the log-probs and entropies, TestBackwardMatchesLogits for the
// gradients.

// headWork holds the buffers of the fused head. A row here, as in every (N, ...) shape of the
// package, is a flat position b*T+t of the batch (a row of ws.final (N, C)), not a batch row b.
type headWork struct {
	rows      []int     // (M) flat position b*T+t of each computed position t
	labels    []int     // (M) the token at t+1
	logp      []float32 // (N) log p(tokens[b,t] | tokens[b,<t]), stored at the label's position
	entropy   []float32 // (N) entropy of the distribution predicting position t
	lse       []float32 // (N) logsumexp of the logits predicting position t (at the label's position)
	keptProbs bool      // probs holds all M rows
	probs     []float32 // (M, V) next-token probabilities when keptProbs, else (chunk, V)
	z         []float32 // (chunk, V) logits of a chunk
	hidden    []float32 // (chunk, C) final hidden states of a chunk's rows
	dlogits   []float32 // (chunk, V)
	dhidden   []float32 // (chunk, C)
	active    []int     // (<= M) indices into rows with a non-zero upstream gradient

	chunkRows, chunkLabels []int // (chunk) rows and labels of one backward chunk
}

// headChunk returns the number of rows processed at once when the probabilities are not kept:
// about 4M logits, between 32 and 1024 rows.
func headChunk(V int) int { return min(1024, max(32, (1<<22)/max(V, 1))) }

// headForward reduces the final hidden states of a batch (B, T), which the trunk left in
// ws.final (N, C), to the log-probability of each next token and the entropy of each predictive distribution, both
// (B, T) and stored at the predicted token's position (see Forward): lm_head, softmax and the
// two reductions, chunk by chunk.
func (m *Model) headForward(ws *Workspace, tokens []int, attentionMask []float32) (logp, entropy []float32) {
	h := &ws.head
	B, T := ws.B, ws.T
	N := B * T
	h.logp = grow(h.logp, N)
	h.entropy = grow(h.entropy, N)
	h.lse = grow(h.lse, N)
	clear(h.logp)
	clear(h.entropy)
	clear(h.lse)
	// The rows whose next token is real: t < T-1 with mask[t] = mask[t+1] = 1.
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
	m.headChunks(ws, true)
	return h.logp, h.entropy
}

// headBackward returns dfinal = dL/d(final hidden states) (N, C), a view of ws.dfinal, given
// dlogp = dL/dlogp and dentropy = dL/dentropy (both (B, T), either may be nil), and
// accumulates lm_head's gradient. Only rows with a non-zero upstream gradient contribute (in
// reinforcement learning, the prompt's rows have none).
func (m *Model) headBackward(ws *Workspace, dlogp, dentropy []float32) []float32 {
	N, V, C := ws.B*ws.T, m.Config.VocabSize, m.Config.HiddenSize
	h := &ws.head
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
		dl := h.dlogits[:n*V]                                                    // (n, V)
		m.headChunkProbs(ws, h.active[lo:hi], rows, labels, dl, dentropy != nil) // p = softmax(z) (recompute.go)
		// dl (n, V) = dL/dz = dlogp (1[j=y] - p_j) - dH p_j (log p_j + H), in place over p.
		tensor.Parallel(n, max(1, (1<<14)/max(V, 1)), func(a, b int) {
			for i := a; i < b; i++ {
				d := dl[i*V : (i+1)*V] // (V) p on entry, dL/dz on return
				r := rows[i] + 1
				var g, e, H float32
				if dlogp != nil {
					g = dlogp[r]
				}
				if dentropy != nil {
					e, H = dentropy[r], h.entropy[r]
				}
				if e == 0 {
					tensor.Scal(-g, d) // d = -g p, with the kernel set's vector scaling
				} else {
					z, lse := h.z[i*V:(i+1)*V], h.lse[r] // (V) logits; log p_j = z_j - lse
					for j, pj := range d {
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
		hidden := ws.gatherFinal(rows) // (n, C)
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
	return dfinal
}

// headChunks computes the head's probabilities for every row of ws.head.rows, chunk by chunk;
// with record, it also stores each row's log-probability and entropy. It keeps the
// probabilities for Backward when the workspace keeps its activations (see Workspace) and
// they fit MaxKeptProbs; a lean workspace's first Backward calls it again, with the same
// chunks, so the kept probabilities are those the first call computed, bit for bit.
func (m *Model) headChunks(ws *Workspace, record bool) {
	h := &ws.head
	V, C := m.Config.VocabSize, m.Config.HiddenSize
	M := len(h.rows)
	limit := ws.MaxKeptProbs
	if limit <= 0 {
		limit = 1 << 26
	}
	h.keptProbs = ws.keep && M*V <= limit
	chunk := headChunk(V)
	if h.keptProbs {
		h.probs = grow(h.probs, M*V)
	} else {
		h.probs = grow(h.probs, chunk*V)
	}
	h.z = grow(h.z, chunk*V)
	h.hidden = grow(h.hidden, chunk*C)
	for lo := 0; lo < M; lo += chunk {
		hi := min(lo+chunk, M)
		probs := h.probs[:(hi-lo)*V]
		if h.keptProbs {
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
	linearForward(z, hidden, m.lmHead, nil, n, C, V) // (n, V)
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
