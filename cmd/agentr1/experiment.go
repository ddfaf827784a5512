package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"agentr1/rl/experiment"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

func init() {
	register(&command{
		name:    "experiment",
		summary: "the paper's Table 2 and ablations in miniature: 7 methods and 3 ablations x seeds, mean ± std",
		usage: "agentr1 experiment --preset paper-mini [--quick] [--seeds 3] [--methods a,b] [--out DIR] [--workers N] [--dry-run] [--list | --unit ID [--wait D] [--take-over]] [--log-format text|json] [--<setting> V ...]\n" +
			"  e.g. agentr1 experiment --preset paper-mini --quick          (about an hour on 2 cores -> runs/experiment-paper-mini-quick)\n" +
			"       agentr1 experiment --preset paper-mini --quick --dry-run   (the plan and its time budget only)\n" +
			"       agentr1 experiment --preset paper-mini --seeds 1 --rl.steps 10 --workers 2 --out runs/exp1\n" +
			"       agentr1 experiment --preset paper-mini --quick --methods grpo,grpo-no-loss-mask --rl.steps 120 --eval-every 40 --out runs/exp2\n" +
			"            (the loss-mask ablation, long enough to show, with a table of the evaluations during training)\n" +
			"       agentr1 experiment --preset tiny --seeds 2 --out /tmp/exp   (a smoke test: seconds)\n" +
			"       agentr1 experiment --preset paper-mini --quick --list      (the unit IDs, SFT bases first)\n" +
			"       agentr1 experiment --preset paper-mini --quick --out /tmp/exp-units --unit seed-1/sft --wait 2h\n" +
			"            (one unit, as a task of a Slurm array or a Kubernetes Indexed Job runs it: deploy/, docs/SCALING.md)\n" +
			"  Per seed: one SFT warm start; Base Tool Call and Naive RAG evaluated with that SFT base; then PPO, GRPO,\n" +
			"  REINFORCE++, REINFORCE++-baseline, RLOO and the ablations (PPO w/o advantage mask, PPO w/o both masks,\n" +
			"  GRPO w/o loss mask), each trained from the SFT base and evaluated on the held-out and unseen questions.\n" +
			"  Writes results.md (mean ± std per method in the paper's layout; with --eval-every N, also the evaluations\n" +
			"  during training, step by step) and results.json (per method and seed) after every unit. Ctrl-C stops\n" +
			"  at the next step with the state saved; the same command again resumes (finished units are skipped, an\n" +
			"  unfinished RL run or SFT continues from its checkpoint).\n" +
			"  Settings: the current `agentr1 train` defaults but where the preset sets its own (the defaults below are\n" +
			"  --preset paper-mini's, and --quick's where they differ); --<setting> V (any `agentr1 help train` setting)\n" +
			"  applies to every run. --dry-run prints the plan and its time budget: about 10 hours on 2 cores,\n" +
			"  an hour with --quick.",
		flags:      declareExperimentHelpFlags,
		flagGroup:  experimentFlagGroup,
		groupOrder: append([]string{"experiment"}, trainFlagGroups...),
		run:        runExperiment,
	})
}

// experimentArgs are the experiment command's flags; cfg receives the --<setting> flags, which
// are then applied over the preset.
type experimentArgs struct {
	preset    string
	quick     bool
	seeds     int
	methods   string
	out       string
	dryRun    bool
	logFormat string
	// Units run by several processes (docs/SCALING.md).
	list       bool
	unit       string
	wait       time.Duration
	takeOver   bool
	staleAfter time.Duration
	cfg        pipeline.Config
}

