package pipeline

import "agentr1/mdp"

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

// responseWeights lays the rows' token weights out as b's response side (b.B, b.L), as
// mdp.Collate lays out the tokens: response token j of row i at i*L+j, 0 on padding.
func responseWeights(b *mdp.Batch, rows []mdp.Row, weights [][]float64) []float64 {
	out := make([]float64, b.B*b.L) // (B, L)
	for i, r := range rows {
		copy(out[i*b.L:i*b.L+b.ResponseLens[i]], weights[i][r.PromptLen:])
	}
	return out
}
