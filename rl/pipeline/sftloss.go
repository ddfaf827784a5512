package pipeline

import (
	"strings"

	"agentr1/mdp"
	"agentr1/tokenizer"
)

// tokenWeights returns the SFT loss weight of each of the first n tokens of demonstration d
// laid out as mdp.Flatten lays it out (prompt, then each turn's action and observation): 0 on
// the prompt, actionWeights[k] on turn k's action tokens (1 where actionWeights is short),
// contextWeight on observation tokens. With contextWeight 0 and no action weights this is the
// action mask, the paper's masked loss; above 0 the warm start is also a language model of
// the tool responses, which a policy trained from scratch needs in order to learn to read
// them (copying a name out of a retrieved passage is next-token prediction on that passage's
// own text first). An action weight of 0 keeps a mistaken action as context only.
func tokenWeights(d *mdp.Trajectory, actionWeights []float64, contextWeight float64, n int) []float64 {
	w := make([]float64, 0, n) // (n)
	fill := func(count int, v float64) {
		for range count {
			w = append(w, v)
		}
	}
	fill(len(d.Prompt), 0)
	for k, t := range d.Turns {
		aw := 1.0
		if k < len(actionWeights) {
			aw = actionWeights[k]
		}
		fill(len(t.Action), aw)
		fill(len(t.Observation), contextWeight)
	}
	return w[:min(n, len(w))]
}

// scaleNumberTokens multiplies the weight, in w (laid out as tokenWeights lays it out), of each
// token of d that number marks (number[id]; ids beyond it are not numbers) by action in an
// action and by context in an observation.
func scaleNumberTokens(w []float64, d *mdp.Trajectory, number []bool, action, context float64) {
	pos := len(d.Prompt)
	scale := func(ids []int, f float64) {
		for _, id := range ids {
			if pos < len(w) && id >= 0 && id < len(number) && number[id] {
				w[pos] *= f
			}
			pos++
		}
	}
	for _, t := range d.Turns {
		scale(t.Action, action)
		scale(t.Observation, context)
	}
}

// scaleMarked multiplies the weight, in w, of each token that marked marks by f.
func scaleMarked(w []float64, marked []bool, f float64) {
	for i := range min(len(w), len(marked)) {
		if marked[i] {
			w[i] *= f
		}
	}
}

// NumberTokens marks, by id, the tokens of tok that hold digits only (after an optional
// leading space): the digit tokens of a Qwen-style tokenizer, and the whole-number tokens of
// Config.NumberTokens.
func NumberTokens(tok *tokenizer.Tokenizer) []bool {
	out := make([]bool, tok.VocabSize())
	for id := range out {
		out[id] = isDigits(strings.TrimPrefix(tok.Decode([]int{id}), " "))
	}
	return out
}

// responseWeights lays the rows' token weights out as b's response side (b.B, b.L), as
// mdp.Collate lays out the tokens: response token j of row i at i*L+j, 0 on padding.
func responseWeights(b *mdp.Batch, rows []mdp.Row, weights [][]float64) []float64 {
	out := make([]float64, b.B*b.L) // (B, L)
	for i, r := range rows {
		copy(out[i*b.L:i*b.L+b.ResponseLens[i]], weights[i][r.PromptLen:])
	}
	return out
}
