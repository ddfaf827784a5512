package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentr1/model"
	"agentr1/rl/trainer"
)

// TestRunDefault is the acceptance run: the default configuration end to end, logging every
// record. It takes minutes, so it runs only when AGENTR1_TRAIN_RUN is set, e.g.
//
//	AGENTR1_TRAIN_RUN=1 AGENTR1_ALGO=grpo go test ./rl/pipeline -run TestRunDefault -v -timeout 1h
func TestRunDefault(t *testing.T) {
	if os.Getenv("AGENTR1_TRAIN_RUN") == "" {
		t.Skip("set AGENTR1_TRAIN_RUN=1 to run the default training run")
	}
	cfg := DefaultConfig()
	if a := os.Getenv("AGENTR1_ALGO"); a != "" {
		algo, err := trainer.ParseAlgorithm(a)
		if err != nil {
			t.Fatal(err)
		}
		steps := cfg.RL.Steps
		cfg.RL = trainer.DefaultRLConfig(algo)
		cfg.RL.Steps = steps
	}
	if os.Getenv("AGENTR1_TRAIN_CONFIG") != "" {
		if err := json.Unmarshal([]byte(os.Getenv("AGENTR1_TRAIN_CONFIG")), &cfg); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res, err := Run(context.Background(), cfg, false, func(kind string, rec any) {
		b, _ := json.Marshal(rec)
		t.Logf("%6.1fs %s %s", time.Since(start).Seconds(), kind, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Final {
		if i < len(res.SFTEval) {
			t.Logf("%s: SFT EM %.3f -> RL EM %.3f in %v", res.Final[i].Name, res.SFTEval[i].EM, res.Final[i].EM, res.Duration)
		}
	}
}

// TestShowTranscripts prints greedy transcripts of the SFT base saved in AGENTR1_BASE (built
// with the configuration in AGENTR1_TRAIN_CONFIG) on a few training and held-out questions:
// a look at what the policy does. It runs only when AGENTR1_BASE is set.
func TestShowTranscripts(t *testing.T) {
	dir := os.Getenv("AGENTR1_BASE")
	if dir == "" {
		t.Skip("set AGENTR1_BASE to a saved SFT base")
	}
	cfg := DefaultConfig()
	if os.Getenv("AGENTR1_TRAIN_CONFIG") != "" {
		if err := json.Unmarshal([]byte(os.Getenv("AGENTR1_TRAIN_CONFIG")), &cfg); err != nil {
			t.Fatal(err)
		}
	}
	cfg.BasePolicy = dir
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 8
	if v, err := strconv.Atoi(os.Getenv("AGENTR1_N")); err == nil {
		n = v
	}
	ec := EvalConfigFrom(cfg.RL, 50)
	for _, set := range []struct {
		name  string
		probs []trainer.Problem
	}{{"train", s.Train[len(s.Train)-n:]}, {"heldout", s.EvalSets[0].Problems[:n]}, {"unseen", s.EvalSets[1].Problems[:n]}} {
		m, samples, err := Evaluate(context.Background(), policy, s.Tokenizer, s.Specials, set.probs, ec, set.name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: EM %.3f format %.3f turns %.2f", set.name, m.EM, m.FormatRate, m.Turns)
		for i, smp := range samples[:4] {
			var b strings.Builder
			for _, turn := range smp.Turns {
				b.WriteString(s.Tokenizer.Decode(turn.Action))
				b.WriteString(s.Tokenizer.Decode(turn.Observation))
			}
			t.Logf("--- %s %d: %s\n%s\n=> %v", set.name, i, s.Tokenizer.Decode(set.probs[i].Prompt[len(set.probs[i].Prompt)-30:]), b.String(), smp.Stats)
		}
	}
}

// TestMeasureBaselines prints the paper's baselines (Base Tool Call, Naive RAG, closed book)
// for the SFT base saved in AGENTR1_BASE on both evaluation sets. It runs only when
// AGENTR1_BASE is set.
func TestMeasureBaselines(t *testing.T) {
	dir := os.Getenv("AGENTR1_BASE")
	if dir == "" {
		t.Skip("set AGENTR1_BASE to a saved SFT base")
	}
	cfg := DefaultConfig()
	cfg.BasePolicy = dir
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Baselines(context.Background(), s, policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		t.Logf("%-26s EM %.3f F1 %.3f format %.3f turns %.2f searches %.2f", m.Name, m.EM, m.F1, m.FormatRate, m.Turns, m.Searches)
	}
}
