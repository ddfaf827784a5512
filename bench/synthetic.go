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

// Episode answers turns 1 .. Turns-1 with the observation Obs and ends at turn Turns with its
// fixed Reward (Problems alternates 1 and 0 over a group's rows, so its advantages are not all
// zero).
type Episode struct {
	Turns  int     // the turn that ends the episode, from 1
	Obs    string  // the observation of every earlier turn
	Reward float64 // the outcome reward at the end
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
	return TiedProblems(n, promptLen, turns, obsLen, vocab, 0)
}

// TiedProblems is Problems where every tiedEvery-th problem (0: none) rewards every attempt
// alike (0), so its GRPO or RLOO group is tied: its advantages are 0 and it teaches nothing.
func TiedProblems(n, promptLen, turns, obsLen, vocab, tiedEvery int) []trainer.Problem {
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
		tied := tiedEvery > 0 && i%tiedEvery == 0
		k := 0
		ps[i] = trainer.Problem{Prompt: prompt, Dataset: "synthetic", NewEpisode: func() rollout.Episode {
			k++
			r := float64(k % 2)
			if tied {
				r = 0
			}
			return &Episode{Turns: turns, Obs: obsText, Reward: r}
		}}
	}
	return ps
}
