package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Generation is what Generate produced for one row.
type Generation struct {
	Tokens   []int     // sampled tokens, in order, including a final stop token
	LogProbs []float32 // log-probability of each sampled token (Sampler.Sample's)
	Stopped  bool      // the last token is a stop token (false: maxNew or the row's capacity ran out)
}

// Generate samples up to maxNew tokens for each listed row, continuing from the row's latest
// logits (after an Append), all rows advancing together through batched Steps. A row ends
// after sampling one of the stop tokens or when it is full; every sampled token, stop tokens
// included, is fed to the cache, so the row can be continued with Append (a tool observation)
// and Generate again. Tokens are drawn from rng in row order, so a seed fixes the result. It
// panics if a row is empty or listed twice.
func (d *Decoder) Generate(rows []int, maxNew int, s Sampler, stop []int, rng *rand.Rand) []Generation {
	V := d.m.Config.VocabSize
	out := make([]Generation, len(rows))
	active := make([]int, 0, len(rows)) // indices into rows still generating
	for i, r := range rows {
		d.checkRow("Generate", r, 0)
		if d.lens[r] == 0 {
			panic(fmt.Sprintf("model.Decoder.Generate: row %d is empty: Append a prompt first", r))
		}
		if slices.Contains(rows[:i], r) {
			panic(fmt.Sprintf("model.Decoder.Generate: row %d listed twice", r))
		}
		if maxNew > 0 && d.lens[r] < d.maxLen {
			active = append(active, i)
		}
	}
	stepRows := make([]int, 0, len(rows))
	stepTokens := make([]int, 0, len(rows))
	for len(active) > 0 {
		stepRows, stepTokens = stepRows[:0], stepTokens[:0]
		for _, i := range active {
			r := rows[i]
			tok, lp := s.Sample(d.logits[r*V:(r+1)*V], rng)
			out[i].Tokens = append(out[i].Tokens, tok)
			out[i].LogProbs = append(out[i].LogProbs, lp)
			out[i].Stopped = slices.Contains(stop, tok)
			stepRows = append(stepRows, r)
			stepTokens = append(stepTokens, tok)
		}
		d.Step(stepRows, stepTokens)
		next := active[:0]
		for _, i := range active {
			if !out[i].Stopped && len(out[i].Tokens) < maxNew && d.lens[rows[i]] < d.maxLen {
				next = append(next, i)
			}
		}
		active = next
	}
	return out
}
