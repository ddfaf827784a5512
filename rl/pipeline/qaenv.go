package pipeline

import (
	"context"
	"fmt"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
)

// QAEpisode adapts one env/qa episode to the rollout's Episode: each turn's process rewards
// (one per tool call) are summed onto the turn's closing token, and Finish scores the episode
// with the paper's Eq. 6 and reports EM, F1, format, searches and tool errors as Stats.
type QAEpisode struct {
	Env *qa.Env // the episode's environment: its question, tools and rewards
}

// Step runs the agent's turn through the QA environment.
func (e *QAEpisode) Step(ctx context.Context, turn string) (rollout.Transition, error) {
	if e.Env.Done() {
		return rollout.Transition{}, fmt.Errorf("qa episode %s: step after the episode ended", e.Env.Question().ID)
	}
	st := e.Env.Step(ctx, turn)
	r := 0.0
	for _, p := range st.ProcessRewards {
		r += p
	}
	return rollout.Transition{Observation: st.Observation, ObservationTail: st.ObservationTail, Done: st.Done, Reward: r}, nil
}

// Finish scores the episode. A cut episode is scored on the turns it took (its missing answer
// fails the format, so it earns Eq. 6's penalty rather than nothing).
func (e *QAEpisode) Finish(truncated bool) rollout.Outcome {
	sc := e.Env.Score()
	format := 0.0
	if sc.Format == 1 {
		format = 1
	}
	stats := map[string]float64{
		trainer.StatEM: sc.EM, trainer.StatF1: sc.F1, trainer.StatFormat: format,
		trainer.StatSearches: float64(sc.Searches), trainer.StatToolErrors: float64(sc.ToolErrors + sc.FormatErrors),
		trainer.StatToolCalls: float64(sc.Searches + sc.FormatErrors),
	}
	for name, c := range sc.ByTool {
		stats[StatToolCallsPrefix+name] = float64(c.Calls)
		stats[StatToolErrorsPrefix+name] = float64(c.Errors)
	}
	return rollout.Outcome{Reward: sc.Reward, Stats: stats}
}

// Per-tool episode stats: the prefix and the tool's name ("tool_calls/calculator") key the
// calls of that tool and its errors (invalid arguments and failures of the tool).
const (
	StatToolCallsPrefix  = "tool_calls/"
	StatToolErrorsPrefix = "tool_errors/"
)

// QAProblems turns questions into Problems: each prompt is rendered by a fresh qa.Env (system
// prompt with the tools' schemas, the question, the assistant header) and tokenised once; each
// episode gets its own qa.Env sharing the tools.
func QAProblems(qs []qa.Question, cfg qa.Config, tools []env.Tool, enc rollout.Encoder) ([]trainer.Problem, error) {
	out := make([]trainer.Problem, 0, len(qs))
	for _, q := range qs {
		e, err := qa.New(cfg, tools...)
		if err != nil {
			return nil, fmt.Errorf("qa problems: %w", err)
		}
		out = append(out, qaProblem(q, enc.Encode(e.Reset(q)), cfg, tools, nil))
	}
	return out, nil
}

// qaProblem is the Problem of question q with the given prompt tokens, whose episodes are
// fresh qa.Envs of cfg over tools that first replay the agent turns of replay (nil: none).
// cfg and tools must have built a qa.Env before.
func qaProblem(q qa.Question, prompt []int, cfg qa.Config, tools []env.Tool, replay []string) trainer.Problem {
	return trainer.Problem{
		Prompt:  prompt,
		Dataset: q.Dataset,
		Type:    q.Type,
		Answers: q.Answers,
		NewEpisode: func() rollout.Episode {
			ep, err := qa.New(cfg, tools...)
			if err != nil {
				panic("pipeline: qa.New failed after succeeding: " + err.Error())
			}
			ep.Reset(q)
			for _, turn := range replay {
				ep.Step(context.Background(), turn)
			}
			return &QAEpisode{Env: ep}
		},
	}
}
