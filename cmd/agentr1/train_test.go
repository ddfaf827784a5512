package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

func TestTrainRejectsInvalidSettingsUpFront(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--algo", "sarsa"}, "--algo"},
		{[]string{"--data", "hotpotqa"}, "--data"},
		{[]string{"--workers", "-1"}, "--workers"},
		{[]string{"--rl.lr", "fast"}, "rl.lr"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"stray"}, "stray"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"train"}, tc.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("train %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestTrainRefusesARunDirectory checks that a new run is refused an --out that holds a run's
// config.json or metrics.jsonl, which it would replace and append to, and that the earlier
// run's config.json is left as it was.
func TestTrainRefusesARunDirectory(t *testing.T) {
	for _, name := range []string{"config.json", "metrics.jsonl"} {
		out := t.TempDir()
		earlier := []byte(`{"Seed": 5}`)
		if err := os.WriteFile(filepath.Join(out, name), earlier, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"train", "--out", out, "--seed", "6", "--rl.steps", "1", "--sft.steps", "1"}, &stdout, &stderr)
		if want := "already holds a run (" + name + "); continue it with --resume " + out; code != 2 || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", name, code, stderr.String(), want)
		}
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, earlier) {
			t.Errorf("%s: the earlier run's file now holds %q (%v)", name, got, err)
		}
	}
}

func TestTrainSettingsLayering(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "c.json")
	os.WriteFile(cfgPath, []byte(`{"Seed": 7, "RL": {"Steps": 3}}`), 0o644)
	a, err := parseTrainArgs([]string{"--algo", "ppo", "--config", cfgPath, "--rl.clip-high", "0.28", "--out", dir}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := trainer.DefaultRLConfig(trainer.PPO)
	if a.cfg.RL.Algorithm != trainer.PPO || a.cfg.Seed != 7 || a.cfg.RL.Steps != 3 || a.cfg.RL.ClipHigh != 0.28 || a.cfg.RL.CriticLR != want.CriticLR {
		t.Errorf("layered settings wrong: algo %s seed %d steps %d clip-high %g critic-lr %g",
			a.cfg.RL.Algorithm, a.cfg.Seed, a.cfg.RL.Steps, a.cfg.RL.ClipHigh, a.cfg.RL.CriticLR)
	}
	if a.cfg.CheckpointDir != filepath.Join(dir, "checkpoints") || a.cfg.BasePolicy != filepath.Join(dir, "sft-base") {
		t.Errorf("run directory layout: %q %q", a.cfg.CheckpointDir, a.cfg.BasePolicy)
	}
	shared := filepath.Join(dir, "shared-base")
	a, err = parseTrainArgs([]string{"--out", dir, "--base-policy", shared}, &bytes.Buffer{})
	if err != nil || a.cfg.BasePolicy != shared {
		t.Errorf("--base-policy %s: got %q (%v), want it kept", shared, a.cfg.BasePolicy, err)
	}
}

