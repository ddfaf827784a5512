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

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/env/search"
	"agentr1/rl/pipeline"
)

func init() {
	register(&command{
		name:    "eval",
		summary: "evaluate a checkpoint on real multi-hop QA (HotpotQA, 2Wiki, MuSiQue) with BM25 or a remote retriever",
		usage: "agentr1 eval --model DIR --data hotpotqa|2wiki|musique|FILE [--n N] [--retriever URL] [--out FILE]\n" +
			"  e.g. agentr1 eval --model ~/models/Qwen2.5-3B-Instruct --data hotpotqa --n 100\n" +
			"       agentr1 eval --model runs/X/final --data musique --retriever http://127.0.0.1:8000/retrieve",
		flags: func(fs *flag.FlagSet) { declareEvalFlags(fs, &evalArgs{}) },
		run:   runEval,
	})
}

// evalArgs are the eval command's settings.
type evalArgs struct {
	agentFlags
	data, out string
	n, batch  int
}

func declareEvalFlags(fs *flag.FlagSet, a *evalArgs) {
	declareAgentFlags(fs, &a.agentFlags, 5, "passages per search (Agent-R1: 5)")
	fs.StringVar(&a.data, "data", "hotpotqa", "questions: hotpotqa, 2wiki, musique (embedded samples) or a FILE (mhqa JSONL, FlashRAG JSONL with golden_answers, or HotpotQA JSON)")
	fs.StringVar(&a.out, "out", "", "write the figures as JSON to this file")
	fs.IntVar(&a.n, "n", 0, "evaluate the first N questions (0: all)")
	fs.IntVar(&a.batch, "batch", 8, "questions decoded together")
}

func runEval(args []string, stdout, stderr io.Writer) error {
	a := &evalArgs{}
	fs := newFlagSet(commands["eval"], stderr)
	declareEvalFlags(fs, a)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
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
	printEvalTable(stdout, m)
	if a.out != "" {
		return writeJSONFile(a.out, m)
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

// evalTools returns the search tool: a remote retriever when --retriever is set, else BM25
// over --corpus.
func evalTools(a *agentFlags) ([]env.Tool, error) {
	if a.retriever != "" {
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

// printEvalTable prints the overall figures and one row per dataset and question type, as the
// paper's tables report them.
func printEvalTable(w io.Writer, m *pipeline.EvalMetrics) {
	row := func(name string, m *pipeline.EvalMetrics) {
		fmt.Fprintf(w, "%-28s %5d  %6.4f  %6.4f  %6.3f  %5.2f  %6.2f  %6.3f\n", name, m.N, float64(m.EM), float64(m.F1),
			float64(m.FormatRate), float64(m.Turns), float64(m.Searches), float64(m.ToolErrors))
	}
	fmt.Fprintf(w, "%-28s %5s  %6s  %6s  %6s  %5s  %6s  %6s\n", "", "n", "EM", "F1", "format", "turns", "search", "toolerr")
	row("all", m)
	keys := make([]string, 0, len(m.Groups))
	for k := range m.Groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row("  "+k, m.Groups[k])
	}
}
