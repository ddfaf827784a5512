package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"syscall"

	"agentr1/rl/pipeline"
)

func init() {
	c := &command{
		name:    "copying",
		summary: "measure whether a run's policy copies the names and numbers it reads into its thoughts, teacher-forced on the run's demonstrations",
		usage: "agentr1 copying --world-run RUN [--model DIR] [--n N] [--unseen]\n" +
			"  e.g. agentr1 copying --world-run runs/X                          (RUN/sft-base on the first 600 demonstrations)\n" +
			"       agentr1 copying --world-run runs/X --model runs/X/final --n 100\n" +
			"       agentr1 copying --world-run runs/X --model runs/X/checkpoints/step-000060.ckpt   (the policy at RL step 60)\n" +
			"       agentr1 copying --world-run runs/X --unseen                 (on the evaluation world: read, not recalled)\n" +
			"  For every token of a thought that copies a name or a number out of the tool response just\n" +
			"  read, it prints the probability the policy gives it and how often it is the policy's most\n" +
			"  probable token, which greedy decoding writes (pipeline.MeasureCopying); then how alike the\n" +
			"  output rows of the digits are, and those of the names' first pieces (pipeline.OutputSimilarities).\n" +
			"  On a run with the calculator it then lets the policy write the calculating turn itself, from\n" +
			"  each demonstrated state with both numbers read, greedy and sampled as in RL, and prints how\n" +
			"  often it calls the calculator, on the right expression, on one number twice, or answers\n" +
			"  instead (pipeline.MeasureCalcTurn); and the answer turn from each state with the calculator's\n" +
			"  result read: how often it answers, answers the result, answers an operand, or notes the result\n" +
			"  in its thought (pipeline.MeasureAnswerTurn). Last it answers the run's held-out and unseen questions greedily\n" +
			"  and says where each name it answers with stands before the answer: in the question, in what the\n" +
			"  episode read or noted, or nowhere (invented; pipeline.AnswerSourcesOf).",
	}
	var a copyingArgs
	c.flags = func(fs *flag.FlagSet) { copyingFlags(fs, &a) }
	c.run = func(args []string, stdout, stderr io.Writer) error {
		var a copyingArgs
		fs := newFlagSet(c, stderr)
		copyingFlags(fs, &a)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if a.worldRun == "" {
			return fmt.Errorf("%w: --world-run RUN is required", errUsage)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return runCopying(ctx, a, stdout)
	}
	register(c)
}

// copyingArgs are copying's flags.
type copyingArgs struct {
	worldRun, model string
	n               int
	unseen          bool
}

func copyingFlags(fs *flag.FlagSet, a *copyingArgs) {
	fs.StringVar(&a.worldRun, "world-run", "", "run DIR of agentr1 train on the generated world, whose demonstrations are rebuilt from its config.json")
	fs.StringVar(&a.model, "model", "", "policy folder to measure (default RUN/sft-base, the warm start the demonstrations trained), or a checkpoint file of the run (RUN/checkpoints/step-N.ckpt: the policy at that step)")
	fs.IntVar(&a.n, "n", 600, "measure on the first N demonstrations (0: all)")
	fs.BoolVar(&a.unseen, "unseen", false, "measure on the scripted agent's demonstrations of the evaluation world's questions, whose names and numbers the policy never saw, instead of the run's own")
}

// runCopying prints the policy's figures on each kind of copied token.
func runCopying(ctx context.Context, a copyingArgs, stdout io.Writer) error {
	cfg, err := loadRunConfig(a.worldRun)
	if err != nil {
		return err
	}
	defer pipeline.SetParallelism(cfg)() // the run's shards, so that its figures come out again
	if a.model == "" {
		a.model = filepath.Join(a.worldRun, "sft-base")
	}
	if a.n < 0 {
		return fmt.Errorf("%w: --n %d: want 0 (all) or more", errUsage, a.n)
	}
	r, err := pipeline.CopyingOfRun(ctx, cfg, a.model, a.n, a.unseen)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("copying: interrupted")
		}
		return err
	}
	whose := "the run's demonstrations"
	if a.unseen {
		whose = "the scripted agent's demonstrations on the evaluation world"
	}
	fmt.Fprintf(stdout, "%s, teacher-forced on %d of %s (%d longer than its context left out):\n", a.model, r.Used-r.Skipped, whose, r.Skipped)
	fmt.Fprintf(stdout, "%-28s %7s %9s %7s\n", "copied token", "tokens", "p(token)", "argmax")
	for kind := pipeline.CopyNameStart; kind <= pipeline.CopyLaterDigit; kind++ {
		s := r.Stats[kind]
		if s.N == 0 {
			fmt.Fprintf(stdout, "%-28s %7d %9s %7s\n", kind, 0, "-", "-")
			continue
		}
		fmt.Fprintf(stdout, "%-28s %7d %9.3f %7.3f\n", kind, s.N, s.P, s.Argmax)
	}
	fmt.Fprintf(stdout, "output rows, mean cosine within a group: digits %.3f (%d tokens), name first pieces %.3f (%d tokens)\n",
		r.Similarity.Digits, r.Similarity.NDigits, r.Similarity.NameStarts, r.Similarity.NNames)
	if c := r.CalcTurn; c.States > 0 {
		turnTable(stdout, fmt.Sprintf("calculating turn, free-running from the %d demonstrated states with both numbers read:", c.States),
			[4]string{"calls", "right", "twice", "answers"}, c.Samples,
			[4]float64{c.Greedy.Calls, c.Greedy.Right, c.Greedy.Twice, c.Greedy.Answers},
			[4]float64{c.Sampled.Calls, c.Sampled.Right, c.Sampled.Twice, c.Sampled.Answers})
	}
	if c := r.AnswerTurn; c.States > 0 {
		turnTable(stdout, fmt.Sprintf("answer turn, free-running from the %d demonstrated states with the calculator's result read:", c.States),
			[4]string{"answers", "result", "operand", "noted"}, c.Samples,
			[4]float64{c.Greedy.Answers, c.Greedy.Result, c.Greedy.Operand, c.Greedy.Noted},
			[4]float64{c.Sampled.Answers, c.Sampled.Result, c.Sampled.Operand, c.Sampled.Noted})
	}
	for _, set := range []string{"heldout", "unseen"} {
		s, ok := r.Answers[set]
		if !ok {
			continue
		}
		fmt.Fprintf(stdout, "answers, greedy on the %d %s questions: %d names (not yes or no): %d in the question, %d read earlier in the episode, %d nowhere before\n",
			s.Episodes, set, s.Names, s.InQuestion, s.Read, s.Invented)
	}
	return nil
}

// turnTable prints a free-running turn's four shares, greedy and sampled, under their names.
func turnTable(w io.Writer, title string, cols [4]string, samples int, greedy, sampled [4]float64) {
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "%-28s %7s %9s %7s %7s\n", "", cols[0], cols[1], cols[2], cols[3])
	for _, row := range []struct {
		name string
		v    [4]float64
	}{{"greedy", greedy}, {fmt.Sprintf("sampled (%d per state)", samples), sampled}} {
		fmt.Fprintf(w, "%-28s %7.3f %9.3f %7.3f %7.3f\n", row.name, row.v[0], row.v[1], row.v[2], row.v[3])
	}
}