// TestTrainCalculatorTask checks that --tools with the calculator (by flag or --config file)
// gives the run the calculator task's settings and algorithm wherever no flag and no --config
// file gives them, that search alone (the default) keeps the default run's, and that a resumed
// run keeps the settings it recorded.
func TestTrainCalculatorTask(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	noTrainShare := write("c.json", `{"TrainWorld": {"numeric": 0}}`)
	grpoFile := write("grpo.json", `{"RL": {"Algorithm": "grpo"}}`)
	calcFile := write("calc.json", `{"Tools": "search,calculator"}`)
	share := pipeline.NumericShare
	grpo, rpp := trainer.DefaultRLConfig(trainer.GRPO), trainer.DefaultRLConfig(pipeline.CalculatorAlgorithm)
	type want struct {
		algo               trainer.Algorithm
		steps, prompts, n  int
		train, eval        float64 // numeric shares
		operand, startsAns float64
		startsAnsTool      string
		calcWeights        [3]float64 // the calculating turn's, the answer's after it, a choice's answer's
	}
	search := want{trainer.GRPO, grpo.Steps, grpo.Prompts, grpo.N, 0, 0, 0, 0, "", [3]float64{1, 1, 1}}
	task := want{rpp.Algorithm, 90, rpp.Prompts, rpp.N, share, share, 0.2, 0.5, "calculator", [3]float64{5, 5, 5}}
	with := func(w want, f func(*want)) want { f(&w); return w }
	for _, c := range []struct {
		args []string
		want want
	}{
		{nil, search},
		{[]string{"--tools", "search"}, search},
		{[]string{"--tools", "search,calculator"}, task},
		{[]string{"--config", calcFile}, task},
		{[]string{"--tools", "search,calculator", "--train-world.numeric", "0.5"}, with(task, func(w *want) { w.train = 0.5 })},
		{[]string{"--tools", "search,calculator", "--eval-world.numeric", "0"}, with(task, func(w *want) { w.eval = 0 })},
		{[]string{"--tools", "search,calculator", "--config", noTrainShare}, with(task, func(w *want) { w.train = 0 })},
		{[]string{"--tools", "search,calculator", "--operand-rew", "0", "--start-states-answer", "0.25"},
			with(task, func(w *want) { w.operand, w.startsAns = 0, 0.25 })},
		{[]string{"--tools", "search,calculator", "--rl.prompts", "40"}, with(task, func(w *want) { w.prompts = 40 })},
		{[]string{"--tools", "search,calculator", "--steps", "240"}, with(task, func(w *want) { w.steps = 240 })},
		{[]string{"--tools", "search,calculator", "--rl.steps", "30"}, with(task, func(w *want) { w.steps = 30 })},
		{[]string{"--tools", "search,calculator", "--start-states-answer-tool", ""}, with(task, func(w *want) { w.startsAnsTool = "" })},
		{[]string{"--tools", "search,calculator", "--sft.calc-answer-weight", "1"}, with(task, func(w *want) { w.calcWeights[1] = 1 })},
		{[]string{"--tools", "search,calculator", "--sft.calc-call-weight", "2"}, with(task, func(w *want) { w.calcWeights[0] = 2 })},
		{[]string{"--tools", "search,calculator", "--sft.choice-answer-weight", "1"}, with(task, func(w *want) { w.calcWeights[2] = 1 })},
		{[]string{"--tools", "search,calculator", "--algo", "grpo"},
			with(task, func(w *want) { w.algo, w.prompts, w.n = trainer.GRPO, grpo.Prompts, grpo.N })},
		{[]string{"--tools", "search,calculator", "--config", grpoFile},
			with(task, func(w *want) { w.algo, w.prompts, w.n = trainer.GRPO, grpo.Prompts, grpo.N })},
	} {
		a, err := parseTrainArgs(append(c.args, "--out", dir), &bytes.Buffer{})
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		got := want{a.cfg.RL.Algorithm, a.cfg.RL.Steps, a.cfg.RL.Prompts, a.cfg.RL.N, a.cfg.TrainWorld.Numeric, a.cfg.EvalWorld.Numeric,
			a.cfg.OperandRew, a.cfg.StartStatesAnswer, a.cfg.StartStatesAnswerTool, [3]float64{a.cfg.SFT.CalcCallWeight, a.cfg.SFT.CalcAnswerWeight, a.cfg.SFT.ChoiceAnswerWeight}}
		if got != c.want {
			t.Errorf("%v: settings %+v, want %+v", c.args, got, c.want)
		}
	}
	a, err := parseTrainArgs([]string{"--tools", "search,calculator", "--out", dir}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if wantTask := []string{"RL.Algorithm=reinforce++", "RL.Steps=90", "TrainWorld.Numeric=0.3", "EvalWorld.Numeric=0.3", "OperandRew=0.2",
		"StartStatesAnswer=0.5", "StartStatesAnswerTool=calculator", "SFT.CalcCallWeight=5", "SFT.CalcAnswerWeight=5", "SFT.ChoiceAnswerWeight=5"}; !slices.Equal(a.task, wantTask) {
		t.Errorf("the calculator task's settings for the log: %q, want %q", a.task, wantTask)
	}
	a, err = parseTrainArgs([]string{"--tools", "search,calculator", "--algo", "grpo", "--operand-rew", "0",
		"--train-world.numeric", "0", "--eval-world.numeric", "0", "--out", dir}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeRunConfig(dir, a.cfg); err != nil {
		t.Fatal(err)
	}
	a, err = parseTrainArgs([]string{"--resume", dir}, &bytes.Buffer{})
	if err != nil || a.cfg.TrainWorld.Numeric != 0 || a.cfg.EvalWorld.Numeric != 0 || !a.cfg.Tools.Has("calculator") ||
		a.cfg.RL.Algorithm != trainer.GRPO || a.cfg.OperandRew != 0 || len(a.task) != 0 {
		t.Errorf("--resume of a GRPO calculator run without numeric questions or operand reward: %v, shares %v, %v, tools %s, %s, operand reward %v, task settings %q; want it as recorded",
			err, a.cfg.TrainWorld.Numeric, a.cfg.EvalWorld.Numeric, a.cfg.Tools, a.cfg.RL.Algorithm, a.cfg.OperandRew, a.task)
	}
}

// TestEvalUsageErrors checks that eval and chat refuse each out-of-range flag up front by name,
// before any model or data is read, and names a missing data file.
func TestEvalUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--model is required"},
		{[]string{"--model", "x", "--topk", "0"}, "--topk 0, want >= 1"},
		{[]string{"--model", "x", "--n", "-1"}, "--n -1, want >= 0"},
		{[]string{"--model", "x", "--max-len", "8"}, "--max-len 8, want >= 16"},
		{[]string{"--model", "x", "--batch", "0"}, "--batch 0, want >= 1"},
		// chat shares the agent flags' checks (--topk 0 is allowed there: the default)
		{[]string{"chat"}, "--model is required"},
		{[]string{"chat", "--model", "x", "--topk", "-1"}, "--topk -1, want >= 0"},
		{[]string{"chat", "--model", "x", "--max-turns", "0"}, "--max-turns 0, want >= 1"},
		{[]string{"chat", "--model", "x", "--temperature", "-1"}, "--temperature -1, want >= 0"},
	} {
		args := append([]string{"eval"}, c.args...)
		if len(c.args) > 0 && c.args[0] == "chat" {
			args = c.args
		}
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, stderr.String(), c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"eval", "--model", t.TempDir(), "--data", "nope.jsonl"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "nope.jsonl") {
		t.Errorf("missing data file: exit %d, stderr %q", code, stderr.String())
	}
}

