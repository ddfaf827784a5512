package main

import (
	"testing"
	"time"

	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// TestPhaseTimes checks the summary's time line against records whose times are known: the
// phases' sums, the rates, the RL parts that took no time left out, and the rest of the
// process's time given to setup and evaluations.
func TestPhaseTimes(t *testing.T) {
	var p phaseTimes
	for range 4 {
		p.add(pipeline.SFTMetrics{TimeTotal: 0.5})
	}
	for range 2 {
		p.add(trainer.StepMetrics{TimeRollout: 10, TimeOld: 1, TimeUpdate: 19, TimeTotal: 30})
	}
	p.add(&pipeline.EvalMetrics{}) // not a step: no time of its own
	got := p.line(65*time.Second, "grpo")
	want := "time 1m05s: SFT 2s (4 steps, 2.0 a second); grpo 1m00s (2 steps, 30.0 s each: rollout 20s, old log-probs 2s, update 38s); setup, evaluations and baselines 3s"
	if got != want {
		t.Errorf("line:\n got %s\nwant %s", got, want)
	}
	// A run resumed after its warm start, with a critic: no SFT part, the critic's time shown.
	var q phaseTimes
	q.add(trainer.StepMetrics{TimeRollout: 1, TimeCritic: 2, TimeUpdate: 3, TimeTotal: 6})
	got = q.line(10*time.Second, "ppo")
	want = "time 10s: ppo 6s (1 step, 6.0 s each: rollout 1s, critic 2s, update 3s); setup, evaluations and baselines 4s"
	if got != want {
		t.Errorf("line:\n got %s\nwant %s", got, want)
	}
	// A tiny run: steps of a fraction of a second keep two decimals and their parts.
	var r phaseTimes
	r.add(trainer.StepMetrics{TimeRollout: 0.02, TimeRef: 1e-5, TimeUpdate: 0.03, TimeTotal: 0.05})
	got = r.line(time.Second, "grpo")
	want = "time 1s: grpo 0s (1 step, 0.05 s each: rollout 0s, update 0s); setup, evaluations and baselines 1s"
	if got != want {
		t.Errorf("line:\n got %s\nwant %s", got, want)
	}
}
