package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"agentr1/internal/atomicfile"
	"agentr1/report"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

func init() {
	register(&command{
		name:    "train",
		summary: "the main job: world, tokenizer, search index, SFT warm start, RL, evaluation, report",
		usage: "agentr1 train [--algo grpo] [--steps N] [--out DIR] [--config FILE] [--resume DIR] [--data D --model DIR] [--log-format text|json] [--<setting> V ...]\n" +
			"  e.g. agentr1 train                       (GRPO on the generated world, 11-24 minutes on 2 cores)\n" +
			"       agentr1 train --algo ppo --seed 2 --out runs/ppo-2\n" +
			"       agentr1 train --tools search,calculator   (the calculator task: 0.3 of the questions need two searches and a calculation)\n" +
			"       agentr1 train --rl.steps 5 --sft.steps 50 --out /tmp/smoke   (a quick smoke run)\n" +
			"       agentr1 train --resume runs/ppo-2        (after Ctrl-C, during SFT or RL: continue where it stopped)\n" +
			"       agentr1 train --data hotpotqa --model ~/models/Qwen2.5-0.5B-Instruct --held-out 50 \\\n" +
			"             --rl.steps 20 --rl.prompts 2 --rl.n 4   (RL on real questions, BM25 over the mhqa corpus)\n" +
			"       agentr1 train --log-format json 2>log.jsonl   (log lines as JSON; progress stays on stdout)\n" +
			"  The calculator task takes, unless given, " + calculatorTaskFlags() + ".\n" +
			"  With --data other than world, --model is required: the run skips the generated world and SFT,\n" +
			"  trains the pretrained policy by RL on the set's questions and evaluates it on the last --held-out of them.\n" +
			"  Such a run takes, unless given, " + settingFlags(pipeline.Pretrained) + ":\n" +
			"  the defaults listed below are tuned for the ~1M-parameter policy of the generated world.",
		flags:      func(fs *flag.FlagSet) { declareTrainFlags(fs, new(trainArgs)) },
		flagGroup:  func(name string) string { return trainFlagDocs[name].group },
		groupOrder: trainFlagGroups,
		run:        runTrain,
	})
}

// trainArgs are the train command's own flags; every run setting besides these is a flag bound
// to pipeline.Config by bindConfig ("seed", "workers", "rl.lr", "sft.steps", "model.hidden", ...).
type trainArgs struct {
	cfg       pipeline.Config
	out       string
	config    string
	algo      string
	data      string
	model     string
	corpus    string
	resume    string
	steps     int
	logFormat string
	// pretrained holds the settings ForPretrained gave a run on real questions, and task those
	// the calculator task gave a run offered the calculator, for the log.
	pretrained, task []string
}

// The fewest steps between periodic checkpoints when --checkpoint-every or
// --sft-checkpoint-every is 0.
const (
	minCheckpointEvery    = 10
	minSFTCheckpointEvery = 100
)

// flagAliases names, for each Config field that train also sets through a short flag, that
// flag.
var flagAliases = map[string]string{"RL.Steps": "steps"}

// givenBy reports whether a Config field was given by a flag of set (the flags parsed, by name;
// a field's own flag or its alias) or by the --config file at path ("": none).
func givenBy(set map[string]bool, path string) func(field string) bool {
	return func(field string) bool {
		if set[fieldFlagName(field)] || set[flagAliases[field]] {
			return true
		}
		return path != "" && configFileSets(path, field)
	}
}

// trainDataSets are the values --data accepts besides a question FILE; every one but "world"
// needs --model.
var trainDataSets = []string{"world", "hotpotqa", "2wiki", "musique"}

func declareTrainFlags(fs *flag.FlagSet, a *trainArgs) {
	if a.cfg.RL.Algorithm == "" {
		a.cfg = pipeline.DefaultConfig()
	}
	fs.StringVar(&a.out, "out", "", trainUsage("out"))
	fs.StringVar(&a.config, "config", "", trainUsage("config"))
	fs.StringVar(&a.algo, "algo", string(a.cfg.RL.Algorithm), trainUsage("algo"))
	fs.StringVar(&a.data, "data", cmp.Or(a.cfg.Data, "world"), trainUsage("data"))
	fs.StringVar(&a.model, "model", a.cfg.InitModel, trainUsage("model"))
	fs.StringVar(&a.corpus, "corpus", cmp.Or(a.cfg.Corpus, "mhqa"), trainUsage("corpus"))
	fs.StringVar(&a.resume, "resume", "", trainUsage("resume"))
	fs.IntVar(&a.steps, "steps", a.cfg.RL.Steps, trainUsage("steps"))
	fs.StringVar(&a.logFormat, "log-format", logText, trainUsage("log-format"))
	bindConfig(fs, &a.cfg, "", trainUsage, trainFixedFields)
}