func TestLoadQuestionsFormats(t *testing.T) {
	dir := t.TempDir()
	flash := filepath.Join(dir, "nq.jsonl")
	os.WriteFile(flash, []byte(`{"id": "q1", "question": "Who?", "golden_answers": ["Ann", "Anne"]}`+"\n"), 0o644)
	qs, err := loadQuestions(flash)
	if err != nil || len(qs) != 1 || len(qs[0].Answers) != 2 || qs[0].Dataset != "nq" {
		t.Errorf("FlashRAG file: %v %+v", err, qs)
	}
	qs, err = loadQuestions("musique")
	if err != nil || len(qs) != 133 {
		t.Errorf("embedded musique: %d questions, %v", len(qs), err)
	}
}

// TestCheckpointQuiet checks a short run checkpoints only at its end (and when interrupted),
// a long one every quarter of RL and tenth of SFT, and that a checkpoint is not a log line
// between the progress lines.
func TestCheckpointQuiet(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args          []string
		rlEvery, sftE int
	}{
		{[]string{"--rl.steps", "5", "--sft.steps", "50"}, 10, 100},
		{nil, 60, 320}, // the default 240 RL steps and 3,200 SFT steps: a quarter, a tenth
		{[]string{"--rl.steps", "200", "--checkpoint-every", "3", "--sft-checkpoint-every", "7"}, 3, 7},
	} {
		a, err := parseTrainArgs(append(c.args, "--out", dir), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if a.cfg.CheckpointEvery != c.rlEvery || a.cfg.SFTCheckpointEvery != c.sftE {
			t.Errorf("%v: checkpoints every %d RL and %d SFT steps, want %d and %d", c.args, a.cfg.CheckpointEvery, a.cfg.SFTCheckpointEvery, c.rlEvery, c.sftE)
		}
	}
	a, err := parseTrainArgs([]string{"--out", dir}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	logger, _ := newLogger(&stderr, logText)
	r := &trainRun{args: a, stdout: &stdout, logger: logger}
	r.log("checkpoint", filepath.Join(dir, "checkpoints", "step-000001.ckpt"))
	if stdout.Len()+stderr.Len() > 0 {
		t.Errorf("a checkpoint printed %q on stdout and %q on stderr", stdout.String(), stderr.String())
	}
}

// TestPrintAnswerSources: the summary counts each set's name answers found earlier in their
// episodes before and after RL, and repeats the warning of a broken warm start only when the
// starting policy invents most of them on every set.
func TestPrintAnswerSources(t *testing.T) {
	eval := func(name string, names, invented int) *pipeline.EvalMetrics {
		return &pipeline.EvalMetrics{Name: name, Answers: &pipeline.AnswerSources{Episodes: 100, Names: names, Read: names - invented, Invented: invented}}
	}
	ev := &evalFile{Sets: map[string]*setEval{
		"heldout": {BeforeRL: eval("sft/heldout", 89, 71), AfterRL: eval("rl/heldout", 88, 20)},
		"unseen":  {BeforeRL: eval("sft/unseen", 87, 78), AfterRL: nil},
	}}
	var buf bytes.Buffer
	warning := printAnswerSources(&buf, []string{"heldout", "unseen"}, ev, "SFT base")
	out := buf.String()
	for _, want := range []string{"SFT base -> after RL", "heldout 18 of 89 -> 68 of 88", "unseen 9 of 87 -> n/a"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"71 of 89 on heldout", "78 of 87 on unseen"} {
		if !strings.Contains(warning, want) {
			t.Errorf("warning lacks %q: %q", want, warning)
		}
	}
	ev.Sets["unseen"].BeforeRL = eval("sft/unseen", 87, 8)
	buf.Reset()
	if warning := printAnswerSources(&buf, []string{"heldout", "unseen"}, ev, "SFT base"); warning != "" {
		t.Errorf("a warm start that reads on one set is warned of: %q", warning)
	}
}

// TestPrintWarnings repeats each warning once, in order.
func TestPrintWarnings(t *testing.T) {
	var buf bytes.Buffer
	printWarnings(&buf, []string{"weak answer turn", "broken warm start", "weak answer turn"})
	if want := "warning: weak answer turn\nwarning: broken warm start\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	buf.Reset()
	printWarnings(&buf, nil)
	if buf.Len() != 0 {
		t.Errorf("no warnings printed as %q", buf.String())
	}
}

// TestGivenBy sees a setting given by its own flag, by its short alias (--steps for
// RL.Steps) and by a --config file, and no other.
func TestGivenBy(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(file, []byte(`{"RL": {"steps": 7}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set   map[string]bool
		path  string
		field string
		want  bool
	}{
		{map[string]bool{"rl.steps": true}, "", "RL.Steps", true},
		{map[string]bool{"steps": true}, "", "RL.Steps", true},
		{map[string]bool{}, file, "RL.Steps", true},
		{map[string]bool{"steps": true}, "", "RL.Prompts", false},
		{map[string]bool{"algo": true}, file, "RL.Prompts", false},
		{map[string]bool{}, "", "RL.Steps", false},
	} {
		if got := givenBy(c.set, c.path)(c.field); got != c.want {
			t.Errorf("flags %v, config %q: %s given = %v, want %v", c.set, c.path, c.field, got, c.want)
		}
	}
}
