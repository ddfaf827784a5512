package main

import (
	"math"
	"testing"

	"agentr1/mdp"
	"agentr1/rl/trainer"
)

// TestSampleGroup: a row's group lists every member's summed token rewards, their mean and
// unbiased std, and is tied exactly when all are equal; a group of one is none.
func TestSampleGroup(t *testing.T) {
	// Five rows of three response tokens: group 7 (rows 0, 2, 4), group 3 (rows 1, 3) tied, and
	// the rewards of a row spread over its tokens (a process reward, then the outcome).
	rewards := []float64{
		0.2, 0, 1, // row 0: 1.2
		0, 0, 0, //   row 1: 0
		0, 0, 0, //   row 2: 0
		0, 0, 0, //   row 3: 0
		0, 0.2, 0, // row 4: 0.2
	}
	b := &trainer.StepBatch{Step: 3, Rewards: rewards,
		Collated: &trainer.Collated{Batch: &mdp.Batch{B: 5, L: 3}, Groups: []int{7, 3, 7, 3, 7}}}
	g := sampleGroup(b, 2)
	if g == nil || g.ID != 7 || g.Member != 1 || len(g.Rewards) != 3 || g.Rewards[0] != 1.2 || g.Rewards[1] != 0 || g.Rewards[2] != 0.2 || g.Tied {
		t.Fatalf("row 2: group %+v, want id 7, member 1 of rewards [1.2 0 0.2], not tied", g)
	}
	if math.Abs(g.Mean-1.4/3) > 1e-12 || math.Abs(g.Std-math.Sqrt((math.Pow(1.2-1.4/3, 2)+math.Pow(1.4/3, 2)+math.Pow(0.2-1.4/3, 2))/2)) > 1e-12 {
		t.Errorf("row 2: mean %v std %v, want 0.4667 and the unbiased std", g.Mean, g.Std)
	}
	if g := sampleGroup(b, 3); g == nil || !g.Tied || g.Member != 1 || g.Std != 0 {
		t.Errorf("row 3: group %+v, want tied, member 1, std 0", g)
	}
	b.Collated.Groups = []int{0, 1, 2, 3, 4}
	if g := sampleGroup(b, 0); g != nil {
		t.Errorf("a group of one: %+v, want nil", g)
	}
}
