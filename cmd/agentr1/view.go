package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"agentr1/report"
	"agentr1/rl/pipeline"
)

func init() {
	c := &command{
		name:    "view",
		aliases: []string{"report"},
		summary: "write a run's report page: training curves, evaluation, and trajectories token by token with their masks and advantages",
		usage: "agentr1 view RUN [--steps 1,10,last] [--max-samples N] [--out FILE]\n" +
			"  e.g. agentr1 view runs/20260101-120000 --steps 1,last --out /tmp/report.html",
	}
	c.flags = viewFlags(new(viewOptions))
	c.run = func(args []string, stdout, stderr io.Writer) error {
		var opt viewOptions
		fs := newFlagSet(c, stderr)
		viewFlags(&opt)(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return fmt.Errorf("%w: no run directory given", errUsage)
		}
		runDir := fs.Arg(0)
		// Flags may also follow the run directory: agentr1 view RUN --steps last.
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
		}
		return runView(runDir, opt, stdout, stderr)
	}
	register(c)
}

type viewOptions struct {
	steps, out, title string
	maxSamples        int
}

func viewFlags(opt *viewOptions) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.StringVar(&opt.steps, "steps", "", "comma-separated steps whose sampled trajectories are shown; \"last\" is the last step with samples (default: first, middle and last)")
		fs.StringVar(&opt.out, "out", "", "the HTML file to write (default RUN/report.html)")
		fs.IntVar(&opt.maxSamples, "max-samples", report.DefaultMaxSamples, "trajectories shown per step at most, spread evenly over the step's samples")
		fs.StringVar(&opt.title, "title", "", "page title (default: the run folder's name, with its parent's when the name is generic such as run)")
	}
}

// runView writes the report page of the run directory and prints where it went; warnings
// about the run's files go to stderr.
func runView(runDir string, opt viewOptions, stdout, stderr io.Writer) error {
	steps, err := report.ParseSteps(opt.steps)
	if err != nil {
		return fmt.Errorf("%w: --steps: %v", errUsage, err)
	}
	if opt.maxSamples < 1 {
		return fmt.Errorf("%w: --max-samples must be at least 1, got %d", errUsage, opt.maxSamples)
	}
	out := opt.out
	if out == "" {
		out = filepath.Join(runDir, "report.html")
	}
	ropt := report.Options{Steps: steps, MaxSamples: opt.maxSamples, Title: opt.title,
		Warn: func(msg string) { fmt.Fprintf(stderr, "agentr1 view: warning: %s\n", msg) }}
	// A folder that is not a train run (an experiment's, or one without config.json) has no
	// settings to compare with the default run's, and its page goes without the yardstick.
	cfg := pipeline.DefaultConfig()
	if readRunConfig(runDir, &cfg) == nil {
		ropt.Yardstick = defaultRunYardstick(cfg, evalFileKernels(runDir))
	}
	if err := report.WriteHTML(runDir, out, ropt); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", out)
	return nil
}
