package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/model"
	"agentr1/rl/pipeline"
)

// realDataFixture writes a handful of multi-hop questions, a small corpus and a tiny pretrained
// policy (our checkpoint format: config.json, model.safetensors, tokenizer.json) to dir.
func realDataFixture(t *testing.T, dir string) (questions, corpus, modelDir string) {
	t.Helper()
	people := []struct{ name, city, country string }{
		{"Ada Brook", "Lorn", "Veska"}, {"Bo Carr", "Mirt", "Oland"}, {"Cy Dale", "Pell", "Veska"},
		{"Di Eames", "Quen", "Oland"}, {"Ed Finch", "Rask", "Tarn"}, {"Flo Gage", "Sool", "Tarn"},
	}
	var qs, ps bytes.Buffer
	var texts []string
	for i, p := range people {
		q := map[string]any{"id": fmt.Sprintf("q%d", i), "question": "In which country was " + p.name + " born?",
			"answers": []string{p.country}, "type": "bridge", "dataset": "toy"}
		b, _ := json.Marshal(q)
		qs.Write(append(b, '\n'))
		for k, text := range []string{p.name + " was born in " + p.city + ".", p.city + " is a city in " + p.country + "."} {
			title := []string{p.name, p.city}[k]
			b, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("p%d-%d", i, k), "title": title, "text": text})
			ps.Write(append(b, '\n'))
			texts = append(texts, title+"\n"+text)
		}
		texts = append(texts, q["question"].(string), `<think>search</think><tool_call>{"name": "search", "arguments": {"query": "`+p.name+`"}}</tool_call><answer>`+p.country+`</answer>`)
	}
	questions, corpus, modelDir = filepath.Join(dir, "toy.jsonl"), filepath.Join(dir, "corpus.jsonl"), filepath.Join(dir, "pretrained")
	if err := os.WriteFile(questions, qs.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corpus, ps.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := pipeline.TrainTokenizer(texts, 400, 0)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := pipeline.NewPolicy(pipeline.ModelConfig{Hidden: 32, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 64, InitRange: 0.02}, tok, 2048, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := policy.Save(modelDir); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(modelDir); err != nil {
		t.Fatal(err)
	}
	return questions, corpus, modelDir
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// realTrainArgs is a `train` command line on real data small enough for a test: the
// questions, corpus and pretrained folder of realDataFixture, two-row groups of two prompts,
// two short turns; more adds flags.
func realTrainArgs(questions, corpus, modelDir, out string, more ...string) []string {
	args := []string{"train", "--data", questions, "--model", modelDir, "--corpus", corpus, "--out", out, "--workers", "2",
		"--held-out", "2", "--search-top-k", "1", "--rl.prompts", "2", "--rl.n", "2", "--rl.max-turns", "2",
		"--rl.max-turn-tokens", "16", "--rl.max-len", "600", "--eval-batch", "4"}
	return append(args, more...)
}

// TestTrainRealData trains a tiny pretrained checkpoint by RL on a handful of real-format
// questions (--data FILE --model DIR --corpus FILE): no world, no SFT; the held-out questions
// are evaluated before and after; the run resumes from its checkpoint; the pretrained folder is
// left untouched.
func TestTrainRealData(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short training")
	}
	dir := t.TempDir()
	questions, corpus, modelDir := realDataFixture(t, dir)
	before := listDir(t, modelDir)
	out := filepath.Join(dir, "run")
	args := realTrainArgs(questions, corpus, modelDir, out, "--rl.steps", "2", "--log-format", "json")
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("train output:\n%s", stdout.String())
	if !strings.Contains(stdout.String(), "on "+questions+" from "+modelDir) {
		t.Errorf("no real-data header line:\n%s", stdout.String())
	}
	if got := stepRecords(t, filepath.Join(out, "metrics.jsonl"), "sft"); len(got) != 0 {
		t.Errorf("%d SFT steps on real data, want none", len(got))
	}
	if got := rlSteps(t, filepath.Join(out, "metrics.jsonl")); len(got) != 2 {
		t.Errorf("%d RL steps, want 2", len(got))
	}
	var ev evalFile
	raw, err := os.ReadFile(filepath.Join(out, "eval.json"))
	if err == nil {
		err = json.Unmarshal(raw, &ev)
	}
	if err != nil {
		t.Fatal(err)
	}
	held := ev.Sets["heldout"]
	if held == nil {
		t.Fatalf("eval.json: no held-out set: %s", raw)
	}
	if held.BeforeRL == nil || held.AfterRL == nil || held.BeforeRL.N != 2 || held.AfterRL.N != 2 || held.Baselines.NaiveRAG == nil || held.Baselines.ClosedBook == nil {
		t.Errorf("eval.json: base %+v final %+v baselines %v; want the 2 held-out questions before and after, and the baselines", held.BeforeRL, held.AfterRL, held.Baselines)
	}
	if ev.StartingPolicy != "pretrained model" || ev.RLSteps != 2 {
		t.Errorf("eval.json: starting policy %q, %d RL steps; want the pretrained model and 2", ev.StartingPolicy, ev.RLSteps)
	}
	var cfg pipeline.Config
	raw, err = os.ReadFile(filepath.Join(out, "config.json"))
	if err == nil {
		err = json.Unmarshal(raw, &cfg)
	}
	if err != nil || cfg.Data != questions || cfg.InitModel != modelDir || cfg.Corpus != corpus || cfg.BasePolicy != "" {
		t.Errorf("config.json: data %q model %q corpus %q base %q (%v)", cfg.Data, cfg.InitModel, cfg.Corpus, cfg.BasePolicy, err)
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(out, "final", f)); err != nil {
			t.Errorf("final/: %v", err)
		}
	}
	// Log lines are JSON on stderr.
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("--log-format json: stderr line %q is not a slog JSON record", line)
		}
	}

	// Resume with one more step: only the third runs, from the checkpoint after step 2.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"train", "--resume", out, "--rl.steps", "3"}, &stdout, &stderr); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if got := rlSteps(t, filepath.Join(out, "metrics.jsonl")); len(got) != 3 || got[2]["step"].(float64) != 3 {
		t.Errorf("after resume %d RL records, want 3 ending with step 3", len(got))
	}
	if after := listDir(t, modelDir); !slices.Equal(before, after) {
		t.Errorf("the pretrained folder changed: %v -> %v", before, after)
	}
}

