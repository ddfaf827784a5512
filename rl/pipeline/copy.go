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
	mask := slices.Clone(w)
	return mdp.Row{
		Tokens: tokens, PromptLen: promptLen,
		ActionMask: mask, AdvantageMask: slices.Clone(mask),
		Rewards: make([]float64, len(tokens)), LogProbs: make([]float64, len(tokens)),
	}
}

// The copy rows of numbers (SFTConfig.CopyNumbers) are what a passage's numbers ask of the
// agent: several numbers in a context, each after a key, and a recall that must find the
// key's number among the others, whose digits are the same ten tokens, and copy it digit
// by digit. With SFTConfig.CopyNameShare some of the values are names instead, as in a
// passage, where a relation's word is followed by a name or by a number.
const (
	numberPairsMin  = 4 // key-value pairs per context, at least
	numberPairsMax  = 10
	numberDigitsMax = 4 // digits per number, 1 to this
	nameTokensMin   = 2 // tokens per name, at least
	nameTokensMax   = 6
)

// numberCopyBatch draws one copy step's rows of numbers: a row's context is pairs of a key
// (uniform from keys, distinct within the row) and a value; its response is copyRecalls
// recalls, each a key of the context at weight 0 and then that key's value at weight 1:
//
//	tokens:  k_1 d d d d k_2 n n n … | k_j d d d d | k_i n n n …
//	weights: 0   …                   | 0   1 1 1 1 | 0   1 1 1 …
//
// A value is a number (1 to numberDigitsMax uniform tokens of digits) or, with probability
// nameShare, a name (nameTokensMin to nameTokensMax uniform tokens of keys that are not the
// row's keys, so that a recall's cue stays unique).
func numberCopyBatch(keys, digits []int, nameShare float64, rng *rand.Rand) ([]mdp.Row, [][]float64) {
	rows := make([]mdp.Row, copyRows)
	weights := make([][]float64, copyRows)
	for i := range rows {
		pairs := numberPairsMin + rng.IntN(numberPairsMax-numberPairsMin+1)
		pairs = min(pairs, len(keys))
		order := rng.Perm(len(keys))
		rest := order[pairs:] // the keys no pair uses: a name's tokens
		var tokens []int
		values := make([][]int, pairs) // (pairs, 1+value) each pair's key and value
		for p, k := range order[:pairs] {
			values[p] = append(values[p], keys[k])
			// nameShare 0 draws nothing here, so the rows of numbers alone stay as they were.
			if nameShare > 0 && len(rest) > 0 && rng.Float64() < nameShare {
				for range nameTokensMin + rng.IntN(nameTokensMax-nameTokensMin+1) {
					values[p] = append(values[p], keys[rest[rng.IntN(len(rest))]])
				}
			} else {
				for range 1 + rng.IntN(numberDigitsMax) {
					values[p] = append(values[p], digits[rng.IntN(len(digits))])
				}
			}
			tokens = append(tokens, values[p]...)
		}
		n := len(tokens)
		w := make([]float64, n, n+copyRecalls*(1+max(numberDigitsMax, nameTokensMax)))
		for range copyRecalls {
			pair := values[rng.IntN(pairs)]
			tokens = append(tokens, pair...)
			w = append(w, 0)
			for range len(pair) - 1 {
				w = append(w, 1)
			}
		}
		rows[i] = copyRow(tokens, n, w)
		weights[i] = w
	}
	return rows, weights
}

// splitNumbers parts vocab into the tokens number marks and the rest.
func splitNumbers(vocab []int, number []bool) (keys, digits []int) {
	for _, id := range vocab {
		if id < len(number) && number[id] {
			digits = append(digits, id)
		} else {
			keys = append(keys, id)
		}
	}
	return keys, digits
}
