package main

import (
	"flag"
	"fmt"
	"io"

	"agentr1/golden"
)

func init() {
	c := &command{
		name:    "golden",
		summary: "check agentr1 against reference values computed by verl, PyTorch and Hugging Face",
		usage: "agentr1 golden [-v] FILE...\n" +
			"  e.g. agentr1 golden testdata/golden/torch_ops.json\n" +
			"       agentr1 golden -v testdata/golden/verl/core_algos.json   (one line per case: PASS, FAIL or SKIP and why)",
		flags: func(fs *flag.FlagSet) { declareGoldenFlags(fs) },
	}
	c.run = func(args []string, stdout, stderr io.Writer) error {
		fs := newFlagSet(c, stderr)
		verbose := declareGoldenFlags(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		return runGolden(fs.Args(), *verbose, stdout)
	}
	register(c)
}

// declareGoldenFlags declares -v and returns where it is stored.
func declareGoldenFlags(fs *flag.FlagSet) *bool {
	return fs.Bool("v", false, "list every case: PASS, FAIL (with the worst element of each field) or SKIP (with the reference's reason)")
}

// runGolden loads every file, runs every case through goldenRegistry (every golden/...
// package's functions), prints one line per failing case (per case with verbose) and ends with
// "N passed, M failed[, K skipped]". It fails (exit 1) when any case failed.
func runGolden(files []string, verbose bool, stdout io.Writer) error {
	if len(files) == 0 {
		return fmt.Errorf("%w: no cases file given", errUsage)
	}
	reg := goldenRegistry()
	var total golden.Summary
	for _, path := range files {
		cases, err := golden.Load(path)
		if err != nil {
			return err
		}
		s, outcomes := golden.Run(reg, cases, nil)
		for _, o := range outcomes {
			if line := outcomeLine(o, verbose); line != "" {
				fmt.Fprintln(stdout, line)
			}
		}
		total.Passed += s.Passed
		total.Failed += s.Failed
		total.Skipped += s.Skipped
	}
	fmt.Fprintln(stdout, total.Line())
	if total.Failed > 0 {
		return exitError{code: 1}
	}
	return nil
}

// outcomeLine is the line printed for one case: its failure, or with verbose also "PASS ..."
// and "SKIP ... params=...: reason" (the parameters the reference rejected and its message);
// "" when nothing is printed.
func outcomeLine(o golden.Outcome, verbose bool) string {
	c := o.Case
	switch {
	case !o.Skipped && !o.Passed():
		return golden.FailureLine(o)
	case !verbose:
		return ""
	case o.Skipped:
		return fmt.Sprintf("SKIP %s [%s] fn=%s params=%v: %s", c.Name, c.File, c.Fn, c.Params, c.Skip)
	}
	return fmt.Sprintf("PASS %s [%s] fn=%s", c.Name, c.File, c.Fn)
}
