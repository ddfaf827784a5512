package bench

import (
	"context"
	"strconv"
	"strings"

	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
)

// Encoder writes token ids as space-separated decimal numbers: observations are given as ids.
type Encoder struct{}

// Encode parses space-separated decimal ids; anything else is skipped.
func (Encoder) Encode(text string) []int {
	var ids []int
	for _, f := range strings.Fields(text) {
		if n, err := strconv.Atoi(f); err == nil {
			ids = append(ids, n)
		}
	}
	return ids
}

// Decode writes ids as space-separated decimal numbers.
func (Encoder) Decode(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, " ")
}

// Episode answers turns 1 .. Turns-1 with the observation Obs and ends at turn Turns, with
// reward 1 on even-numbered rows of a group (so group advantages are not all zero).
type Episode struct {
	Turns  int
	Obs    string
	Reward float64
	n      int
}

// Step counts the turn and answers it.
func (e *Episode) Step(context.Context, string) (rollout.Transition, error) {
	e.n++
	if e.n >= e.Turns {
		return rollout.Transition{Done: true}, nil
	}
	return rollout.Transition{Observation: e.Obs}, nil
}

// Finish returns the episode's fixed reward.
func (e *Episode) Finish(bool) rollout.Outcome {
	return rollout.Outcome{Reward: e.Reward, Stats: map[string]float64{trainer.StatEM: e.Reward}}
}

// Problems returns n synthetic problems with prompts of promptLen ids below vocab, each
// episode taking turns turns with observations of obsLen ids.
func Problems(n, promptLen, turns, obsLen, vocab int) []trainer.Problem {
	var obs []string
	for i := range obsLen {
		obs = append(obs, strconv.Itoa((i*7+3)%vocab))
	}
	obsText := strings.Join(obs, " ")
	ps := make([]trainer.Problem, n)
	for i := range ps {
		prompt := make([]int, promptLen)
		for j := range prompt {
			prompt[j] = (i*31 + j*13 + 1) % vocab
		}
		k := 0
		ps[i] = trainer.Problem{Prompt: prompt, Dataset: "synthetic", NewEpisode: func() rollout.Episode {
			k++
			return &Episode{Turns: turns, Obs: obsText, Reward: float64(k % 2)}
		}}
	}
	return ps
}
