package pipeline

import (
	"math/rand/v2"
	"slices"

	"agentr1/mdp"
)

// The copy phase of the warm start (SFTConfig.CopySteps) teaches the policy what a pretrained
// LLM can already do and the agent needs at every turn: to repeat a span of tokens it read
// earlier in the context, a name or a number in a search result. Each row is a random
// context and then recalls of spans of it, each recall cued by the span's first token, so the
// way to predict the recall is to find the cue in the context and copy what followed it: the
// induction head of Olsson et al. 2022 ("In-context Learning and Induction Heads"), which
// small transformers learn quickly from such rows and slowly from text.
const (
	copyRows       = 64       // rows per copy step
	copyContextMin = 16       // tokens of random context, at least
	copyContextMax = 64       // and at most
	copyRecalls    = 3        // recalls per row
	copySpanMin    = 8        // tokens copied per recall, after its cue, at least
	copySpanMax    = 16       // and at most
	copySalt       = 0xC0B1E5 // parts the copy rows' random stream from the demonstrations'
)

// observationTokens returns the distinct tokens of the demonstrations' tool responses,
// ascending: the vocabulary the copy rows draw from, so they hold the name pieces and digits
// the policy will have to copy, and no byte or special token that text never uses.
func observationTokens(demos []*mdp.Trajectory) []int {
	seen := map[int]bool{}
	for _, d := range demos {
		for _, t := range d.Turns {
			for _, id := range t.Observation {
				seen[id] = true
			}
		}
	}
	out := make([]int, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// copyBatch draws one copy step's rows from vocab and the loss weight of each token: 0 on the
// context and on each recall's cue, 1 on the tokens a recall copies. A row's prompt is its
// context (n tokens, uniform ids from vocab); its response is copyRecalls recalls, each the
// context's tokens [s, s+1+m) for a uniform start s and length m:
//
//	tokens:  x_0 … x_{n−1} | x_s x_{s+1} … x_{s+m} | x_s' …
//	weights: 0   …  0      | 0   1       …  1      | 0    …
func copyBatch(vocab []int, rng *rand.Rand) ([]mdp.Row, [][]float64) {
	rows := make([]mdp.Row, copyRows)
	weights := make([][]float64, copyRows)
	for i := range rows {
		n := copyContextMin + rng.IntN(copyContextMax-copyContextMin+1)
		tokens := make([]int, n, n+copyRecalls*(1+copySpanMax))
		for k := range tokens {
			tokens[k] = vocab[rng.IntN(len(vocab))]
		}
		w := make([]float64, n, cap(tokens))
		for range copyRecalls {
			m := min(copySpanMin+rng.IntN(copySpanMax-copySpanMin+1), n-1)
			s := rng.IntN(n - m)
			tokens = append(tokens, tokens[s:s+1+m]...)
			w = append(w, 0)
			for range m {
				w = append(w, 1)
			}
		}
		rows[i] = copyRow(tokens, n, w)
		weights[i] = w
	}
	return rows, weights
}

// copyRow is tokens as an mdp.Row with prompt [0, promptLen) and the loss mask where w is 1.
func copyRow(tokens []int, promptLen int, w []float64) mdp.Row {
	pos := make([]int, len(tokens))
	for k := range pos {
		pos[k] = k
	}
	mask := slices.Clone(w)
	return mdp.Row{
		Tokens: tokens, Positions: pos, PromptLen: promptLen,
		ActionMask: mask, AdvantageMask: slices.Clone(mask),
		Rewards: make([]float64, len(tokens)), LogProbs: make([]float64, len(tokens)),
	}
}
