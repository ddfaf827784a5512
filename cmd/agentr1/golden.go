package main

import (
	"fmt"
	"io"

	"agentr1/golden"
)

func init() {
	register(&command{
		name:    "golden",
		summary: "check agentr1 against reference values computed by verl, PyTorch and Hugging Face",
		usage:   "agentr1 golden FILE...   (e.g. agentr1 golden testdata/golden/torch_ops.json)",
		run:     runGolden,
	})
}

// runGolden loads every file, runs every case through the registry of all packages, prints one
// line per failing case and ends with "N passed, M failed[, K skipped]". It fails (exit 1) when
// any case failed.
func runGolden(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no cases file given", errUsage)
	}
	reg := goldenRegistry()
	var total golden.Summary
	for _, path := range args {
		cases, err := golden.Load(path)
		if err != nil {
			return err
		}
		s, _ := golden.Run(reg, cases, stdout)
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
