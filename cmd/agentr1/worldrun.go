package main

import (
	"flag"
	"fmt"

	"agentr1/env/qa"
	"agentr1/env/world"
	"agentr1/rl/pipeline"
)

// A run of `agentr1 train` on the generated world keeps only its settings (config.json) and its
// checkpoints; its worlds are rebuilt from the settings, since the same world.Config always
// generates the same world. eval and chat (--world-run RUN) use this file to evaluate a
// checkpoint on the run's own questions and to offer questions it can answer.

// loadRunConfig reads the settings of the training run in dir (its config.json over the
// defaults), all but its worker count, and refuses a run on real data, which has no generated
// world.
func loadRunConfig(dir string) (pipeline.Config, error) {
	cfg := pipeline.DefaultConfig()
	if err := readRunConfig(dir, &cfg); err != nil {
		return cfg, fmt.Errorf("--world-run %s: %w", dir, err)
	}
	if !pipeline.IsWorldData(cfg.Data) {
		return cfg, fmt.Errorf("--world-run %s: the run trained on --data %s, not the generated world; evaluate it with --data", dir, cfg.Data)
	}
	// The run's worker count changed only its speed, on its own machine; a replay runs on this
	// machine's cores. The shard count, which decides the bits, stays the run's.
	cfg.Workers = 0
	return cfg, nil
}

// worldSet is one evaluation set of a generated-world run: its questions and the world whose
// passages answer them.
type worldSet struct {
	name      string // "heldout" or "unseen", as in the run's eval.json
	world     *world.World
	questions []qa.Question
}

// worldSets rebuilds the run's two evaluation sets from its settings with
// pipeline.EvalQuestions, the function pipeline.Prepare draws them with.
// TestWorldSetsMatchPrepare holds the two to the same questions.
func worldSets(cfg pipeline.Config) ([]worldSet, error) {
	train, err := world.New(cfg.TrainWorld)
	if err != nil {
		return nil, fmt.Errorf("training world: %w", err)
	}
	eval, err := world.New(cfg.EvalWorld)
	if err != nil {
		return nil, fmt.Errorf("evaluation world: %w", err)
	}
	heldout, unseen := pipeline.EvalQuestions(cfg, train, eval)
	return []worldSet{
		{name: "heldout", world: train, questions: heldout},
		{name: "unseen", world: eval, questions: unseen},
	}, nil
}

// worldSetOf returns the set whose questions --world names: the training world's held-out
// questions for "train", the evaluation world's unseen ones for "eval".
func worldSetOf(sets []worldSet, which string) worldSet {
	if which == "train" {
		return sets[0]
	}
	return sets[1]
}

// runLimits makes the run's episode settings the defaults of the agent flags not given on the
// command line: passages per search, turns, tokens per turn and the length limit, so a
// checkpoint is evaluated (or chatted with) as the run trained and evaluated it.
func runLimits(fs *flag.FlagSet, a *agentFlags, cfg pipeline.Config) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, s := range []struct {
		flag string
		v    *int
		run  int
	}{
		{"topk", &a.topK, cfg.SearchTopK},
		{"max-turns", &a.maxTurns, cfg.RL.MaxTurns},
		{"turn-tokens", &a.turnTokens, cfg.RL.MaxTurnTokens},
		{"max-len", &a.maxLen, cfg.RL.MaxLen},
	} {
		if !given[s.flag] {
			*s.v = s.run
		}
	}
	if !given["think"] {
		a.think = cfg.RequireThink
	}
}