func declareExperimentFlags(fs *flag.FlagSet, a *experimentArgs) {
	fs.StringVar(&a.preset, "preset", "paper-mini", "experiment: "+strings.Join(experiment.Presets, ", ")+" (tiny: a seconds-long smoke test)")
	fs.BoolVar(&a.quick, "quick", false, "a budget of about an hour on 2 cores: one SFT base shared by the seeds, fewer RL steps and questions (\"with --quick\" in the settings' defaults below)")
	fs.IntVar(&a.seeds, "seeds", 3, "seeds per method (1, 2, 3, ...)")
	fs.StringVar(&a.methods, "methods", "", "comma-separated rows to run (default: every row of the paper's table; gspo, opo, gpg and grpo-passk run only when named): "+strings.Join(experiment.MethodNames(), ", "))
	fs.StringVar(&a.out, "out", "", "run directory (default runs/experiment-<preset>[-quick]); running again with the same flags resumes it")
	fs.BoolVar(&a.dryRun, "dry-run", false, "print the plan and its time budget, run nothing")
	fs.BoolVar(&a.list, "list", false, "print the plan's unit IDs, one a line, SFT bases first, and run nothing")
	fs.StringVar(&a.unit, "unit", "", "run only the unit of this ID (from --list); other processes may run other units in the same --out at the same time")
	fs.DurationVar(&a.wait, "wait", 0, "how long a unit waits for the SFT base it starts from, made by another process (0: fail at once)")
	fs.BoolVar(&a.takeOver, "take-over", false, "run a unit even if another process's claim on it is fresh (that process is known to be dead)")
	fs.DurationVar(&a.staleAfter, "stale-after", experiment.DefaultStaleAfter, "a unit's claim with no heartbeat for this long is taken over (hosts' clocks must agree to well within it)")
	declareLogFlag(fs, &a.logFormat)
	bindConfig(fs, &a.cfg, "", trainUsage, trainFixedFields)
}

// declareExperimentHelpFlags declares the experiment's flags for `agentr1 help experiment`,
// each setting's default being what the default preset's plan runs (experiment.NewPlan, the
// code that applies it) rather than train's, followed by its value with --quick where that
// differs: "240; 20 with --quick".
func declareExperimentHelpFlags(fs *flag.FlagSet) {
	declareExperimentFlags(fs, &experimentArgs{cfg: pipeline.DefaultConfig()})
	preset := fs.Lookup("preset").DefValue
	full, quick := planDefaults(preset, false), planDefaults(preset, true)
	for name, def := range full {
		if quick[name] != def {
			def += "; " + quick[name] + " with --quick"
		}
		fs.Lookup(name).DefValue = def
	}
	for _, name := range experimentFixed {
		if f := fs.Lookup(name); f != nil {
			f.Usage, f.DefValue = "set by the experiment for each run (refused here)", ""
		}
	}
}

// planDefaults returns, by flag name, the value of every setting flag in the plan of preset
// (with or without --quick) before any --<setting> flag is applied.
func planDefaults(preset string, quick bool) map[string]string {
	p, err := experiment.NewPlan(experiment.Request{Preset: preset, Quick: quick, Seeds: 1})
	if err != nil {
		panic(err) // the default preset is always known
	}
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	defs := map[string]string{}
	for _, name := range bindConfig(fs, &p.Config, "", trainUsage, trainFixedFields) {
		defs[name] = fs.Lookup(name).DefValue
	}
	return defs
}

// experimentFlagGroup lists the experiment's own flags first, then the run settings under
// train's sections.
func experimentFlagGroup(name string) string {
	if experimentOwnFlags[name] {
		return "experiment"
	}
	return trainFlagDocs[name].group
}

// experimentOwnFlags are the flags the experiment declares itself; the others are run settings.
var experimentOwnFlags = map[string]bool{"preset": true, "quick": true, "seeds": true, "methods": true, "out": true, "log-format": true, "dry-run": true,
	"list": true, "unit": true, "wait": true, "take-over": true, "stale-after": true}

// experimentFixed are settings the experiment decides itself.
// (checkpoint-dir and rl.algorithm are not flags at all: trainFixedFields.)
var experimentFixed = []string{"seed", "base-policy", "rl.no-loss-mask", "rl.no-advantage-mask"}

