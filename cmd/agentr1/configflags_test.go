package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/rl"
	"agentr1/rl/trainer"
)

type innerCfg struct {
	MaxTurnTokens int
	TopP          float64
}

type testCfg struct {
	Seed      uint64
	LR        float64
	KLCoef    float64
	Algorithm string
	NoMask    bool
	Inner     innerCfg
	hidden    int
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"MaxTurnTokens": "max-turn-tokens", "LR": "lr", "KLCoef": "kl-coef", "TopP": "top-p",
		"TrainWorld": "train-world", "Seed": "seed", "EvalQuestions": "eval-questions", "KVHeads": "kv-heads",
	} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBindConfigSetsNestedFields(t *testing.T) {
	cfg := testCfg{LR: 0.1, Inner: innerCfg{MaxTurnTokens: 7}}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	names := bindConfig(fs, &cfg, "", func(name string) string { return "the " + name }, nil)
	if got := strings.Join(names, ","); got != "seed,lr,kl-coef,algorithm,no-mask,inner.max-turn-tokens,inner.top-p" {
		t.Fatalf("flags = %s", got)
	}
	err := fs.Parse([]string{"--lr=0.5", "--inner.max-turn-tokens", "12", "--no-mask", "--algorithm", "rloo", "--seed", "9"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LR != 0.5 || cfg.Inner.MaxTurnTokens != 12 || !cfg.NoMask || cfg.Algorithm != "rloo" || cfg.Seed != 9 {
		t.Errorf("config after flags: %+v", cfg)
	}
	if err := fs.Parse([]string{"--lr", "fast"}); err == nil || !strings.Contains(err.Error(), "lr") {
		t.Errorf("bad value error %v should name the flag", err)
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"LR": 0.25, "Inner": {"TopP": 0.9}}`), 0o644)
	cfg := testCfg{Seed: 3}
	if err := loadConfigFile(good, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LR != 0.25 || cfg.Inner.TopP != 0.9 || cfg.Seed != 3 {
		t.Errorf("config after file: %+v", cfg)
	}
	typo := filepath.Join(dir, "typo.json")
	os.WriteFile(typo, []byte(`{"LearningRate": 1}`), 0o644)
	if err := loadConfigFile(typo, &cfg); err == nil || !strings.Contains(err.Error(), "LearningRate") {
		t.Errorf("unknown field error %v should name it", err)
	}
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte("{\n\"LR\": 1,\n oops}"), 0o644)
	if err := loadConfigFile(broken, &cfg); err == nil || !strings.Contains(err.Error(), "broken.json:3") {
		t.Errorf("syntax error %v should give file:line", err)
	}
}

func TestPreScan(t *testing.T) {
	for _, args := range [][]string{{"--config", "x.json"}, {"-config=x.json"}, {"--steps", "3", "--config=x.json"}} {
		if v, ok := preScan(args, "config"); !ok || v != "x.json" {
			t.Errorf("preScan(%v) = %q, %v", args, v, ok)
		}
	}
	if _, ok := preScan([]string{"--", "--config", "x"}, "config"); ok {
		t.Error("preScan must stop at --")
	}
}

// TestBindConfigTypedSettings checks that a typed setting (an encoding.TextUnmarshaler such as
// rl.KLEstimator, whose kind is int) is bound by name, not as a number: its default shows the
// name, verl's other spellings are accepted and a misspelt name is refused with the accepted
// ones.
func TestBindConfigTypedSettings(t *testing.T) {
	cfg := struct {
		KLEstimator rl.KLEstimator
		Decay       trainer.LRDecay
	}{rl.KLK3, trainer.DecayCosine}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindConfig(fs, &cfg, "", func(name string) string { return "the " + name }, nil)
	if got := fs.Lookup("kl-estimator").DefValue; got != "k3" {
		t.Errorf("kl-estimator default %q, want k3", got)
	}
	if err := fs.Parse([]string{"--kl-estimator", "mse", "--decay=linear"}); err != nil {
		t.Fatal(err)
	}
	if cfg.KLEstimator != rl.KLK2 || cfg.Decay != trainer.DecayLinear {
		t.Errorf("after flags: %v %q, want k2 linear", cfg.KLEstimator, cfg.Decay)
	}
	for _, bad := range [][]string{{"--kl-estimator", "2"}, {"--decay", "exp"}} {
		if err := fs.Parse(bad); err == nil || !strings.Contains(err.Error(), bad[0][2:]) || !strings.Contains(err.Error(), "want") {
			t.Errorf("%v: error %v, want one naming the flag and the accepted values", bad, err)
		}
	}
}
