package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"agentr1/mdp"
	"agentr1/model"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
)

// EvalConfig sets the limits of greedy evaluation rollouts (normally the RL settings').
type EvalConfig struct {
	Batch         int // problems per batched rollout
	MaxTurns      int // agent turns per episode
	MaxTurnTokens int // generated tokens per turn
	MaxLen        int // prompt + response tokens per episode
	MaxObsTokens  int // tokens kept of one observation (0: all)
	Workers       int // goroutines for environment steps (0: GOMAXPROCS)
}

// EvalConfigFrom takes the rollout limits of an RL configuration.
func EvalConfigFrom(c trainer.RLConfig, batch int) EvalConfig {
	return EvalConfig{Batch: batch, MaxTurns: c.MaxTurns, MaxTurnTokens: c.MaxTurnTokens, MaxLen: c.MaxLen, MaxObsTokens: c.MaxObsTokens}
}

// Evaluate rolls out policy greedily once on every problem and reports EM, F1, format-valid
// rate, mean turns, mean searches and the tool-error rate, overall and by dataset and question
// type, and where its name answers come from (EvalMetrics.Answers). It returns the rollout
// results too (in problem order). Greedy decoding makes it deterministic.
func Evaluate(ctx context.Context, policy *model.Model, enc rollout.Encoder, sp trainer.Specials, probs []trainer.Problem, cfg EvalConfig, name string) (*EvalMetrics, []*rollout.Result, error) {
	if cfg.Batch < 1 {
		cfg.Batch = 16
	}
	rc := rollout.Config{
		N: 1, MaxTurns: cfg.MaxTurns, MaxTurnTokens: cfg.MaxTurnTokens, MaxLen: cfg.MaxLen,
		MaxObsTokens: cfg.MaxObsTokens, StopTokens: []int{sp.ToolEnd, sp.ImEnd}, ToolEnd: sp.ToolEnd, Workers: cfg.Workers,
	}
	dec := policy.NewDecoder(min(cfg.Batch, len(probs)), cfg.MaxLen)
	var results []*rollout.Result
	for lo := 0; lo < len(probs); lo += cfg.Batch {
		hi := min(len(probs), lo+cfg.Batch)
		tasks := make([]rollout.Task, 0, hi-lo)
		for i := lo; i < hi; i++ {
			tasks = append(tasks, rollout.Task{Prompt: probs[i].Prompt, NewEpisode: probs[i].NewEpisode, Group: i})
		}
		out, err := rollout.Run(ctx, dec, model.Sampler{Greedy: true}, enc, tasks, rc)
		if err != nil {
			return nil, nil, fmt.Errorf("evaluate %s: %w", name, err)
		}
		results = append(results, out...)
	}
	m := Summarize(name, probs, results)
	// Where the answers come from, over the set and in each group: a type whose answers turn
	// invented after RL shows there even when the set's share hardly moves. Each episode is
	// classified once and counted in the set and in its groups.
	m.Answers = &AnswerSources{}
	for _, g := range m.Groups {
		g.Answers = &AnswerSources{}
	}
	for i, r := range results {
		one := AnswerSourcesOf([]*mdp.Trajectory{&r.Trajectory}, enc)
		m.Answers.add(one)
		for _, key := range groupKeys(probs[i]) {
			m.Groups[key].Answers.add(one)
		}
	}
	return m, results, nil
}

// groupKeys names the groups Summarize reports problem p in: its dataset and its question type.
func groupKeys(p trainer.Problem) []string {
	return []string{"dataset=" + p.Dataset, "type=" + p.Type}
}

// Summarize computes the evaluation figures of rollout results (results[i] answers probs[i]).
func Summarize(name string, probs []trainer.Problem, results []*rollout.Result) *EvalMetrics {
	all := &evalAcc{}
	groups := map[string]*evalAcc{}
	for i, s := range results {
		all.add(s)
		for _, key := range groupKeys(probs[i]) {
			if groups[key] == nil {
				groups[key] = &evalAcc{}
			}
			groups[key].add(s)
		}
	}
	m := all.metrics(name)
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	m.Groups = map[string]*EvalMetrics{}
	for _, k := range keys {
		m.Groups[k] = groups[k].metrics(k)
	}
	return m
}

// evalAcc sums per-episode figures.
type evalAcc struct {
	n                                                        int
	em, f1, format, turns, searches, toolErr, toolCalls, rew float64
	tools                                                    map[string]*toolAcc // by tool name
}

// toolAcc sums one tool's per-episode figures.
type toolAcc struct{ episodes, calls, errors float64 }

func (a *evalAcc) add(s *rollout.Result) {
	st := s.Stats
	a.n++
	a.em += st[trainer.StatEM]
	a.f1 += st[trainer.StatF1]
	a.format += st[trainer.StatFormat]
	a.searches += st[trainer.StatSearches]
	a.toolErr += st[trainer.StatToolErrors]
	a.toolCalls += st[trainer.StatToolCalls]
	a.turns += float64(len(s.Turns))
	a.rew += s.TotalReward()
	for key, calls := range st {
		name, ok := strings.CutPrefix(key, StatToolCallsPrefix)
		if !ok || calls == 0 {
			continue
		}
		if a.tools == nil {
			a.tools = map[string]*toolAcc{}
		}
		t := a.tools[name]
		if t == nil {
			t = &toolAcc{}
			a.tools[name] = t
		}
		t.episodes++
		t.calls += calls
		t.errors += st[StatToolErrorsPrefix+name]
	}
}

func (a *evalAcc) metrics(name string) *EvalMetrics {
	n := float64(max(a.n, 1))
	rate := 0.0
	if a.toolCalls > 0 {
		rate = a.toolErr / a.toolCalls
	}
	return &EvalMetrics{
		Name: name, N: a.n, EM: trainer.Num(a.em / n), F1: trainer.Num(a.f1 / n), FormatRate: trainer.Num(a.format / n),
		Turns: trainer.Num(a.turns / n), Searches: trainer.Num(a.searches / n), ToolErrors: trainer.Num(rate), Reward: trainer.Num(a.rew / n),
		Tools: a.toolMetrics(n),
	}
}

// toolMetrics are the per-tool figures over n episodes (nil when no tool was called).
func (a *evalAcc) toolMetrics(n float64) map[string]*ToolMetrics {
	if len(a.tools) == 0 {
		return nil
	}
	out := make(map[string]*ToolMetrics, len(a.tools))
	for name, t := range a.tools {
		out[name] = &ToolMetrics{UseRate: trainer.Num(t.episodes / n), Calls: trainer.Num(t.calls / n),
			ErrorRate: trainer.Num(t.errors / t.calls)}
	}
	return out
}
