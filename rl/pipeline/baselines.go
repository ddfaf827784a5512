package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/model"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
)

// prefixEpisode wraps an episode whose first agent turn began in the prompt: the prompt ends
// with Prefix (text the model did not generate), so the environment must see Prefix + the
// generated text of that turn.
type prefixEpisode struct {
	rollout.Episode
	prefix string
	used   bool
}

func (e *prefixEpisode) Step(ctx context.Context, turn string) (rollout.Transition, error) {
	if !e.used {
		e.used = true
		turn = e.prefix + turn
	}
	return e.Episode.Step(ctx, turn)
}

// naiveRAGTurn is the scripted first turn of the Naive RAG baseline: search with the question
// itself.
func naiveRAGTurn(q qa.Question) string {
	args, _ := json.Marshal(map[string]any{"name": "search", "arguments": map[string]string{"query": q.Question}})
	return "<think>I will search for the question.</think>\n" + env.ToolCallOpen + "\n" + string(args) + "\n" + env.ToolCallClose
}

// closedBookPrefix opens the answer of the closed-book baseline.
const closedBookPrefix = "<think>I will answer from memory.</think>\n<answer>"

// NaiveRAGProblems returns the Naive RAG baseline's problems (docs/PAPER.md §6: retrieve once with
// the question, answer in one turn): each prompt holds a scripted first turn that searches
// with the question and its real observation (top-k passages), and the model must answer in
// the next turn (evaluate with MaxTurns 1). The observation is cut to maxObsTokens (0: whole)
// as rollout.EncodeObservation cuts the agent's own.
func NaiveRAGProblems(ctx context.Context, qs []qa.Question, cfg qa.Config, tools []env.Tool, enc rollout.Encoder, maxObsTokens int) ([]trainer.Problem, error) {
	// The scripted search is a turn of the environment's own: a run limited to one agent turn
	// (--rl.max-turns 1) still gives the baseline its answer turn after it.
	cfg.Env.MaxTurns = max(cfg.Env.MaxTurns, 2)
	out := make([]trainer.Problem, 0, len(qs))
	for _, q := range qs {
		start := func() (*qa.Env, []int, error) {
			e, err := qa.New(cfg, tools...)
			if err != nil {
				return nil, nil, fmt.Errorf("naive rag: %w", err)
			}
			prompt := e.Reset(q)
			turn := naiveRAGTurn(q)
			st := e.Step(ctx, turn)
			if st.Done {
				return nil, nil, fmt.Errorf("naive rag: question %s: the scripted search ended the episode", q.ID)
			}
			// The retrieved passages are cut to the rollout's observation budget, as the
			// agent's own search results are.
			obs, _, err := rollout.EncodeObservation(enc, st.Observation, st.ObservationTail, maxObsTokens)
			if err != nil {
				return nil, nil, fmt.Errorf("naive rag: question %s: %w", q.ID, err)
			}
			return e, append(enc.Encode(prompt+turn), obs...), nil
		}
		_, prompt, err := start()
		if err != nil {
			return nil, err
		}
		out = append(out, trainer.Problem{
			Prompt: prompt, Dataset: q.Dataset, Type: q.Type,
			NewEpisode: func() rollout.Episode {
				e, _, err := start()
				if err != nil {
					panic("pipeline: naive rag episode failed after succeeding: " + err.Error())
				}
				return &QAEpisode{Env: e}
			},
		})
	}
	return out, nil
}

// ClosedBookProblems returns the closed-book baseline's problems: the prompt ends with an
// opened answer ("<think>I will answer from memory.</think>\n<answer>"), so the model answers
// without searching (evaluate with MaxTurns 1).
func ClosedBookProblems(qs []qa.Question, cfg qa.Config, tools []env.Tool, enc rollout.Encoder) ([]trainer.Problem, error) {
	out := make([]trainer.Problem, 0, len(qs))
	for _, q := range qs {
		e, err := qa.New(cfg, tools...)
		if err != nil {
			return nil, fmt.Errorf("closed book: %w", err)
		}
		out = append(out, trainer.Problem{
			Prompt: enc.Encode(e.Reset(q) + closedBookPrefix), Dataset: q.Dataset, Type: q.Type,
			NewEpisode: func() rollout.Episode {
				e, err := qa.New(cfg, tools...)
				if err != nil {
					panic("pipeline: qa.New failed after succeeding: " + err.Error())
				}
				e.Reset(q)
				return &prefixEpisode{Episode: &QAEpisode{Env: e}, prefix: closedBookPrefix}
			},
		})
	}
	return out, nil
}

// Baselines evaluates the paper's baselines with policy (normally the SFT base) on every
// evaluation set: "base-tool-call" (the model as is, with the search tool), "naive-rag" and
// "closed-book", each named "<baseline>/<set>".
func Baselines(ctx context.Context, s *Setup, policy *model.Model) ([]*EvalMetrics, error) {
	cfg := s.Config
	qcfg := cfg.QAConfig()
	ec := EvalConfigFrom(cfg.RL, cfg.EvalBatch)
	ec.Workers = cfg.Workers
	one := ec
	one.MaxTurns = 1
	var out []*EvalMetrics
	for _, set := range s.EvalSets {
		base, _, err := Evaluate(ctx, policy, s.Tokenizer, s.Specials, set.Problems, ec, "base-tool-call/"+set.Name)
		if err != nil {
			return nil, err
		}
		rag, err := NaiveRAGProblems(ctx, set.Questions, qcfg, set.Tools, s.Tokenizer, s.Config.RL.MaxObsTokens)
		if err != nil {
			return nil, err
		}
		ragM, _, err := Evaluate(ctx, policy, s.Tokenizer, s.Specials, rag, one, "naive-rag/"+set.Name)
		if err != nil {
			return nil, err
		}
		closed, err := ClosedBookProblems(set.Questions, qcfg, set.Tools, s.Tokenizer)
		if err != nil {
			return nil, err
		}
		closedM, _, err := Evaluate(ctx, policy, s.Tokenizer, s.Specials, closed, one, "closed-book/"+set.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, base, ragM, closedM)
	}
	return out, nil
}
