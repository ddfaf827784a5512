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

// defaultRunSeeds names the seeds defaultRunGain is measured over.
const defaultRunSeeds = "1-5"

// defaultRunGain is what the default run gains over its SFT base on each evaluation set, over
// the seeds defaultRunSeeds names, as docs/RESULTS.md section 1 measures it
// (TestDefaultRunGainMatchesResults keeps the two in step). One run's gain is read against
// it: a difference within about twice the standard deviation is the seed-to-seed spread, not
// a finding.
var defaultRunGain = map[string]report.Spread{
	"heldout": {Mean: 29, SD: 8},
	"unseen":  {Mean: 17, SD: 5},
}

// defaultRunYardstick is defaultRunGain for the report page of a run with settings c: nil off
// the generated world (the default run's questions are not there), and marked as a guide
// when c's settings differ from the default's, as printGains says.
func defaultRunYardstick(c pipeline.Config) *report.Yardstick {
	if !pipeline.IsWorldData(c.Data) {
		return nil
	}
	source := "the default run, seeds " + defaultRunSeeds
	if !atDefaults(c) {
		source += " (other settings: a guide)"
	}
	return &report.Yardstick{Source: source, Gains: defaultRunGain}
}

// atDefaults reports whether c trains as the default run does: every setting equal to
// pipeline.DefaultConfig's except those that leave what is learnt alone (where the files go,
// how often they are written, the seed, the number of workers, how often the policy is
// evaluated during RL, whether a divergence stops the run, how the generated world is named).
func atDefaults(c pipeline.Config) bool {
	d := pipeline.DefaultConfig()
	if !pipeline.IsWorldData(c.Data) {
		return false
	}
	c.Data = d.Data
	c.Seed, c.Workers, c.EvalEvery, c.StopOnDivergence = d.Seed, d.Workers, d.EvalEvery, d.StopOnDivergence
	c.CheckpointDir, c.CheckpointEvery, c.SFTCheckpointEvery, c.BasePolicy = d.CheckpointDir, d.CheckpointEvery, d.SFTCheckpointEvery, d.BasePolicy
	return reflect.DeepEqual(c, d)
}

// printGains writes this run's EM gain over its starting policy on each set, and beside it
// what the default run gains across seeds: the yardstick for a reader of one run. gains maps a
// set's name to the run's gain in points (NaN: not measured).
func printGains(w io.Writer, sets []string, gains map[string]float64, cfg pipeline.Config) {
	var own, ref []string
	for _, s := range sets {
		if g := gains[s]; math.IsNaN(g) {
			own = append(own, s+" n/a")
		} else {
			own = append(own, s+" "+report.SignedPoints(g)+" points")
		}
		if e, ok := defaultRunGain[s]; ok {
			ref = append(ref, s+" "+e.String())
		}
	}
	reading := "one seed's gain strays from the mean by about the ± figure"
	if !atDefaults(cfg) {
		reading = "this run's settings differ from the default's, so that spread is only a guide"
	}
	fmt.Fprintf(w, "EM gain over the SFT base: %s\n", strings.Join(own, ", "))
	fmt.Fprintf(w, "the default run over seeds %s (docs/RESULTS.md): %s; %s\n", defaultRunSeeds, strings.Join(ref, ", "), reading)
}
