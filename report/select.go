package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// LastStep in Options.Steps stands for the last step that has samples.
const LastStep = -1

// DefaultMaxSamples is the number of trajectories shown per step when Options.MaxSamples is 0.
const DefaultMaxSamples = 4

// Options chooses what the page shows.
type Options struct {
	// Steps whose sampled trajectories are shown, in this order; LastStep means the last step
	// with samples. Empty: the first, middle and last steps with samples.
	Steps []int
	// MaxSamples caps the trajectories shown per step, picked evenly across the step's samples
	// (so that a GRPO group does not fill the quota); 0 means DefaultMaxSamples.
	MaxSamples int
	// Title heads the page; empty means the run folder's name (runName).
	Title string
	// Warn, when set, receives what the page is written despite: a torn last line of
	// metrics.jsonl or samples.jsonl, skipped. When nil such a line is an error.
	Warn func(msg string)
	// Yardstick, when set, is shown under each set's gain in the summary cards.
	Yardstick *Yardstick
}

// Yardstick is what a reference run gains over its starting policy on each evaluation set,
// over seeds. Shown beside a run's own gain, it tells the reader whether that gain is a
// finding or the seed-to-seed spread.
type Yardstick struct {
	Source string            // the reference, e.g. "the default run, seeds 1-5"
	Gains  map[string]Spread // by evaluation set, as eval.json names it
}

// Spread is an EM gain over the starting policy in points (hundredths of EM): the mean and the
// standard deviation over seeds.
type Spread struct {
	Mean, SD float64 // mean gain and its standard deviation over seeds, in points
}

// String prints the spread as the report and `agentr1 train` give it: "+29 ± 8".
func (s Spread) String() string { return fmt.Sprintf("%s ± %.0f", SignedPoints(s.Mean), s.SD) }

// Place says where one run's gain g (in points) lies against the spread: within it when it is
// at most two standard deviations from the mean, where about 95% of seeds fall if the gains
// are roughly normal, else below or above it. It reads one run as a draw from the seeds, so a
// gain within the spread is not a finding either way.
func (s Spread) Place(g float64) string {
	switch z := (g - s.Mean) / s.SD; {
	case math.IsNaN(z) || s.SD <= 0:
		return "cannot be placed (no spread)"
	case z < -2:
		return fmt.Sprintf("is below the seed spread (%.1f sd)", z)
	case z > 2:
		return fmt.Sprintf("is above the seed spread (+%.1f sd)", z)
	default:
		return fmt.Sprintf("is within the seed spread (%+.1f sd)", z)
	}
}

// ParseSteps parses a --steps list such as "1,10,last" into Options.Steps.
func ParseSteps(s string) ([]int, error) {
	var steps []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
			continue
		case part == "last":
			steps = append(steps, LastStep)
		default:
			n, err := strconv.Atoi(part)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("report: step %q: want a step number >= 0 or \"last\"", part)
			}
			steps = append(steps, n)
		}
	}
	return steps, nil
}

// stepSamples is the samples shown for one step.
type stepSamples struct {
	Step    int
	Total   int      // samples of this step in the file
	Samples []Sample // the shown ones, in file order
	Index   []int    // (len(Samples),) each one's 0-based position among the step's samples
}

// sampleIndex is what samples.jsonl offers and what the page shows of it.
type sampleIndex struct {
	Available []int // every step with samples, ascending
	Shown     []stepSamples
	NotFound  []int // requested steps without samples
	Max       int   // the per-step cap applied
}

// selectSamples reads samples.jsonl in two passes: the first checks that every line is one
// JSON object and counts the samples of each step (decoding only "step"), the second keeps at most opt.MaxSamples evenly spaced samples of each
// chosen step, so a long run never sits in memory whole.
func selectSamples(path string, opt Options) (*sampleIndex, error) {
	counts := map[int]int{}
	var lineSteps []int // (non-blank lines,) the step of each sample, in file order
	err := scanJSONL(path, opt.Warn, func(line int, raw []byte) error {
		var head struct {
			Step int `json:"step"`
		}
		if err := decodeStrict(raw, &head); err != nil {
			return err
		}
		counts[head.Step]++
		lineSteps = append(lineSteps, head.Step)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ix := &sampleIndex{Max: opt.MaxSamples}
	if ix.Max <= 0 {
		ix.Max = DefaultMaxSamples
	}
	for s := range counts {
		ix.Available = append(ix.Available, s)
	}
	slices.Sort(ix.Available)
	if len(ix.Available) == 0 {
		return ix, nil
	}

	want := opt.Steps
	if len(want) == 0 {
		n := len(ix.Available)
		want = []int{ix.Available[0], ix.Available[n/2], ix.Available[n-1]}
	}
	pos := map[int]int{} // step -> index into ix.Shown
	keep := map[int]map[int]bool{}
	for _, s := range want {
		if s == LastStep {
			s = ix.Available[len(ix.Available)-1]
		}
		if _, dup := pos[s]; dup {
			continue
		}
		if counts[s] == 0 {
			if !slices.Contains(ix.NotFound, s) {
				ix.NotFound = append(ix.NotFound, s)
			}
			continue
		}
		pos[s] = len(ix.Shown)
		ix.Shown = append(ix.Shown, stepSamples{Step: s, Total: counts[s]})
		keep[s] = evenPicks(counts[s], ix.Max)
	}

	seen := map[int]int{} // step -> samples of it read so far
	n := 0                // samples read so far
	err = scanJSONL(path, opt.Warn, func(line int, raw []byte) error {
		if n >= len(lineSteps) {
			return nil // appended since the first pass (a run still writing): not counted, not shown
		}
		step := lineSteps[n]
		n++
		k := seen[step]
		seen[step]++
		if !keep[step][k] {
			return nil
		}
		var s Sample
		if err := decodeStrict(raw, &s); err != nil {
			return err
		}
		i := pos[step]
		ix.Shown[i].Samples = append(ix.Shown[i].Samples, s)
		ix.Shown[i].Index = append(ix.Shown[i].Index, k)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// evenPicks returns the indices floor(i*n/k), i < k, of n items: k of them spread evenly
// (all n when n <= k).
func evenPicks(n, k int) map[int]bool {
	picks := map[int]bool{}
	if n <= k {
		for i := range n {
			picks[i] = true
		}
		return picks
	}
	for i := range k {
		picks[i*n/k] = true
	}
	return picks
}