// parseTrainArgs builds the run's settings: defaults, then the --algo defaults (on the
// calculator task, its algorithm's when none is named), then a --config file (or the resumed
// run's config.json), then the flags. Invalid settings are rejected here,
// before anything runs, naming the flag and the allowed values.
func parseTrainArgs(args []string, stderr io.Writer) (*trainArgs, error) {
	a := &trainArgs{cfg: pipeline.DefaultConfig()}
	if v, ok := preScan(args, "algo"); ok {
		algo, err := trainer.ParseAlgorithm(v)
		if err != nil {
			return nil, fmt.Errorf("%w: --algo %q: want one of %s", errUsage, v, trainer.AlgorithmNames())
		}
		a.cfg.RL = trainer.DefaultRLConfig(algo)
	}
	if dir, ok := preScan(args, "resume"); ok {
		if err := readRunConfig(dir, &a.cfg); err != nil {
			return nil, fmt.Errorf("--resume %s: %w", dir, err)
		}
	}
	if path, ok := preScan(args, "config"); ok {
		if err := loadConfigFile(path, &a.cfg); err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
	}
	fs := newFlagSet(commands["train"], stderr)
	declareTrainFlags(fs, a)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	algo, err := trainer.ParseAlgorithm(a.algo)
	if err != nil {
		return nil, fmt.Errorf("%w: --algo %q: want one of %s", errUsage, a.algo, trainer.AlgorithmNames())
	}
	a.cfg.RL.Algorithm = algo
	if set["steps"] {
		a.cfg.RL.Steps = a.steps
	}
	if a.cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: --workers %d: want 0 (all cores) or more", errUsage, a.cfg.Workers)
	}
	if err := checkTrainData(a); err != nil {
		return nil, err
	}
	// A run offered the calculator gets the calculator task's settings (the questions that
	// need it, its rewards and start states) wherever neither a flag nor the --config file
	// gives them; a resumed run keeps the settings its config.json recorded.
	//
	// A run on real questions trains a pretrained checkpoint: it takes the paper's learning
	// rates and room for real passages (pipeline.Pretrained) wherever neither a flag nor the
	// --config file sets them. A resumed run keeps its config.json as it is.
	given := givenBy(set, a.config)
	if a.resume == "" && pipeline.IsWorldData(a.cfg.Data) {
		// The task's algorithm comes with its defaults (trainer.DefaultRLConfig) before the
		// --config file and the flags, as a named --algo's do: parse again with it named.
		if a.cfg.OffersCalculator() && !set["algo"] && !given("RL.Algorithm") {
			b, err := parseTrainArgs(append([]string{"--algo", string(pipeline.CalculatorAlgorithm)}, args...), stderr)
			if err == nil {
				b.task = append([]string{"RL.Algorithm=" + string(pipeline.CalculatorAlgorithm)}, b.task...)
			}
			return b, err
		}
		a.task = a.cfg.ForCalculator(given)
	}
	if a.resume == "" {
		a.pretrained = a.cfg.ForPretrained(given)
	}
	if _, err := newLogger(io.Discard, a.logFormat); err != nil {
		return nil, err
	}
	if a.resume != "" {
		a.out = a.resume
	}
	if a.out == "" {
		a.out = filepath.Join("runs", time.Now().Format("20060102-150405"))
	}
	// A new run in a run directory would replace its config.json, append to its metrics and
	// overwrite its checkpoints and models: the earlier run's record would be lost.
	for _, name := range []string{report.ConfigFile, report.MetricsFile} {
		if _, err := os.Stat(filepath.Join(a.out, name)); a.resume == "" && err == nil {
			return nil, fmt.Errorf("%w: --out %s already holds a run (%s); continue it with --resume %s, or choose another folder", errUsage, a.out, name, a.out)
		}
	}
	a.cfg.CheckpointDir = filepath.Join(a.out, "checkpoints")
	// Periodic checkpoints guard a long run against a crash (an interrupt always saves): a
	// quarter of the RL steps and a tenth of the SFT steps (copy steps too) apart, but never
	// so often that a short run writes (and logs) one at every step.
	if a.cfg.CheckpointEvery == 0 {
		a.cfg.CheckpointEvery = max(minCheckpointEvery, a.cfg.RL.Steps/4)
	}
	if a.cfg.SFTCheckpointEvery == 0 {
		a.cfg.SFTCheckpointEvery = max(minSFTCheckpointEvery, a.cfg.SFT.TotalSteps()/10)
	}
	// The SFT base lives in the run directory unless --base-policy names one to share between
	// runs (loaded when it holds a model, else trained and saved there). A resumed run keeps
	// the base its config.json names: another would make it a different run.
	switch {
	case !pipeline.IsWorldData(a.cfg.Data):
		a.cfg.BasePolicy = ""
	case !set["base-policy"] && (a.resume == "" || a.cfg.BasePolicy == ""):
		a.cfg.BasePolicy = filepath.Join(a.out, "sft-base")
	}
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
	logger, err := newLogger(stderr, a.logFormat)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		logger.Error("train failed", "err", err, "out", a.out)
		return exitError{code: 1}
	}
	if err := os.MkdirAll(a.out, 0o755); err != nil {
		return fail(err)
	}
	if err := writeRunConfig(a.out, a.cfg); err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	run, err := newTrainRun(a, stdout, logger)
	if err != nil {
		return fail(err)
	}
	defer run.close()
	var res *pipeline.Result
	if pipeline.IsWorldData(a.cfg.Data) {
		fmt.Fprintf(stdout, "agentr1 train: %s on the generated world, %d RL steps, seed %d -> %s\n", a.cfg.RL.Algorithm, a.cfg.RL.Steps, a.cfg.Seed, a.out)
		if len(a.task) > 0 {
			fmt.Fprintf(stdout, "settings of the calculator task (a flag overrides each): %s\n", strings.Join(a.task, ", "))
		}
		res, err = pipeline.Run(ctx, a.cfg, a.resume != "", run.log)
	} else {
		fmt.Fprintf(stdout, "agentr1 train: %s on %s from %s, %d RL steps, seed %d -> %s\n", a.cfg.RL.Algorithm, a.cfg.Data, a.cfg.InitModel, a.cfg.RL.Steps, a.cfg.Seed, a.out)
		if len(a.pretrained) > 0 {
			fmt.Fprintf(stdout, "settings for a pretrained checkpoint (a flag overrides each): %s\n", strings.Join(a.pretrained, ", "))
		}
		res, err = runRealData(ctx, a, run)
	}
	if err != nil {
		if ctx.Err() != nil {
			logger.Warn("interrupted", "err", err)
			fmt.Fprintf(stdout, "\n%v\ncontinue with: agentr1 train --resume %s\n", err, a.out)
			return exitError{code: 130}
		}
		return fail(err)
	}
	if err := run.finish(ctx, res); err != nil {
		return fail(err)
	}
	return nil
}

