package trainer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"agentr1/model"
	"agentr1/rl/rollout"
)

// A toy task for the trainer's tests: vocabulary of 16 ids, 0..11 "words", then the stop tags
// and padding. An agent turn ending in fakeToolEnd is a tool call answered with "5 6 7"; any
// other turn is the final answer, which earns 1 when it contains the id 3 and ends with
// fakeImEnd.
const (
	fakeVocab   = 16
	fakeToolEnd = 12
	fakeImEnd   = 13
	fakePad     = 14
)

var fakeSpecials = Specials{Pad: fakePad, ToolEnd: fakeToolEnd, ImEnd: fakeImEnd}

// fakeEncoder writes token ids as space-separated decimal numbers.
type fakeEncoder struct{}

func (fakeEncoder) Encode(text string) []int {
	var ids []int
	for _, f := range strings.Fields(text) {
		n, err := strconv.Atoi(f)
		if err != nil {
			panic(fmt.Sprintf("fakeEncoder: %q", f))
		}
		ids = append(ids, n)
	}
	return ids
}

func (fakeEncoder) Decode(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, " ")
}

type fakeEpisode struct {
	last     []int
	calls    int
	answered bool
}

func (e *fakeEpisode) Step(_ context.Context, turn string) (rollout.Transition, error) {
	ids := fakeEncoder{}.Encode(turn)
	e.last = ids
	if len(ids) > 0 && ids[len(ids)-1] == fakeToolEnd {
		e.calls++
		return rollout.Transition{Observation: "5 6 7", Reward: 0.1}, nil
	}
	e.answered = true
	return rollout.Transition{Done: true}, nil
}

func (e *fakeEpisode) Finish(bool) rollout.Outcome {
	r, format := 0.0, 0.0
	if e.answered && len(e.last) > 0 && e.last[len(e.last)-1] == fakeImEnd {
		format = 1
		for _, id := range e.last {
			if id == 3 {
				r = 1
			}
		}
	}
	return rollout.Outcome{Reward: r, Stats: map[string]float64{StatEM: r, StatFormat: format, StatSearches: float64(e.calls), StatToolCalls: float64(e.calls)}}
}

// fakeProblems returns n problems with prompts [1 2 g].
func fakeProblems(n int) []Problem {
	var ps []Problem
	for g := range n {
		ps = append(ps, Problem{Prompt: []int{1, 2, g % 12}, Dataset: "toy", Type: []string{"a", "b"}[g%2],
			NewEpisode: func() rollout.Episode { return &fakeEpisode{} }})
	}
	return ps
}

// tinyModel is a 2-layer, hidden-32 policy over the toy vocabulary.
func tinyModel(t testing.TB, seed uint64) *model.Model {
	t.Helper()
	cfg := model.Config{
		VocabSize: fakeVocab, HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 128, InitializerRange: 0.2,
	}
	m, err := model.New(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tinyRLConfig is algo's default configuration shrunk to the toy task.
func tinyRLConfig(algo Algorithm) RLConfig {
	c := DefaultRLConfig(algo)
	c.Steps = 3
	c.Prompts = 4
	c.N = 3
	if !algo.GroupBased() {
		c.N = 1
		c.Prompts = 8
	}
	c.MaxTurns = 3
	c.MaxTurnTokens = 6
	c.MaxLen = 32
	c.MaxObsTokens = 0
	c.CriticWarmup = 1
	c.LR = 1e-2
	c.CriticLR = 1e-2
	c.WarmupSteps = 0
	c.EntropyCoef = 0.01
	c.KLCoef = 0.01
	c.CheckOldEvery = 1 // recompute (and check) the old log-probs every step
	return c
}

// resumeTrainer is the trainer of the resume tests: cfg over a tiny model and six fake
// problems, with the same seeds every time, so two of them run the same steps.
func resumeTrainer(t *testing.T, cfg RLConfig) *Trainer {
	t.Helper()
	tr, err := New(cfg, 11, tinyModel(t, 4), fakeEncoder{}, fakeSpecials, fakeProblems(6))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// runSteps runs n RL steps of tr.
func runSteps(t *testing.T, tr *Trainer, n int) {
	t.Helper()
	for range n {
		if _, err := tr.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
