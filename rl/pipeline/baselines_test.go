package pipeline

import (
	"context"
	"testing"
)

// TestBaselinesOneTurn evaluates the baselines of a run limited to one agent turn: Naive RAG's
// scripted search takes a turn of its own, which used to end the episode before the answer and
// fail the run after its training.
func TestBaselinesOneTurn(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.RL.MaxTurns = 1
	s, policy := tinySetupPolicy(t, cfg)
	ms, err := Baselines(context.Background(), s, policy)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 {
		t.Errorf("%d baseline results, want 3 baselines x 2 sets", len(ms))
	}
	for _, m := range ms {
		if m.N == 0 || m.Turns > 1 {
			t.Errorf("%s: %d questions, %.2f turns; want some, at most 1 turn each", m.Name, m.N, m.Turns)
		}
	}
}
