package mdp

import "fmt"

// Batch is rows collated in verl's layout: each prompt left-padded to width P, each response
// right-padded to width L, so that every row's response starts at column P. Token slices are
// flat (B, T) with T = P + L, as model.Forward takes them; the response-side slices are flat
// (B, L), as the RL algorithms take them (verl's "responses", "response_mask",
// "token_level_rewards", "old_log_probs").
type Batch struct {
	B, P, L int // rows, prompt width, response width

	Tokens []int // (B, T) pad id on padding
	// AttentionMask is 1 on real tokens and 0 on padding. The model derives each token's
	// rotary position from it (model.PositionIDs), so a row's first real token is at
	// position 0 however much padding precedes it.
	AttentionMask []float32 // (B, T)

	Responses     []int     // (B, L) Tokens[:, P:]
	ResponseMask  []float64 // (B, L) 1 on every real response token (agent and observation)
	ActionMask    []float64 // (B, L) 1 on agent tokens (see Row.ActionMask)
	AdvantageMask []float64 // (B, L) see Row.AdvantageMask
	Rewards       []float64 // (B, L) token-level rewards
	OldLogProbs   []float64 // (B, L) sampling log-probs on agent tokens, 0 elsewhere

	PromptLens   []int // (B,) real prompt tokens per row
	ResponseLens []int // (B,) real response tokens per row
}

// T is the full width P + L.
func (b *Batch) T() int { return b.P + b.L }

// Collate stacks rows into a Batch padded with padID, P and L being the longest prompt and
// response among the rows. The log-prob of response token j of row b, when the model
// recomputes it, comes from the logits at column P+j-1 of the same row.
func Collate(rows []Row, padID int) *Batch {
	P, L := 0, 0
	for i := range rows {
		P = max(P, rows[i].PromptLen)
		L = max(L, rows[i].ResponseLen())
	}
	return CollateTo(rows, padID, P, L)
}

// CollateTo is Collate with fixed widths (for batches of one shape across steps). It panics
// if a row's prompt is longer than P or its response longer than L.
func CollateTo(rows []Row, padID, P, L int) *Batch {
	B, T := len(rows), P+L
	b := &Batch{
		B: B, P: P, L: L,
		Tokens:        make([]int, B*T),
		AttentionMask: make([]float32, B*T),
		Responses:     make([]int, B*L),
		ResponseMask:  make([]float64, B*L),
		ActionMask:    make([]float64, B*L),
		AdvantageMask: make([]float64, B*L),
		Rewards:       make([]float64, B*L),
		OldLogProbs:   make([]float64, B*L),
		PromptLens:    make([]int, B),
		ResponseLens:  make([]int, B),
	}
	for i := range b.Tokens {
		b.Tokens[i] = padID
	}
	for i := range b.Responses {
		b.Responses[i] = padID
	}
	for bi := range rows {
		r := &rows[bi]
		p, n := r.PromptLen, r.ResponseLen()
		if p > P || n > L {
			panic(fmt.Sprintf("mdp.CollateTo: row %d has prompt %d, response %d; widths are %d, %d", bi, p, n, P, L))
		}
		b.PromptLens[bi], b.ResponseLens[bi] = p, n
		tok := b.Tokens[bi*T : (bi+1)*T]        // (T,)
		att := b.AttentionMask[bi*T : (bi+1)*T] // (T,)
		copy(tok[P-p:P], r.Tokens[:p])
		copy(tok[P:P+n], r.Tokens[p:])
		for j := P - p; j < P+n; j++ {
			att[j] = 1
		}
		off := bi * L
		copy(b.Responses[off:off+n], r.Tokens[p:])
		for j := 0; j < n; j++ {
			b.ResponseMask[off+j] = 1
		}
		copy(b.ActionMask[off:off+n], r.ActionMask[p:])
		copy(b.AdvantageMask[off:off+n], r.AdvantageMask[p:])
		copy(b.Rewards[off:off+n], r.Rewards[p:])
		copy(b.OldLogProbs[off:off+n], r.LogProbs[p:])
	}
	return b
}
