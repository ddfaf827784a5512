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
		usage: "agentr1 copying --world-run RUN [--model DIR] [--n N]\n" +
			"  e.g. agentr1 copying --world-run runs/X                          (RUN/sft-base on the first 600 demonstrations)\n" +
			"       agentr1 copying --world-run runs/X --model runs/X/final --n 100\n" +
			"  For every token of a thought that copies a name or a number out of the tool response just\n" +
			"  read, it prints the probability the policy gives it and how often it is the policy's most\n" +
			"  probable token, which greedy decoding writes (pipeline.MeasureCopying); then how alike the\n" +
			"  output rows of the digits are, and those of the names' first pieces (pipeline.OutputSimilarities).",
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
}

func copyingFlags(fs *flag.FlagSet, a *copyingArgs) {
	fs.StringVar(&a.worldRun, "world-run", "", "run DIR of agentr1 train on the generated world, whose demonstrations are rebuilt from its config.json")
	fs.StringVar(&a.model, "model", "", "policy folder to measure (default RUN/sft-base, the warm start the demonstrations trained)")
	fs.IntVar(&a.n, "n", 600, "measure on the first N demonstrations (0: all)")
}

// runCopying prints the policy's figures on each kind of copied token.
func runCopying(ctx context.Context, a copyingArgs, stdout io.Writer) error {
	cfg, err := loadRunConfig(a.worldRun)
	if err != nil {
		return err
	}
	if a.model == "" {
		a.model = filepath.Join(a.worldRun, "sft-base")
	}
	if a.n < 0 {
		return fmt.Errorf("%w: --n %d: want 0 (all) or more", errUsage, a.n)
	}
	stats, sim, used, skipped, err := pipeline.CopyingOfRun(ctx, cfg, a.model, a.n)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("copying: interrupted")
		}
		return err
	}
	fmt.Fprintf(stdout, "%s, teacher-forced on %d of the run's demonstrations (%d longer than its context left out):\n", a.model, used-skipped, skipped)
	fmt.Fprintf(stdout, "%-28s %7s %9s %7s\n", "copied token", "tokens", "p(token)", "argmax")
	for kind := pipeline.CopyNameStart; kind <= pipeline.CopyLaterDigit; kind++ {
		s := stats[kind]
		if s.N == 0 {
			fmt.Fprintf(stdout, "%-28s %7d %9s %7s\n", kind, 0, "-", "-")
			continue
		}
		fmt.Fprintf(stdout, "%-28s %7d %9.3f %7.3f\n", kind, s.N, s.P, s.Argmax)
	}
	fmt.Fprintf(stdout, "output rows, mean cosine within a group: digits %.3f (%d tokens), name first pieces %.3f (%d tokens)\n",
		sim.Digits, sim.NDigits, sim.NameStarts, sim.NNames)
	return nil
}