// parseExperimentArgs builds the plan: the preset, then the --<setting> flags given, applied to
// the shared settings and (for rl.* settings) to every method's RL settings.
func parseExperimentArgs(args []string, stderr io.Writer) (*experimentArgs, *experiment.Plan, error) {
	a := &experimentArgs{cfg: pipeline.DefaultConfig()}
	fs := newFlagSet(commands["experiment"], stderr)
	declareExperimentFlags(fs, a)
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, err
	}
	var overrides []string
	set := map[string]bool{} // the overrides' flags, by name
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case experimentOwnFlags[f.Name] || f.Name == "workers":
		case slices.Contains(experimentFixed, f.Name):
			err = fmt.Errorf("%w: --%s is set by the experiment for each run", errUsage, f.Name)
		default:
			overrides = append(overrides, "--"+f.Name+"="+f.Value.String())
			set[f.Name] = true
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if _, err := newLogger(io.Discard, a.logFormat); err != nil {
		return nil, nil, err
	}
	var methods []string
	for _, m := range strings.Split(a.methods, ",") {
		if m = strings.TrimSpace(m); m != "" {
			methods = append(methods, m)
		}
	}
	req := experiment.Request{Preset: a.preset, Quick: a.quick, Seeds: a.seeds, Workers: a.cfg.Workers, Methods: methods, Overrides: overrides}
	p, err := experiment.NewPlan(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := applyOverrides(p, overrides); err != nil {
		return nil, nil, err
	}
	// As train: runs offered the calculator get the calculator task's settings unless given.
	// Each method names its own algorithm and the preset its RL steps, so the task's RL
	// settings are not taken.
	overridden := givenBy(set, "")
	given := func(field string) bool { return strings.HasPrefix(field, "RL.") || overridden(field) }
	p.Config.ForCalculator(given)
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if a.unit != "" && !slices.ContainsFunc(p.Units(), func(u experiment.Unit) bool { return u.ID() == a.unit }) {
		return nil, nil, fmt.Errorf("%w: --unit %q is not a unit of this plan: --list prints them", errUsage, a.unit)
	}
	if a.wait < 0 || a.staleAfter < time.Second {
		return nil, nil, fmt.Errorf("%w: --wait %s, --stale-after %s: want a wait of 0 or more and a stale time of at least 1s", errUsage, a.wait, a.staleAfter)
	}
	if a.list && (a.unit != "" || a.dryRun) {
		return nil, nil, fmt.Errorf("%w: --list prints the units and runs nothing: give it without --unit and --dry-run", errUsage)
	}
	if a.out == "" {
		a.out = filepath.Join("runs", "experiment-"+a.preset)
		if a.quick {
			a.out += "-quick"
		}
	}
	return a, p, nil
}

// applyOverrides sets each "--name=value" on the plan's shared settings and, for rl.* names, on
// every RL method's settings.
func applyOverrides(p *experiment.Plan, overrides []string) error {
	set := func(cfg *pipeline.Config, o string) error {
		fs := flag.NewFlagSet("override", flag.ContinueOnError)
		bindConfig(fs, cfg, "", trainUsage, trainFixedFields)
		name, value, _ := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%w: --%s %q: %v", errUsage, name, value, err)
		}
		return nil
	}
	for _, o := range overrides {
		if err := set(&p.Config, o); err != nil {
			return err
		}
		if !strings.HasPrefix(o, "--rl.") {
			continue
		}
		for i := range p.Methods {
			if m := &p.Methods[i]; m.RL != nil {
				tmp := pipeline.Config{RL: *m.RL}
				if err := set(&tmp, o); err != nil {
					return err
				}
				*m.RL = tmp.RL
			}
		}
	}
	return nil
}

