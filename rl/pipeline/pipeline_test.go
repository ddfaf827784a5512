package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/env"
	"agentr1/env/world"
	"agentr1/model"
	"agentr1/rl"
	"agentr1/rl/trainer"
	"agentr1/tensor"
	"agentr1/tokenizer"
)

// tinyConfig is the whole pipeline shrunk to seconds: a small world, a small vocabulary, a
// 2-layer hidden-32 policy, a few SFT and RL steps.
// tinySetupPolicy prepares cfg's worlds and a fresh policy sized for them, as a run does
// before its warm start.
func tinySetupPolicy(t *testing.T, cfg Config) (*Setup, *model.Model) {
	t.Helper()
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(cfg.Model, s.Tokenizer, 2*MaxRow(cfg, s), cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

func tinyConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	small := func(seed uint64, split world.Split) world.Config {
		return world.Config{Seed: seed, Split: split, Countries: 3, Cities: 6, People: 10, Companies: 4, Bands: 3, Distractors: 4, Questions: 24}
	}
	cfg.TrainWorld, cfg.EvalWorld = small(1, world.Train), small(2, world.Eval)
	cfg.EvalQuestions = 4
	cfg.HeldOut = 3
	cfg.VocabSize = 400
	cfg.Model = ModelConfig{Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Intermediate: 64, InitRange: 0.02}
	cfg.Worlds, cfg.Demos = 1, 12
	cfg.SFT.Steps, cfg.SFT.Batch = 2, 4
	cfg.SFT.CopySteps, cfg.SFT.CopyEvery = 2, 1 // the default's copy rows, first and among the demonstrations
	cfg.RL.Steps, cfg.RL.Prompts, cfg.RL.N = 1, 2, 2
	cfg.RL.MaxTurnTokens, cfg.RL.MaxLen = 12, 300
	cfg.EvalBatch = 4
	cfg.CheckpointDir = t.TempDir()
	return cfg
}

// tinyCalcConfig is tinyConfig on the calculator task: both tools, half the questions numeric,
// and 60 training questions so that some are left for RL after the demonstrations.
func tinyCalcConfig(t *testing.T) Config {
	cfg := tinyConfig(t)
	cfg.Tools = env.ToolNames{"search", "calculator"}
	cfg.TrainWorld.Numeric, cfg.EvalWorld.Numeric = 0.5, 0.5
	cfg.TrainWorld.Questions = 60
	return cfg
}

// TestPipeline runs the real pipeline end to end on a tiny world: world generation, search
// index, scripted demonstrations, tokenizer training, SFT, a GRPO step, evaluation,
// checkpoint, resume and the baselines.
func TestPipeline(t *testing.T) {
	cfg := tinyConfig(t)
	kinds := map[string]int{}
	res, err := Run(context.Background(), cfg, false, func(kind string, rec any) {
		kinds[kind]++
		if kind == "rl" {
			m := rec.(trainer.StepMetrics)
			if !finite(m.Loss, m.RewardMean, m.GradNorm) {
				t.Errorf("non-finite RL metrics: %+v", m)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if kinds["sft"] != cfg.SFT.TotalSteps() || kinds["rl"] != cfg.RL.Steps || kinds["eval"] != 4 || kinds["checkpoint"] != 1 {
		t.Errorf("records logged: %v", kinds)
	}
	if len(res.SFTEval) != 2 || len(res.Final) != 2 {
		t.Fatalf("evaluations missing: sft %v final %v", res.SFTEval, res.Final)
	}
	for i, want := range []struct {
		name string
		n    int
	}{{"rl/heldout", cfg.HeldOut}, {"rl/unseen", cfg.EvalQuestions}} {
		if m := res.Final[i]; m.Name != want.name || m.N != want.n {
			t.Errorf("final evaluation %d: %s on %d questions, want %s on %d", i, m.Name, m.N, want.name, want.n)
		}
		for k := range res.Final[i].Groups {
			if !strings.HasPrefix(k, "dataset=") && !strings.HasPrefix(k, "type=") {
				t.Errorf("unexpected evaluation group %q", k)
			}
		}
	}
	if got, want := len(res.Setup.Train)-res.Setup.StartStates, cfg.TrainWorld.Questions-cfg.HeldOut-cfg.Demos; got != want {
		t.Errorf("%d training problems, want %d", got, want)
	}
	s := res.Setup
	if got := s.Tokenizer.Decode(s.Train[0].Prompt); !strings.Contains(got, "<|im_start|>assistant\n") || !strings.Contains(got, "Question:") {
		t.Errorf("prompt does not look like a ChatML QA prompt: %q", got)
	}

	// Resume: one more step from the checkpoint.
	cfg.RL.Steps = 2
	var rl int
	res2, err := Run(context.Background(), cfg, true, func(kind string, rec any) {
		if kind == "rl" {
			rl++
		}
		if kind == "sft" {
			t.Errorf("resumed run repeated SFT")
		}
		if kind == "resume" {
			// The first run's Logger set no State on "save": a checkpoint without the caller's
			// state must leave the caller's files as they are.
			t.Errorf("resume from a checkpoint without the caller's state logged %q %+v", kind, rec)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if rl != 1 || res2.Trainer.StepsDone != 2 {
		t.Errorf("resumed run took %d steps, ended at step %d; want 1, 2", rl, res2.Trainer.StepsDone)
	}

	// The run is over: without what only training uses, the policy still evaluates.
	res.ReleaseTraining()
	if res.Policy.Training() || res.Trainer.Opt.M != nil {
		t.Errorf("after ReleaseTraining: gradients %v, %d AdamW moments; want none", res.Policy.Training(), len(res.Trainer.Opt.M))
	}
	bl, err := Baselines(context.Background(), s, res.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if len(bl) != 6 {
		t.Errorf("%d baseline results, want 3 baselines x 2 sets", len(bl))
	}
	for _, m := range bl {
		if m.N == 0 || math.IsNaN(float64(m.EM)) {
			t.Errorf("baseline %s: n %d em %v", m.Name, m.N, m.EM)
		}
	}
}

// TestPrepareWorlds checks Config.Worlds: demonstrations spread over every training world,
// RL questions from all of them but world 0's held-out tail, each world its own.
func TestPrepareWorlds(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Worlds, cfg.Demos = 3, 10
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Worlds) != 3 || len(s.WorldTools) != 3 || s.Worlds[0] != s.TrainWorld {
		t.Fatalf("%d worlds, %d tool sets; world 0 is the training world: %v", len(s.Worlds), len(s.WorldTools), s.Worlds[0] == s.TrainWorld)
	}
	if len(s.Demos) != cfg.Demos || s.DemoSummary.N != cfg.Demos {
		t.Errorf("%d demonstrations (summary of %d), want %d", len(s.Demos), s.DemoSummary.N, cfg.Demos)
	}
	// Demonstrations 4, 3 and 3 of worlds 0, 1 and 2; RL gets the rest but the held-out tail.
	q := cfg.TrainWorld.Questions
	if want := (q - cfg.HeldOut - 4) + 2*(q-3); len(s.Train)-s.StartStates != want {
		t.Errorf("%d RL questions, want %d", len(s.Train)-s.StartStates, want)
	}
	if a, b := s.Worlds[0].Entities[0].Name, s.Worlds[1].Entities[0].Name; a == b {
		t.Errorf("worlds 0 and 1 both start with %q: extra worlds are not reseeded", a)
	}
	// The demonstrations of world 2 mention world 2's entities.
	last := s.Tokenizer.Decode(s.Demos[len(s.Demos)-1].Prompt)
	found := false
	for _, e := range s.Worlds[2].Entities {
		if strings.Contains(last, e.Name) {
			found = true
		}
	}
	if !found {
		t.Errorf("last demonstration's prompt names no entity of world 2: %q", last)
	}
}

// TestDemoImpatience checks that Config.DemoImpatience reaches the scripted agent: fully
// impatient, every demonstration answers after its first search; patient, none does.
func TestDemoImpatience(t *testing.T) {
	for _, imp := range []float64{0, 1} {
		cfg := tinyConfig(t)
		cfg.DemoNoise, cfg.DemoImpatience = 0, imp
		s, err := Prepare(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Every question has two or more hops: an impatient agent searches once, a patient
		// (and faultless) one at least twice.
		got := s.DemoSummary.Searches
		if imp == 1 && got != 1 {
			t.Errorf("DemoImpatience 1: %.2f searches per demonstration, want 1", got)
		}
		if imp == 0 && got < 2 {
			t.Errorf("DemoImpatience 0: %.2f searches per demonstration, want >= 2", got)
		}
	}
}

// TestRLQuestions checks which questions RL trains on: by default none that a demonstration
// showed or the held-out set holds; with RLOnDemoQuestions the demonstrated ones too; and a
// world whose questions are all demonstrated or held out is refused with a message naming
// the flags.
func TestRLQuestions(t *testing.T) {
	key := func(ids []int) string { return fmt.Sprint(ids) }
	for _, onDemos := range []bool{false, true} {
		cfg := tinyConfig(t)
		cfg.RLOnDemoQuestions = onDemos
		s, err := Prepare(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		q := cfg.TrainWorld.Questions
		want := q - cfg.HeldOut - cfg.Demos
		if onDemos {
			want = q - cfg.HeldOut
		}
		if len(s.Train)-s.StartStates != want {
			t.Errorf("RLOnDemoQuestions %v: %d RL questions, want %d", onDemos, len(s.Train)-s.StartStates, want)
		}
		demos, rl := map[string]bool{}, map[string]bool{}
		for _, d := range s.Demos {
			demos[key(d.Prompt)] = true
		}
		for _, p := range s.Train {
			rl[key(p.Prompt)] = true
		}
		shared := 0
		for k := range demos {
			if rl[k] {
				shared++
			}
		}
		if wantShared := map[bool]int{false: 0, true: len(demos)}[onDemos]; shared != wantShared {
			t.Errorf("RLOnDemoQuestions %v: %d demonstrated questions among the RL problems, want %d", onDemos, shared, wantShared)
		}
		for _, p := range s.EvalSets[0].Problems {
			if rl[key(p.Prompt)] || demos[key(p.Prompt)] {
				t.Errorf("RLOnDemoQuestions %v: a held-out question is trained on", onDemos)
			}
		}
	}
	cfg := tinyConfig(t)
	cfg.Demos = cfg.TrainWorld.Questions
	if _, err := Prepare(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--rl-on-demo-questions") {
		t.Errorf("every question demonstrated: err = %v, want one naming --rl-on-demo-questions", err)
	}
	// More demonstrations asked for than there are questions: the held-out tail stays out.
	cfg.RLOnDemoQuestions = true
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := cfg.TrainWorld.Questions - cfg.HeldOut; len(s.Demos) != want {
		t.Errorf("Demos = all %d questions: %d demonstrations, want %d", cfg.Demos, len(s.Demos), want)
	}
	demos := map[string]bool{}
	for _, d := range s.Demos {
		demos[key(d.Prompt)] = true
	}
	for _, p := range s.EvalSets[0].Problems {
		if demos[key(p.Prompt)] {
			t.Errorf("Demos = all questions: a held-out question is demonstrated")
		}
	}
}

// TestSFTBaseChecksTokenizer loads a saved SFT base only if its tokenizer.json is the run's
// tokenizer: a base saved with another tokenizer of the same size (here trained on other
// text) is an error naming the file and the first token that differs, since its ids mean
// other things.
func TestSFTBaseChecksTokenizer(t *testing.T) {
	var texts, other []string
	for i := range 200 {
		texts = append(texts, fmt.Sprintf("Reku was founded in %d and has %d thousand people.", 1800+i, 100+i))
		other = append(other, fmt.Sprintf("Gatir is a town in Fipuland; %d people live there.", 100+i))
	}
	runTok, err := TrainTokenizer(texts, 290, 0)
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := TrainTokenizer(other, 290, 0)
	if err != nil {
		t.Fatal(err)
	}
	if otherTok.VocabSize() != runTok.VocabSize() {
		t.Fatalf("the two tokenizers have %d and %d tokens, want the same size", otherTok.VocabSize(), runTok.VocabSize())
	}
	mc := ModelConfig{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 32, InitRange: 0.02}
	base, err := NewPolicy(mc, runTok, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := base.Save(dir); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.BasePolicy = dir
	load := func(tok *tokenizer.Tokenizer) error {
		policy, err := NewPolicy(mc, tok, 64, 2)
		if err != nil {
			t.Fatal(err)
		}
		return SFTBase(context.Background(), cfg, &Setup{Tokenizer: tok}, policy, false, func(string, any) {})
	}
	if err := otherTok.Save(dir); err != nil {
		t.Fatal(err)
	}
	err = load(runTok)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "tokenizer.json")) || !strings.Contains(err.Error(), "token ") {
		t.Errorf("base saved with another tokenizer: err %v, want one naming the file and a token", err)
	}
	if err := runTok.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := load(runTok); err != nil {
		t.Errorf("base saved with the run's tokenizer: %v", err)
	}
}

// TestSFTBaseRefusesDamagedState resumes a run whose SFT base is saved with a damaged
// sft-base.state.json (the output files' state when SFT ended) and checks that SFTBase refuses
// it naming the file, where the run used to train to its end and then fail.
func TestSFTBaseRefusesDamagedState(t *testing.T) {
	tok, err := TrainTokenizer([]string{"Reku was founded in 1800 and has 100 thousand people."}, 270, 0)
	if err != nil {
		t.Fatal(err)
	}
	mc := ModelConfig{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 32, InitRange: 0.02}
	policy, err := NewPolicy(mc, tok, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.BasePolicy, cfg.CheckpointDir = t.TempDir(), t.TempDir()
	if err := policy.Save(cfg.BasePolicy); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(cfg.CheckpointDir, baseStateFile)
	if err := os.WriteFile(state, []byte(`{"metrics_size": 6`), 0o644); err != nil {
		t.Fatal(err)
	}
	err = SFTBase(context.Background(), cfg, &Setup{Tokenizer: tok}, policy, true, func(string, any) {})
	if err == nil || !strings.Contains(err.Error(), state) {
		t.Errorf("damaged %s: err %v, want one naming it", baseStateFile, err)
	}
}

// TestSFTWeightsValidate checks that each loss weight of 0..100 is refused outside that range,
// the error naming it, and accepted at its ends.
func TestSFTWeightsValidate(t *testing.T) {
	fields := map[string]func(*SFTConfig) *float64{
		"NumberWeight":       func(c *SFTConfig) *float64 { return &c.NumberWeight },
		"NameWeight":         func(c *SFTConfig) *float64 { return &c.NameWeight },
		"CalcCallWeight":     func(c *SFTConfig) *float64 { return &c.CalcCallWeight },
		"CalcAnswerWeight":   func(c *SFTConfig) *float64 { return &c.CalcAnswerWeight },
		"ChoiceAnswerWeight": func(c *SFTConfig) *float64 { return &c.ChoiceAnswerWeight },
	}
	for name, field := range fields {
		for _, v := range []float64{-0.5, 100.5, math.NaN(), 0, 100} {
			cfg := DefaultSFTConfig()
			*field(&cfg) = v
			err := cfg.Validate()
			if ok := v >= 0 && v <= 100; (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), name)) {
				t.Errorf("%s %g: error %v, want ok %v and an error naming the field", name, v, err, ok)
			}
		}
	}
}

// finite reports whether every figure is a number (not NaN or ±Inf).
func finite(xs ...trainer.Num) bool {
	for _, x := range xs {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

func TestConfigValidate(t *testing.T) {
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Errorf("DefaultConfig invalid: %v", err)
	}
	for _, edit := range []func(*Config){
		func(c *Config) { c.DemoNoise = -0.1 },
		func(c *Config) { c.DemoImpatience = 1.5 },
		func(c *Config) { c.DemoImpatience = math.NaN() },
	} {
		c := DefaultConfig()
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Demo") {
			t.Errorf("demonstrator probabilities %v / %v: error %v, want one naming the field", c.DemoNoise, c.DemoImpatience, err)
		}
	}
	for _, edit := range []func(*Config){
		func(c *Config) { c.ProcessRew = math.NaN() },
		func(c *Config) { c.AnswerRew = math.Inf(1) },
		func(c *Config) { c.OperandRew = math.Inf(-1) },
	} {
		c := DefaultConfig()
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Rew") {
			t.Errorf("process rewards %v / %v / %v: error %v, want one naming the field", c.ProcessRew, c.AnswerRew, c.OperandRew, err)
		}
	}
	c := DefaultConfig()
	c.SaveDtype = "F16"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "SaveDtype") {
		t.Errorf("SaveDtype F16: error %v, want one naming the field", err)
	}
	c = DefaultConfig()
	c.Shards = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Shards") {
		t.Errorf("Shards -1: error %v, want one naming the field", err)
	}
}

// TestWorkersDoNotChangeTheRun runs the tiny pipeline on one, two and three workers: with the
// shard count fixed by the config, every run writes the same weights and the same figures, so
// that a documented run is reproduced on a machine of any number of cores. With three shards
// instead of two the run is another (the gradients' sums are split differently), which is
// why Shards is part of the config. SetParallelism restores the process's settings after.
func TestWorkersDoNotChangeTheRun(t *testing.T) {
	workersBefore, shardsBefore := tensor.Workers(), model.Shards()
	run := func(workers, shards int) ([][]float32, []*EvalMetrics) {
		cfg := tinyConfig(t)
		cfg.Workers, cfg.Shards = workers, shards
		res, err := Run(context.Background(), cfg, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tensor.Workers() != workersBefore || model.Shards() != shardsBefore {
			t.Fatalf("after a run on %d workers and %d shards the process has %d workers and %d shards, want %d and %d",
				workers, shards, tensor.Workers(), model.Shards(), workersBefore, shardsBefore)
		}
		var w [][]float32
		for _, p := range res.Policy.Params {
			w = append(w, p.Data)
		}
		return w, res.Final
	}
	same := func(a, b [][]float32) bool {
		for i := range a {
			for j := range a[i] {
				if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
					return false
				}
			}
		}
		return true
	}
	want, wantEval := run(1, 2)
	for _, workers := range []int{2, 3} {
		got, gotEval := run(workers, 2)
		if !same(got, want) {
			t.Errorf("%d workers wrote other weights than one worker, both with 2 shards", workers)
		}
		for i := range wantEval {
			if gotEval[i].EM != wantEval[i].EM || gotEval[i].Reward != wantEval[i].Reward {
				t.Errorf("%d workers: %s EM %v reward %v, one worker %v and %v", workers, gotEval[i].Name, gotEval[i].EM, gotEval[i].Reward, wantEval[i].EM, wantEval[i].Reward)
			}
		}
	}
	if other, _ := run(2, 3); same(other, want) {
		t.Error("3 shards wrote the weights of 2: the shard count should change the run's rounding")
	}
}

// TestConfigJSONWithStringSettings reads a config.json written when the typed settings were
// plain strings (testdata/config-string-settings.json, DefaultConfig as it was then): it still
// loads, to the typed values, and writing it back gives the same strings.
func TestConfigJSONWithStringSettings(t *testing.T) {
	raw, err := os.ReadFile("testdata/config-string-settings.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("testdata/config-string-settings.json: %v", err)
	}
	if cfg.RL.Algorithm != trainer.GRPO || cfg.RL.OldLogProbs != trainer.OldLogProbsSampled || cfg.RL.KLPlacement != trainer.KLAuto ||
		cfg.RL.KLEstimator != rl.KLK3 || cfg.RL.AggMode != rl.TokenMean || cfg.RL.Decay != trainer.DecayCosine || cfg.SFT.Decay != trainer.DecayCosine {
		t.Errorf("typed settings read as %+v / SFT decay %q", cfg.RL, cfg.SFT.Decay)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the old config does not validate: %v", err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(raw, &before); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &after); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"Algorithm", "OldLogProbs", "KLPlacement", "KLEstimator", "AggMode", "Decay"} {
		was, now := before["RL"].(map[string]any)[key], after["RL"].(map[string]any)[key]
		if was != now {
			t.Errorf("RL.%s written as %v, was %v", key, now, was)
		}
	}
	if was, now := before["SFT"].(map[string]any)["Decay"], after["SFT"].(map[string]any)["Decay"]; was != now {
		t.Errorf("SFT.Decay written as %v, was %v", now, was)
	}
}
