package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/env/search"
	"agentr1/rl/pipeline"
)

func init() {
	register(&command{
		name:    "eval",
		summary: "evaluate a checkpoint on its run's generated world, or on real multi-hop QA (HotpotQA, 2Wiki, MuSiQue)",
		usage: "agentr1 eval (--world-run RUN [--model DIR] | --model DIR --data hotpotqa|2wiki|musique|FILE) [--n N] [--retriever URL] [--out FILE]\n" +
			"  e.g. agentr1 eval --world-run runs/X                (RUN/final on the run's held-out and unseen questions)\n" +
			"       agentr1 eval --world-run runs/X --model runs/X/sft-base --n 50\n" +
			"       agentr1 eval --world-run runs/X --model runs/X/checkpoints/step-000060.ckpt   (the policy at RL step 60)\n" +
			"       agentr1 eval --model ~/models/Qwen2.5-3B-Instruct --data hotpotqa --n 100\n" +
			"       agentr1 eval --model runs/X/final --data musique --retriever http://127.0.0.1:8000/retrieve\n" +
			"  With --world-run the run's worlds are rebuilt from RUN/config.json and its episode settings\n" +
			"  (search top-k, turns, tokens per turn, length, think) are the defaults.",
		flags: func(fs *flag.FlagSet) { declareEvalFlags(fs, &evalArgs{}) },
		run:   runEval,
	})
}

// evalArgs are the eval command's settings.
type evalArgs struct {
	agentFlags
	worldRun  string
	data, out string
	n, batch  int
}

func declareEvalFlags(fs *flag.FlagSet, a *evalArgs) {
	declareAgentFlags(fs, &a.agentFlags, 5, "passages per search (Agent-R1: 5; with --world-run the run's)")
	fs.StringVar(&a.worldRun, "world-run", "", "run DIR of agentr1 train on the generated world: evaluate on its held-out and unseen questions (--model defaults to RUN/final)")
	fs.StringVar(&a.data, "data", "hotpotqa", "questions without --world-run: hotpotqa, 2wiki, musique (embedded samples) or a FILE (mhqa JSONL, FlashRAG JSONL with golden_answers, or HotpotQA JSON)")
	fs.StringVar(&a.out, "out", "", "write the figures as JSON to this file (with --world-run, an object keyed by set)")
	fs.IntVar(&a.n, "n", 0, "evaluate the first N questions (of each set with --world-run; 0: all)")
	fs.IntVar(&a.batch, "batch", 8, "questions decoded together (with --world-run the run's --eval-batch)")
}

func runEval(args []string, stdout, stderr io.Writer) error {
	a := &evalArgs{}
	fs := newFlagSet(commands["eval"], stderr)
	declareEvalFlags(fs, a)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if a.worldRun != "" {
		return runWorldEval(fs, a, stdout, stderr)
	}
	if err := a.check(1, flagMin{"n", a.n, 0}, flagMin{"batch", a.batch, 1}); err != nil {
		return err
	}
	qs, err := loadQuestions(a.data)
	if err != nil {
		return err
	}
	if a.n > 0 && a.n < len(qs) {
		qs = qs[:a.n]
	}
	policy, tok, sp, err := loadAgent(&a.agentFlags, stderr)
	if err != nil {
		return err
	}
	tools, err := evalTools(&a.agentFlags)
	if err != nil {
		return err
	}
	qcfg := qa.DefaultConfig()
	qcfg.RequireThink = a.think
	probs, err := pipeline.QAProblems(qs, qcfg, tools, tok)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ec := pipeline.EvalConfig{Batch: a.batch, MaxTurns: a.maxTurns, MaxTurnTokens: a.turnTokens, MaxLen: a.maxLen}
	fmt.Fprintf(stdout, "evaluating %s (%d parameters) on %d questions of %s, greedy, top-%d search ...\n", a.model, policy.NumParams(), len(probs), a.data, a.topK)
	m, _, err := pipeline.Evaluate(ctx, policy, tok, sp, probs, ec, "eval/"+a.data)
	if err != nil {
		return err
	}
	printEvalTable(stdout, "all", m)
	if a.out != "" {
		return writeJSONFile(a.out, m)
	}
	return nil
}