func runExperiment(args []string, stdout, stderr io.Writer) error {
	a, plan, err := parseExperimentArgs(args, stderr)
	if err != nil {
		return err
	}
	logger, err := newLogger(stderr, a.logFormat)
	if err != nil {
		return err
	}
	if a.list {
		for _, u := range plan.UnitsSFTFirst() {
			fmt.Fprintln(stdout, u.ID())
		}
		return nil
	}
	if a.dryRun {
		printPlan(stdout, plan, a.out)
		return nil
	}
	plan, err = experiment.Open(a.out, plan)
	if err != nil {
		logger.Error("experiment refused", "err", err)
		return exitError{code: 1}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	v := &experimentView{w: stdout, logger: logger, plan: plan, start: time.Now()}
	opt := experiment.Options{Dir: a.out, OnEvent: v.event, Wait: a.wait, TakeOver: a.takeOver, StaleAfter: a.staleAfter}
	if a.unit != "" {
		return runExperimentUnit(ctx, stdout, logger, a, plan, opt)
	}
	printPlan(stdout, plan, a.out)
	res, err := experiment.Run(ctx, plan, opt)
	if err != nil {
		if ctx.Err() != nil {
			logger.Warn("interrupted", "err", err)
			fmt.Fprintf(stdout, "\n%v\ncontinue with: agentr1 experiment %s\n", err, strings.Join(resumeArgs(args, a.out), " "))
			return exitError{code: 130}
		}
		logger.Error("experiment failed", "err", err, "out", a.out)
		return exitError{code: 1}
	}
	fmt.Fprintf(stdout, "\n== agentr1 experiment: %s done in %s ==\n\n%s\n", a.out, formatDuration(time.Since(v.start)), res.Markdown())
	fmt.Fprintf(stdout, "results: %s, %s\n", filepath.Join(a.out, experiment.ResultsMDFile), filepath.Join(a.out, experiment.ResultsJSONFile))
	return nil
}

// runExperimentUnit runs the one unit a.unit and reports the tables merged so far.
func runExperimentUnit(ctx context.Context, stdout io.Writer, logger *slog.Logger, a *experimentArgs, plan *experiment.Plan, opt experiment.Options) error {
	res, err := experiment.RunUnit(ctx, plan, a.unit, opt)
	if err != nil {
		if ctx.Err() != nil {
			logger.Warn("interrupted", "unit", a.unit, "err", err)
			return exitError{code: 130}
		}
		logger.Error("unit not run", "unit", a.unit, "err", err, "out", a.out)
		return exitError{code: 1}
	}
	done := 0
	for _, m := range res.Methods {
		done += len(m.Runs)
	}
	fmt.Fprintf(stdout, "unit %s done; %d of %d evaluations and RL runs finished so far, merged in %s\n",
		a.unit, done, len(plan.Seeds)*len(plan.Methods), filepath.Join(a.out, experiment.ResultsJSONFile))
	return nil
}

// resumeArgs is the command line that continues the experiment: the same flags, with --out
// made explicit.
func resumeArgs(args []string, out string) []string {
	if _, ok := preScan(args, "out"); ok {
		return args
	}
	return append(append([]string{}, args...), "--out", out)
}

// printPlan prints what the experiment will do and its time budget.
func printPlan(w io.Writer, p *experiment.Plan, out string) {
	units := p.Units()
	c := p.Config
	var sft, evals, rl time.Duration
	nRL, nSFT := 0, 0
	for _, u := range units {
		d := p.Estimate(u, experiment.DefaultRates)
		switch {
		case u.Method == nil:
			sft += d
			nSFT++
		case u.Method.Kind == experiment.KindRL:
			rl += d
			nRL++
		default:
			evals += d
		}
	}
	fmt.Fprintf(w, "agentr1 experiment %s: %d seed(s) x %d methods = %d units -> %s\n", p.Request.Flags(), len(p.Seeds), len(p.Methods), len(units), out)
	fmt.Fprintf(w, "budget (from the default run's rates on 2 cores; the ETA corrects itself as units finish):\n")
	line := func(what string, d time.Duration) { fmt.Fprintf(w, "  %-52s %8s\n", what, formatDuration(d)) }
	shared := ""
	if p.SharedSFT {
		shared = ", shared by the seeds"
	}
	steps := fmt.Sprint(c.SFT.Steps)
	if c.SFT.CopySteps > 0 {
		steps = fmt.Sprintf("%d copy + %d", c.SFT.CopySteps, c.SFT.Steps)
	}
	line(fmt.Sprintf("%d SFT warm start(s) of %s steps%s", nSFT, steps, shared), sft)
	line(fmt.Sprintf("%d baseline evaluations of %d + %d questions", len(units)-nSFT-nRL, c.HeldOut, c.EvalQuestions), evals)
	line(fmt.Sprintf("%d RL runs of %d steps (%d prompts x %d), evaluated", nRL, c.RL.Steps, c.RL.Prompts, c.RL.N), rl)
	line("total", sft+evals+rl)
}

// experimentView prints an experiment's progress: a line per unit with its estimate and the
// ETA, the SFT progress bar, a line per RL step and evaluation; log records go to the logger.
type experimentView struct {
	w      io.Writer
	logger *slog.Logger
	plan   *experiment.Plan
	start  time.Time
	sftBar *progress
}

func (v *experimentView) event(e experiment.Event) {
	tag := fmt.Sprintf("[%*d/%d]", len(fmt.Sprint(e.Total)), e.Index, e.Total)
	switch e.Kind {
	case "skip":
		fmt.Fprintf(v.w, "%s %s: done before, skipped\n", tag, e.Unit.Name())
	case "busy":
		fmt.Fprintf(v.w, "%s %s: skipped, %v\n", tag, e.Unit.Name(), e.Err)
	case "start":
		v.sftBar = nil
		fmt.Fprintf(v.w, "%s %s  (estimate %s; ETA after it %s)\n", tag, e.Unit.Name(), formatDuration(e.Estimate), formatDuration(e.Left))
	case "done":
		figures := ""
		if e.Result != nil {
			for _, m := range e.Result.Evals {
				figures += fmt.Sprintf("  %s EM %.3f", m.Name, float64(m.EM))
			}
		}
		fmt.Fprintf(v.w, "%s %s done in %s%s  | elapsed %s, ETA %s\n", tag, e.Unit.Name(), formatDuration(e.Took), figures,
			formatDuration(time.Since(v.start)), formatDuration(e.Left))
	case "record":
		v.record(e)
	}
}

func (v *experimentView) record(e experiment.Event) {
	switch r := e.Record.(type) {
	case string:
		switch e.RecordKind {
		case "checkpoint":
			v.logger.Debug("checkpoint saved", "unit", e.Unit.Name(), "path", r) // as train: not between progress lines
		case "warn":
			v.logger.Warn(r, "unit", e.Unit.Name())
		default:
			v.logger.Info(r, "unit", e.Unit.Name())
		}
	case pipeline.SFTMetrics:
		if v.sftBar == nil {
			v.sftBar = newProgress(v.w, "  sft", v.plan.Config.SFT.TotalSteps(), "steps")
			v.sftBar.from = r.Step - 1
			v.sftBar.start = time.Now().Add(-time.Duration(float64(r.TimeTotal) * float64(time.Second)))
		}
		v.sftBar.update(r.Step, fmt.Sprintf("loss %.3f", float64(r.Loss)))
	case trainer.StepMetrics:
		steps := 0
		if e.Unit.Method != nil && e.Unit.Method.RL != nil {
			steps = e.Unit.Method.RL.Steps
		}
		fmt.Fprintf(v.w, "  %s step %d/%d  reward %+.3f  em %.3f  fmt %.2f  turns %.2f  kl %.4f  %.1fs\n", r.Phase, r.Step, steps,
			float64(r.RewardMean), float64(r.EM), float64(r.FormatRate), float64(r.Turns), float64(r.ApproxKL), float64(r.TimeTotal))
	case *pipeline.EvalMetrics:
		fmt.Fprint(v.w, "  ")
		printEvalLine(v.w, r)
	}
}
