package main

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"agentr1/report"
	"agentr1/rl/pipeline"
)

// defaultRunSeeds names the seeds defaultRunGains are measured over.
const defaultRunSeeds = "1-3"

// defaultRunGains is what the default run gains over its SFT base on each evaluation set, over
// the seeds defaultRunSeeds names, on each kernel set measured, as docs/RESULTS.md section 1
// reports it (TestDefaultRunGainMatchesResults keeps the two in step). Each kernel set rounds
// float32 products its own way, so its runs are draws of their own, with their own spread. One
// run's gain is read against its set's: a difference within about twice the standard
// deviation is the seed-to-seed spread, not a finding.
var defaultRunGains = map[string]map[string]report.Spread{
	"avx512": {"heldout": {Mean: 38, SD: 5}, "unseen": {Mean: 19, SD: 2}},
	"avx2":   {"heldout": {Mean: 30, SD: 7}, "unseen": {Mean: 27, SD: 3}},
}

// guideKernels is the kernel set whose spread a run on a set without seeds measured at today's
// defaults (the generic and reference sets, too slow for several) is read against, as a guide.
const guideKernels = "avx512"

// defaultRunSpread returns the default run's spread that a run with settings c on the kernel
// set kernels (tensor.KernelName; "" when the run did not record it) is read against: the
// gains measured on kernels itself, or else guideKernels', and the set they were measured on.
// When that spread is only a guide for this run, guide says why, in a word for the report
// page's cards and in a sentence for the summary train prints; both are "" when the spread is
// the run's own yardstick.
func defaultRunSpread(c pipeline.Config, kernels string) (gains map[string]report.Spread, on, guide, guideSentence string) {
	gains, on = defaultRunGains[kernels], kernels
	if gains == nil {
		gains, on = defaultRunGains[guideKernels], guideKernels
	}
	switch {
	case !atDefaults(c):
		return gains, on, "other settings", "this run's settings differ from the default's"
	case kernels == "":
		return gains, on, "kernel set not recorded", "this run's kernel set is not recorded"
	case on != kernels:
		return gains, on, "another kernel set", "this run's kernel set (" + kernels + ") rounds differently"
	}
	return gains, on, "", ""
}

// defaultRunYardstick is defaultRunSpread for the report page of a run with settings c on the
// kernel set kernels: nil off the generated world (the default run's questions are not
// there), and marked as a guide when it is one.
func defaultRunYardstick(c pipeline.Config, kernels string) *report.Yardstick {
	if !pipeline.IsWorldData(c.Data) {
		return nil
	}
	gains, on, guide, _ := defaultRunSpread(c, kernels)
	source := "the default run on " + on + ", seeds " + defaultRunSeeds
	if guide != "" {
		source += " (" + guide + ": a guide)"
	}
	return &report.Yardstick{Source: source, Gains: gains}
}

// atDefaults reports whether c trains as the default run does: every setting equal to
// pipeline.DefaultConfig's except those that leave what is learnt alone (where the files go,
// how often they are written, the seed and the shard count (each another draw of the same
// run), the number of workers, how often the policy is evaluated during RL, whether a
// divergence stops the run, how the generated world is named).
func atDefaults(c pipeline.Config) bool {
	d := pipeline.DefaultConfig()
	if !pipeline.IsWorldData(c.Data) {
		return false
	}
	c.Data = d.Data
	c.Seed, c.Shards, c.Workers, c.EvalEvery, c.StopOnDivergence = d.Seed, d.Shards, d.Workers, d.EvalEvery, d.StopOnDivergence
	c.CheckpointDir, c.CheckpointEvery, c.SFTCheckpointEvery, c.BasePolicy = d.CheckpointDir, d.CheckpointEvery, d.SFTCheckpointEvery, d.BasePolicy
	return reflect.DeepEqual(c, d)
}

// printGains writes this run's EM gain over its starting policy on each set, and beside it
// what the default run gains across seeds on the run's kernel set: the yardstick for a reader
// of one run. gains maps a set's name to the run's gain in points (NaN: not measured).
func printGains(w io.Writer, sets []string, gains map[string]float64, cfg pipeline.Config, kernels string) {
	spread, on, _, guide := defaultRunSpread(cfg, kernels)
	var own, ref []string
	for _, s := range sets {
		if g := gains[s]; math.IsNaN(g) {
			own = append(own, s+" n/a")
		} else {
			own = append(own, s+" "+report.SignedPoints(g)+" points")
		}
		if e, ok := spread[s]; ok {
			ref = append(ref, s+" "+e.String())
		}
	}
	reading := "one seed's gain strays from the mean by about the ± figure"
	if guide != "" {
		reading = guide + ", so that spread is only a guide"
	}
	fmt.Fprintf(w, "EM gain over the SFT base: %s\n", strings.Join(own, ", "))
	fmt.Fprintf(w, "the default run on %s over seeds %s (docs/RESULTS.md): %s; %s\n", on, defaultRunSeeds, strings.Join(ref, ", "), reading)
}
