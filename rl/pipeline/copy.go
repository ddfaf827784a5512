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

// The copy rows of numbers (SFTConfig.CopyNumbers) are what a passage's numbers ask of the
// agent: several numbers in a context, each after a key, and a recall that must find the
// key's number among the others, whose digits are the same ten tokens, and copy it digit
// by digit.
const (
	numberPairsMin  = 4 // key-number pairs per context, at least
	numberPairsMax  = 10
	numberDigitsMax = 4 // digits per number, 1 to this
)

// numberCopyBatch draws one copy step's rows of numbers: a row's context is pairs of a key
// (uniform from keys, distinct within the row) and a number (1 to numberDigitsMax uniform
// tokens of digits); its response is copyRecalls recalls, each a key of the context at
// weight 0 and then that key's number at weight 1:
//
//	tokens:  k_1 d d d d k_2 d d … | k_j d d d d | k_i d d …
//	weights: 0   …                 | 0   1 1 1 1 | 0   1 1 …
func numberCopyBatch(keys, digits []int, rng *rand.Rand) ([]mdp.Row, [][]float64) {
	rows := make([]mdp.Row, copyRows)
	weights := make([][]float64, copyRows)
	for i := range rows {
		pairs := numberPairsMin + rng.IntN(numberPairsMax-numberPairsMin+1)
		pairs = min(pairs, len(keys))
		order := rng.Perm(len(keys))[:pairs] // distinct keys
		var tokens []int
		numbers := make([][]int, pairs) // (pairs, digits) each pair's key and number
		for p, k := range order {
			numbers[p] = append(numbers[p], keys[k])
			for range 1 + rng.IntN(numberDigitsMax) {
				numbers[p] = append(numbers[p], digits[rng.IntN(len(digits))])
			}
			tokens = append(tokens, numbers[p]...)
		}
		n := len(tokens)
		w := make([]float64, n, n+copyRecalls*(1+numberDigitsMax))
		for range copyRecalls {
			pair := numbers[rng.IntN(pairs)]
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