// settingFlags lists settings as the flags that set each ("--rl.lr 1e-06, ...").
func settingFlags(settings []pipeline.Setting) string {
	var fl []string
	for _, p := range settings {
		if b, ok := p.Value.(bool); ok {
			fl = append(fl, fmt.Sprintf("--%s=%v", fieldFlagName(p.Field), b))
		} else {
			fl = append(fl, fmt.Sprintf("--%s %v", fieldFlagName(p.Field), p.Value))
		}
	}
	return strings.Join(fl, ", ")
}

// calculatorTaskFlags lists the calculator task's algorithm and settings as flags.
func calculatorTaskFlags() string {
	return "--algo " + string(pipeline.CalculatorAlgorithm) + ", " + settingFlags(pipeline.CalculatorTask)
}

// checkTrainData checks --data, --model and --corpus and records them in the run's settings.
func checkTrainData(a *trainArgs) error {
	world := pipeline.IsWorldData(a.data)
	if !world && !slices.Contains(trainDataSets, a.data) {
		if st, err := os.Stat(a.data); err != nil || st.IsDir() {
			return fmt.Errorf("%w: --data %q: want %s or a question FILE (not a readable file: %v)", errUsage, a.data, strings.Join(trainDataSets, ", "), err)
		}
	}
	switch {
	case !world && a.model == "":
		return fmt.Errorf("%w: --data %s needs --model DIR: a policy trained from scratch here learns only the generated world's words and cannot answer real questions; "+
			"pass a pretrained Hugging Face Qwen2/Qwen2.5/Qwen3 folder (config.json, model.safetensors, tokenizer.json), e.g. --model ~/models/Qwen2.5-0.5B-Instruct, or one of our checkpoints (runs/X/final)", errUsage, a.data)
	case world && a.model != "":
		return fmt.Errorf("%w: --model is for real --data (hotpotqa, 2wiki, musique or a FILE); on the generated world the policy starts from scratch and its SFT base is cached in the run's sft-base/", errUsage)
	case !world:
		if _, err := os.Stat(filepath.Join(a.model, "config.json")); err != nil {
			return fmt.Errorf("%w: --model %s: not a model folder (%v)", errUsage, a.model, err)
		}
	}
	a.cfg.Data, a.cfg.InitModel, a.cfg.Corpus = a.data, a.model, ""
	if !world {
		a.cfg.Corpus = a.corpus
	}
	return nil
}

// writeJSONFile writes v as indented JSON to path atomically.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}