// TestTrainRealDataBF16Reference trains a BF16 pretrained checkpoint with the KL term on: the
// frozen reference is the folder held for inference (said in the log), the step checkpoint
// leaves it out, and the run resumes from that checkpoint.
func TestTrainRealDataBF16Reference(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a short training")
	}
	dir := t.TempDir()
	questions, corpus, modelDir := realDataFixture(t, dir)
	policy, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := policy.SaveAs(modelDir, model.BF16); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	args := realTrainArgs(questions, corpus, modelDir, out, "--rl.steps", "1", "--rl.kl-coef", "0.01")
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if want := "reference policy: " + modelDir + " held for inference"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"train", "--resume", out, "--rl.steps", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	steps := rlSteps(t, filepath.Join(out, "metrics.jsonl"))
	if len(steps) != 2 || steps[1]["step"].(float64) != 2 {
		t.Fatalf("after resume %d RL records, want 2 ending with step 2", len(steps))
	}
	if _, ok := steps[1]["kl_coef"]; !ok {
		t.Errorf("the resumed step records no kl_coef: the KL term is off: %v", steps[1])
	}
}

// TestTrainRealDataUsage checks that real data is refused up front without --model, saying why
// and what to pass, and that --model is refused on the generated world.
func TestTrainRealDataUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no model", []string{"--data", "hotpotqa"}, []string{"--data hotpotqa needs --model", "from scratch", "Qwen2"}},
		{"unknown data", []string{"--data", "nope", "--model", dir}, []string{"--data \"nope\"", "world, hotpotqa, 2wiki, musique"}},
		{"model on the world", []string{"--model", dir}, []string{"--model is for real --data"}},
		{"not a model folder", []string{"--data", "musique", "--model", dir}, []string{"not a model folder"}},
		{"bad log format", []string{"--log-format", "xml"}, []string{"--log-format"}},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"train", "--out", filepath.Join(dir, "run")}, tc.args...), &stdout, &stderr)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tc.name, code, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.name, w, stderr.String())
			}
		}
	}
}

// TestTrainRealDataPretrainedSettings checks that a run on real questions takes the settings of
// a pretrained checkpoint (pipeline.Pretrained) where neither a flag nor the --config file
// gives one, that `help train` lists them, and that a run on the generated world keeps its
// defaults.
func TestTrainRealDataPretrainedSettings(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(t.TempDir(), "my.json")
	if err := os.WriteFile(configFile, []byte(`{"RL": {"MaxTurnTokens": 128}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	world := pipeline.DefaultConfig()
	for _, c := range []struct {
		name          string
		args          []string
		lr            float64
		maxLen, turn  int
		think, prompt bool
	}{
		{"real, nothing given", []string{"--data", "hotpotqa", "--model", dir}, 1e-6, 4096, 256, false, false},
		{"real, flags given", []string{"--data", "hotpotqa", "--model", dir, "--rl.lr", "3e-6", "--rl.max-len", "2048", "--require-think"}, 3e-6, 2048, 256, true, false},
		{"real, config file", []string{"--data", "hotpotqa", "--model", dir, "--config", configFile}, 1e-6, 4096, 128, false, false},
		{"world", nil, world.RL.LR, world.RL.MaxLen, world.RL.MaxTurnTokens, world.RequireThink, world.CompactPrompt},
	} {
		a, err := parseTrainArgs(append([]string{"--out", filepath.Join(t.TempDir(), "run")}, c.args...), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := a.cfg
		if got.RL.LR != c.lr || got.RL.MaxLen != c.maxLen || got.RL.MaxTurnTokens != c.turn || got.RequireThink != c.think || got.CompactPrompt != c.prompt {
			t.Errorf("%s: lr %v, max-len %d, max-turn-tokens %d, require-think %v, compact-prompt %v; want %v, %d, %d, %v, %v",
				c.name, got.RL.LR, got.RL.MaxLen, got.RL.MaxTurnTokens, got.RequireThink, got.CompactPrompt, c.lr, c.maxLen, c.turn, c.think, c.prompt)
		}
	}
	var stdout, stderr bytes.Buffer
	run([]string{"help", "train"}, &stdout, &stderr)
	if !strings.Contains(stdout.String()+stderr.String(), "--rl.lr 1e-06, --rl.critic-lr 1e-05, --rl.max-len 4096") {
		t.Errorf("help train does not list the pretrained settings:\n%s%s", stdout.String(), stderr.String())
	}
}
