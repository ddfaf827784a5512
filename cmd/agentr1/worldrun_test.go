package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/model"
	"agentr1/report"
	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// tinyWorldConfig is a generated-world run small enough to prepare in a second.
func tinyWorldConfig() pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.Seed, cfg.Worlds, cfg.Demos = 5, 2, 16
	cfg.SFT.CopySteps, cfg.SFT.CopyEvery = 2, 2
	cfg.TrainWorld.Questions, cfg.EvalWorld.Questions = 80, 20
	cfg.HeldOut, cfg.EvalQuestions, cfg.EvalBatch = 4, 3, 4
	cfg.Model = pipeline.ModelConfig{Hidden: 32, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 64, InitRange: 0.02}
	cfg.RL.MaxTurns, cfg.RL.MaxTurnTokens, cfg.RL.MaxLen = 2, 24, 320
	return cfg
}

// worldRunFixture writes a run folder for cfg as train leaves one: config.json and final/ (a
// freshly initialised policy with the run's tokenizer). It returns the folder and the setup.
func worldRunFixture(t *testing.T, cfg pipeline.Config) (string, *pipeline.Setup) {
	t.Helper()
	setup, err := pipeline.Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writeJSONFile(filepath.Join(dir, report.ConfigFile), cfg); err != nil {
		t.Fatal(err)
	}
	policy, err := pipeline.NewPolicy(cfg.Model, setup.Tokenizer, 2*cfg.RL.MaxLen, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(dir, "final")
	if err := policy.Save(final); err != nil {
		t.Fatal(err)
	}
	if err := setup.Tokenizer.Save(final); err != nil {
		t.Fatal(err)
	}
	return dir, setup
}

// TestWorldSetsMatchPrepare holds worldSets to the questions training evaluates.
func TestWorldSetsMatchPrepare(t *testing.T) {
	cfg := tinyWorldConfig()
	setup, err := pipeline.Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := worldSets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(setup.EvalSets) != len(sets) {
		t.Fatalf("%d sets, training has %d", len(sets), len(setup.EvalSets))
	}
	for i, want := range setup.EvalSets {
		got := sets[i]
		ids := func(qs []string) string { return strings.Join(qs, ",") }
		var gotIDs, wantIDs []string
		for _, q := range got.questions {
			gotIDs = append(gotIDs, q.ID)
		}
		for _, q := range want.Questions {
			wantIDs = append(wantIDs, q.ID)
		}
		if got.name != want.Name || !slices.Equal(gotIDs, wantIDs) || len(gotIDs) == 0 {
			t.Errorf("set %d: %s %s, training evaluates %s %s", i, got.name, ids(gotIDs), want.Name, ids(wantIDs))
		}
	}
}

// TestEvalWorldRun evaluates a run's final checkpoint with `eval --world-run` and checks the
// figures of each set against pipeline.Evaluate on the sets training prepared.
func TestEvalWorldRun(t *testing.T) {
	cfg := tinyWorldConfig()
	dir, setup := worldRunFixture(t, cfg)
	out := filepath.Join(t.TempDir(), "eval.json")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"eval", "--world-run", dir, "--out", out}, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
		t.Fatalf("eval --world-run: exit %d, stderr %q", code, stderr.String())
	}
	for _, name := range []string{"\nheldout ", "\nunseen "} {
		if !strings.Contains(stdout.String(), name) {
			t.Errorf("stdout has no %q row:\n%s", name, stdout.String())
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]*pipeline.EvalMetrics
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	policy, tok, sp, err := loadAgent(&agentFlags{model: filepath.Join(dir, "final"), maxLen: cfg.RL.MaxLen}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range setup.EvalSets {
		want, _, err := pipeline.Evaluate(context.Background(), policy, tok, sp, set.Problems, pipeline.EvalConfigFrom(cfg.RL, cfg.EvalBatch), "eval/"+set.Name)
		if err != nil {
			t.Fatal(err)
		}
		g := got[set.Name]
		if g == nil {
			t.Fatalf("%s: not in --out %s", set.Name, raw)
		}
		if g.N != want.N || g.EM != want.EM || g.F1 != want.F1 || g.FormatRate != want.FormatRate || g.Turns != want.Turns || g.Searches != want.Searches {
			t.Errorf("%s: eval --world-run %+v, training's evaluation %+v", set.Name, *g, *want)
		}
	}
	// --n takes the first questions of each set; real-data flags are refused.
	stdout.Reset()
	if code := run([]string{"eval", "--world-run", dir, "--n", "2"}, &stdout, &stderr); code != 0 || strings.Count(stdout.String(), "\nheldout                          2 ") != 1 {
		t.Errorf("eval --world-run --n 2: exit %d\n%s", code, stdout.String())
	}
	stderr.Reset()
	if code := run([]string{"eval", "--world-run", dir, "--data", "musique"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--data is for real data") {
		t.Errorf("eval --world-run --data: exit %d, stderr %q", code, stderr.String())
	}
	// A folder that is no run is named with the flag that gave it, once.
	stderr.Reset()
	none := t.TempDir()
	if code := run([]string{"eval", "--world-run", none}, &stdout, &stderr); code != 1 || !strings.HasPrefix(stderr.String(), "agentr1 eval: --world-run "+none+": open ") || strings.Contains(stderr.String(), "--config") {
		t.Errorf("eval --world-run EMPTY: exit %d, stderr %q", code, stderr.String())
	}
}

// TestEvalRunCheckpoint evaluates a run's checkpoint file: eval --world-run --model
// RUN/checkpoints/step-N.ckpt runs the checkpoint's parameters in the architecture of the run's
// SFT base (not the base's parameters), names the file, and refuses --compute bf16.
func TestEvalRunCheckpoint(t *testing.T) {
	dir, _ := worldRunFixture(t, tinyWorldConfig())
	base := filepath.Join(dir, "sft-base")
	if err := os.Symlink(filepath.Join(dir, "final"), base); err != nil {
		t.Fatal(err)
	}
	stepped, err := model.Load(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stepped.Params {
		for i := range p.Data {
			p.Data[i] *= 0.5 // another policy than the base's
		}
	}
	ckpt := filepath.Join(dir, "checkpoints", "step-000020.ckpt")
	os.MkdirAll(filepath.Dir(ckpt), 0o755)
	if err := trainer.WriteCheckpointFile(ckpt, &trainer.CheckpointFile{Step: 20, Tensors: trainer.AppendParams(nil, "policy/", stepped.Params)}); err != nil {
		t.Fatal(err)
	}
	a := agentFlags{model: ckpt}
	a.runCheckpoint(pipeline.Config{}, dir)
	if a.model != base || a.checkpoint != ckpt || a.policyName() != ckpt {
		t.Fatalf("runCheckpoint: model %q, checkpoint %q, name %q; want the run's SFT base and the file", a.model, a.checkpoint, a.policyName())
	}
	var stderr bytes.Buffer
	policy, _, _, err := loadAgent(&a, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range policy.Params {
		if !slices.Equal(p.Data, stepped.Params[i].Data) {
			t.Fatalf("%s: the loaded policy's parameters are not the checkpoint's", p.Name)
		}
	}
	var stdout bytes.Buffer
	if code := run([]string{"eval", "--world-run", dir, "--model", ckpt, "--n", "2"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "evaluating "+ckpt+" ") {
		t.Errorf("eval --model %s: exit %d, stderr %q\n%s", ckpt, code, stderr.String(), stdout.String())
	}
	stderr.Reset()
	if code := run([]string{"eval", "--world-run", dir, "--model", ckpt, "--compute", "bf16"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--compute bf16") {
		t.Errorf("eval --model %s --compute bf16: exit %d, stderr %q; want it refused", ckpt, code, stderr.String())
	}
}

// TestChatWorldRunQuestions checks chat on a generated-world run offers the chosen world's
// evaluation questions: :examples lists them with their gold answers, --sample asks them.
func TestChatWorldRunQuestions(t *testing.T) {
	cfg := tinyWorldConfig()
	dir, _ := worldRunFixture(t, cfg)
	sets, err := worldSets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := chatInput
	t.Cleanup(func() { chatInput = old })
	for _, tc := range []struct {
		name  string
		input string
		args  []string
		set   worldSet
		lines string // the prefix of the lines naming one of set's questions
		want  int    // how many such lines
	}{
		{":examples", ":examples\nquit\n", nil, sets[1], "  ", min(chatExampleCount, len(sets[1].questions))},
		{"sample held-out", "", []string{"--sample", "2", "--world", "train", "--turn-tokens", "4"}, sets[0], "question> ", 2},
	} {
		chatInput = strings.NewReader(tc.input)
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"chat", "--world-run", dir}, tc.args...), &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Fatalf("%s: exit %d, stderr %q", tc.name, code, stderr.String())
		}
		known := map[string]string{}
		for _, q := range tc.set.questions {
			known[q.Question] = strings.Join(q.Answers, " / ")
		}
		found := 0
		for _, line := range strings.Split(stdout.String(), "\n") {
			line = strings.TrimPrefix(line, "question> ") // :examples prints after the prompt
			text, gold, _ := strings.Cut(strings.TrimPrefix(line, tc.lines), "   (gold: ")
			if _, ok := known[text]; ok && (tc.lines != "  " || strings.TrimSuffix(gold, ")") == known[text]) {
				found++
			}
		}
		if found != tc.want {
			t.Errorf("%s: %d lines name a %s question, want %d:\n%s", tc.name, found, tc.set.name, tc.want, stdout.String())
		}
		if tc.name == "sample held-out" && strings.Count(stdout.String(), "\ngold> ") != 2 {
			t.Errorf("%s: want a gold line after each answer:\n%s", tc.name, stdout.String())
		}
	}
}

// TestReplayKeepsShardsNotWorkers: eval, chat and copying read a run's settings with its shard
// count, which decides the bits, and without its worker count, which only set its speed on the
// machine it ran on.
func TestReplayKeepsShardsNotWorkers(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyWorldConfig()
	cfg.Workers, cfg.Shards = 1, 3
	if err := writeRunConfig(dir, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := loadRunConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Workers != 0 || got.Shards != 3 {
		t.Errorf("replayed settings: Workers %d, Shards %d; want 0 (this machine's cores) and the run's 3", got.Workers, got.Shards)
	}
}
