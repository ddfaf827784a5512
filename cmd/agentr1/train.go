package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"agentr1/internal/atomicfile"
	"agentr1/report"
	"agentr1/rl/trainer"
)

func init() {
	register(&command{
		name:    "train",
		summary: "the main job: world, tokenizer, search index, SFT warm start, RL, evaluation, report",
		usage: "agentr1 train [--algo grpo] [--steps N] [--out DIR] [--config FILE] [--resume DIR] [--<setting> V ...]\n" +
			"  e.g. agentr1 train                       (GRPO on the generated world, ~15 minutes on 2 cores)\n" +
			"       agentr1 train --algo ppo --seed 2 --out runs/ppo-2\n" +
			"       agentr1 train --rl.steps 5 --sft.steps 50 --out /tmp/smoke   (a quick smoke run)",
		flags: func(fs *flag.FlagSet) { declareTrainFlags(fs, new(trainArgs)) },
		run:   runTrain,
	})
}

// trainArgs are the train command's own flags; every run setting besides these is a flag bound
// to trainer.Config by bindConfig ("seed", "workers", "rl.lr", "sft.steps", "model.hidden", ...).
type trainArgs struct {
	cfg    trainer.Config
	out    string
	config string
	algo   string
	data   string
	resume string
	steps  int
}

// trainDataSets are the values --data accepts for training; the real-data sets are for
// `agentr1 eval`, since a policy trained from scratch here knows only the generated world's words.
var trainDataSets = []string{"world"}

func declareTrainFlags(fs *flag.FlagSet, a *trainArgs) {
	if a.cfg.RL.Algorithm == "" {
		a.cfg = trainer.DefaultConfig()
	}
	fs.StringVar(&a.out, "out", "", "run directory for config.json, metrics.jsonl, checkpoints, eval.json, report.html (default runs/<timestamp>)")
	fs.StringVar(&a.config, "config", "", "JSON file of settings (trainer.Config field names), applied before the flags")
	fs.StringVar(&a.algo, "algo", string(a.cfg.RL.Algorithm), "RL algorithm: "+algorithmNames())
	fs.StringVar(&a.data, "data", "world", "training data: "+strings.Join(trainDataSets, ", "))
	fs.StringVar(&a.resume, "resume", "", "continue the run in DIR from its latest checkpoint (its config.json is reused)")
	fs.IntVar(&a.steps, "steps", a.cfg.RL.Steps, "RL steps (same as --rl.steps)")
	bindConfig(fs, &a.cfg, "")
}

func algorithmNames() string {
	names := make([]string, len(trainer.Algorithms))
	for i, a := range trainer.Algorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// parseTrainArgs builds the run's settings: defaults, then the --algo defaults, then a --config
// file (or the resumed run's config.json), then the flags. Invalid settings are rejected here,
// before anything runs, naming the flag and the allowed values.
func parseTrainArgs(args []string, stderr io.Writer) (*trainArgs, error) {
	a := &trainArgs{cfg: trainer.DefaultConfig()}
	if v, ok := preScan(args, "algo"); ok {
		algo, err := trainer.ParseAlgorithm(v)
		if err != nil {
			return nil, fmt.Errorf("%w: --algo %q: want one of %s", errUsage, v, algorithmNames())
		}
		a.cfg.RL = trainer.DefaultRLConfig(algo)
	}
	if dir, ok := preScan(args, "resume"); ok {
		if err := loadConfigFile(filepath.Join(dir, report.ConfigFile), &a.cfg); err != nil {
			return nil, fmt.Errorf("--resume %s: %w", dir, err)
		}
	}
	if path, ok := preScan(args, "config"); ok {
		if err := loadConfigFile(path, &a.cfg); err != nil {
			return nil, err
		}
	}
	c := &command{name: "train", usage: commands["train"].usage, flags: commands["train"].flags}
	fs := newFlagSet(c, stderr)
	declareTrainFlags(fs, a)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	algo, err := trainer.ParseAlgorithm(a.algo)
	if err != nil {
		return nil, fmt.Errorf("%w: --algo %q: want one of %s", errUsage, a.algo, algorithmNames())
	}
	a.cfg.RL.Algorithm = algo
	if set["steps"] {
		a.cfg.RL.Steps = a.steps
	}
	if a.cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: --workers %d: want 0 (all cores) or more", errUsage, a.cfg.Workers)
	}
	if a.data != "world" {
		return nil, fmt.Errorf("%w: --data %q: training supports %s (the from-scratch policy learns the generated world's words); evaluate real data with `agentr1 eval --data hotpotqa|2wiki|musique|FILE`", errUsage, a.data, strings.Join(trainDataSets, ", "))
	}
	if a.resume != "" {
		a.out = a.resume
	}
	if a.out == "" {
		a.out = filepath.Join("runs", time.Now().Format("20060102-150405"))
	}
	a.cfg.CheckpointDir = filepath.Join(a.out, "checkpoints")
	if a.cfg.CheckpointEvery == 0 {
		a.cfg.CheckpointEvery = max(1, a.cfg.RL.Steps/4)
	}
	a.cfg.BasePolicy = filepath.Join(a.out, "sft-base")
	if err := a.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return a, nil
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	a, err := parseTrainArgs(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.out, 0o755); err != nil {
		return err
	}
	if err := writeJSONFile(filepath.Join(a.out, report.ConfigFile), a.cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	run, err := newTrainRun(a, stdout, stderr)
	if err != nil {
		return err
	}
	defer run.close()
	fmt.Fprintf(stdout, "agentr1 train: %s on the generated world, %d RL steps, seed %d -> %s\n", a.cfg.RL.Algorithm, a.cfg.RL.Steps, a.cfg.Seed, a.out)
	res, err := trainer.Run(ctx, a.cfg, a.resume != "", run.log)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stdout, "\n%v\ncontinue with: agentr1 train --resume %s\n", err, a.out)
			return exitError{code: 130}
		}
		return err
	}
	return run.finish(ctx, res)
}

// writeJSONFile writes v as indented JSON to path atomically.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}