// runWorldEval evaluates a checkpoint (default RUN/final) on the held-out and unseen questions
// of the run's generated worlds, rebuilt from RUN/config.json, with the run's episode settings
// and its evaluation's batch and observation limit, as training evaluated it.
func runWorldEval(fs *flag.FlagSet, a *evalArgs, stdout, stderr io.Writer) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range []string{"data", "corpus", "retriever"} {
		if given[name] {
			return fmt.Errorf("%w: --%s is for real data; --world-run searches the run's own worlds", errUsage, name)
		}
	}
	cfg, err := loadRunConfig(a.worldRun)
	if err != nil {
		return err
	}
	defer pipeline.SetParallelism(cfg)() // the run's shards, so that its figures come out again
	if a.model == "" {
		a.model = filepath.Join(a.worldRun, "final")
	}
	a.runCheckpoint(cfg, a.worldRun)
	runLimits(fs, &a.agentFlags, cfg)
	if !given["batch"] {
		a.batch = cfg.EvalBatch
	}
	if err := a.check(1, flagMin{"n", a.n, 0}, flagMin{"batch", a.batch, 1}); err != nil {
		return err
	}
	policy, tok, sp, err := loadAgent(&a.agentFlags, stderr)
	if err != nil {
		return err
	}
	sets, err := worldSets(cfg)
	if err != nil {
		return fmt.Errorf("--world-run %s: %w", a.worldRun, err)
	}
	qcfg := cfg.QAConfig()
	qcfg.Env.MaxTurns = a.maxTurns
	qcfg.RequireThink = a.think
	ec := pipeline.EvalConfigFrom(cfg.RL, a.batch)
	ec.MaxTurns, ec.MaxTurnTokens, ec.MaxLen = a.maxTurns, a.turnTokens, a.maxLen
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results := map[string]*pipeline.EvalMetrics{}
	fmt.Fprintf(stdout, "evaluating %s (%d parameters) on the worlds of %s, greedy, top-%d search ...\n", a.policyName(), policy.NumParams(), a.worldRun, a.topK)
	for _, set := range sets {
		qs := set.questions
		if a.n > 0 && a.n < len(qs) {
			qs = qs[:a.n]
		}
		if len(qs) == 0 {
			continue
		}
		tools, err := pipeline.BuildTools(cfg.Tools, set.world.Passages, a.topK, cfg.Workers)
		if err != nil {
			return err
		}
		probs, err := pipeline.QAProblems(qs, qcfg, tools, tok)
		if err != nil {
			return err
		}
		m, _, err := pipeline.Evaluate(ctx, policy, tok, sp, probs, ec, "eval/"+set.name)
		if err != nil {
			return err
		}
		results[set.name] = m
		fmt.Fprintln(stdout)
		printEvalTable(stdout, set.name, m)
	}
	if a.out != "" {
		return writeJSONFile(a.out, results)
	}
	return nil
}

// loadQuestions reads an embedded set by name or a file in any supported format.
func loadQuestions(name string) ([]qa.Question, error) {
	switch name {
	case "hotpotqa", "2wiki", "musique":
		return qa.LoadEmbedded(name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--data %q: not hotpotqa, 2wiki or musique, and not a readable file: %w", name, err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(512)
	trimmed := strings.TrimSpace(string(head))
	switch {
	case strings.HasPrefix(trimmed, "["):
		qs, _, err := qa.LoadHotpotJSON(br, name)
		return qs, err
	case strings.Contains(trimmed, `"golden_answers"`):
		return qa.LoadFlashRAG(br, name, strings.TrimSuffix(filepath.Base(name), filepath.Ext(name)))
	default:
		return qa.LoadMHQA(br, name)
	}
}

// evalTools returns the search tool: a remote retriever when --retriever is set (checked to
// answer a query first), else BM25 over --corpus.
func evalTools(a *agentFlags) ([]env.Tool, error) {
	if a.retriever != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := search.NewRemote(a.retriever).Check(ctx); err != nil {
			return nil, fmt.Errorf("--retriever %s: %w", a.retriever, err)
		}
		return []env.Tool{search.NewRemoteSearch(a.retriever, a.topK)}, nil
	}
	passages, err := search.LoadCorpus(a.corpus)
	if err != nil {
		return nil, err
	}
	ix, err := search.Build(passages, search.Options{})
	if err != nil {
		return nil, err
	}
	return []env.Tool{search.NewTool(ix, a.topK)}, nil
}

// printEvalTable prints the overall figures in a row named name and one row per dataset and
// question type, as the paper's tables report them.
func printEvalTable(w io.Writer, name string, m *pipeline.EvalMetrics) {
	row := func(name string, m *pipeline.EvalMetrics) {
		fmt.Fprintf(w, "%-28s %5d  %6.4f  %6.4f  %6.3f  %5.2f  %6.2f  %6.3f\n", name, m.N, float64(m.EM), float64(m.F1),
			float64(m.FormatRate), float64(m.Turns), float64(m.Searches), float64(m.ToolErrors))
	}
	fmt.Fprintf(w, "%-28s %5s  %6s  %6s  %6s  %5s  %6s  %6s\n", "", "n", "EM", "F1", "format", "turns", "search", "toolerr")
	row(name, m)
	keys := make([]string, 0, len(m.Groups))
	for k := range m.Groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row("  "+k, m.Groups[k])
	}
}
