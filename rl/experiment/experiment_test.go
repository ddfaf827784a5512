package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
	"agentr1/tokenizer"
)

func tinyPlan(t *testing.T, seeds int) *Plan {
	t.Helper()
	p, err := NewPlan(Request{Preset: "tiny", Seeds: seeds, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunInterruptResume runs the tiny preset three ways: uninterrupted; interrupted during an
// SFT and again during an RL run, then resumed; and checks that the resumed experiment skips
// finished units, continues the unfinished ones from their checkpoints, and ends with the
// uninterrupted experiment's figures exactly.
func TestRunInterruptResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tiny experiment three times")
	}
	whole := t.TempDir()
	p, err := Open(whole, tinyPlan(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Run(context.Background(), p, Options{Dir: whole})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range want.Methods {
		if len(row.Runs) != 1 || len(row.Runs[0].Evals) != 2 {
			t.Fatalf("method %s: %d runs; want one with 2 evaluation sets", row.Name, len(row.Runs))
		}
	}

	dir := t.TempDir()
	stops := []func(Event) bool{
		func(e Event) bool { // during the SFT, after its third step
			m, ok := e.Record.(pipeline.SFTMetrics)
			return ok && m.Step == 3
		},
		func(e Event) bool { // during PPO, after its first RL step
			m, ok := e.Record.(trainer.StepMetrics)
			return ok && e.Unit.Method != nil && e.Unit.Method.Name == "ppo" && m.Step == 1
		},
	}
	var events []Event
	for i, stop := range stops {
		ctx, cancel := context.WithCancel(context.Background())
		p, err := Open(dir, tinyPlan(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(ctx, p, Options{Dir: dir, OnEvent: func(e Event) {
			events = append(events, e)
			if stop(e) {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interruption %d: error %v, want context.Canceled", i, err)
		}
	}
	// A process killed after its checkpoint leaves records that the resumed unit logs again,
	// the last of them maybe torn: the resumed unit must cut its files back to the checkpoint.
	// One killed before its first checkpoint (GRPO, not started here) leaves records that the
	// unit, starting over, must drop; so does a baseline unit killed before its result (Naive
	// RAG's result is taken away here), which keeps no checkpoint.
	if err := os.Remove(filepath.Join(dir, "seed-1", "naive-rag", ResultFile)); err != nil {
		t.Fatal(err)
	}
	for _, unit := range []string{"ppo", "grpo", "naive-rag"} {
		if err := os.MkdirAll(filepath.Join(dir, "seed-1", unit), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{metricsFile, evalsFile} {
			f, err := os.OpenFile(filepath.Join(dir, "seed-1", unit, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(`{"name":"rl/heldout","step":99}` + "\n" + `{"na`); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	p, err = Open(dir, tinyPlan(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	events = nil
	got, err := Run(context.Background(), p, Options{Dir: dir, OnEvent: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	resumedPPO := false
	for _, e := range events {
		if e.Kind == "start" || e.Kind == "skip" {
			kinds[e.Unit.Name()] = e.Kind
		}
		if s, ok := e.Record.(string); ok && e.Unit.Method != nil && e.Unit.Method.Name == "ppo" && strings.HasPrefix(s, "resumed from") {
			resumedPPO = true
		}
	}
	for name, want := range map[string]string{"seed 1 · SFT": "skip", "seed 1 · Base Tool Call (SFT base)": "skip", "seed 1 · Naive RAG": "start", "seed 1 · PPO": "start", "seed 1 · GRPO": "start"} {
		if kinds[name] != want {
			t.Errorf("final run: %s was %q, want %q", name, kinds[name], want)
		}
	}
	if !resumedPPO {
		t.Error("PPO did not resume from its checkpoint")
	}
	for i := range want.Methods {
		w, g := want.Methods[i], got.Methods[i]
		for _, r := range append(w.Runs, g.Runs...) {
			r.Seconds = 0
		}
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if string(wj) != string(gj) {
			t.Errorf("method %s: resumed %s\nuninterrupted %s", w.Name, gj, wj)
		}
	}
	for _, name := range []string{metricsFile, evalsFile} {
		files, _ := filepath.Glob(filepath.Join(whole, "seed-1", "*", name))
		files = append(files, filepath.Join(whole, "seed-1", name))
		for _, w := range files {
			g := filepath.Join(dir, strings.TrimPrefix(w, whole))
			if ws, gs := recordSteps(t, w), recordSteps(t, g); ws != gs {
				t.Errorf("%s: records %s\nuninterrupted %s", g, gs, ws)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, ResultsMDFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| GRPO | 1 |", "*ablations*", "| PPO w/o both masks |", "heldout EM", "unseen EM", "avg EM"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("results.md lacks %q:\n%s", s, md)
		}
	}
	// A different request is refused in the same directory.
	other := tinyPlan(t, 2)
	if _, err := Open(dir, other); err == nil || !strings.Contains(err.Error(), "another --out") {
		t.Errorf("Open with another request: %v, want a refusal", err)
	}
	// Another worker count is the same experiment, run at another speed: it continues, with
	// the new count in every unit's settings.
	fewer, err := NewPlan(Request{Preset: "tiny", Seeds: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err = Open(dir, fewer)
	if err != nil {
		t.Fatalf("Open with another worker count: %v, want the experiment continued", err)
	}
	if p.Request.Workers != 1 || p.SeedConfig(p.Seeds[0]).Workers != 1 {
		t.Errorf("continued with workers %d (request) and %d (a unit's settings), want 1 and 1", p.Request.Workers, p.SeedConfig(p.Seeds[0]).Workers)
	}
}

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		xs        []float64
		mean, std float64
	}{
		{"one", []float64{0.5}, 0.5, 0},
		{"two", []float64{0.1, 0.3}, 0.2, math.Sqrt(0.02)},
		{"three", []float64{1, 2, 3}, 2, 1},
	} {
		m, s := meanStd(tc.xs)
		if math.Abs(m-tc.mean) > 1e-12 || math.Abs(s-tc.std) > 1e-12 {
			t.Errorf("%s: mean %g std %g, want %g %g", tc.name, m, s, tc.mean, tc.std)
		}
	}
}

// TestAlgorithmRL checks that a tuned default reaches every algorithm while each keeps its own
// settings.
func TestAlgorithmRL(t *testing.T) {
	def := trainer.DefaultRLConfig(trainer.GRPO)
	def.LR, def.Steps, def.N = 3e-4, 7, 4
	for _, tc := range []struct {
		algo    trainer.Algorithm
		n       int
		prompts int
	}{
		{trainer.GRPO, 4, def.Prompts},
		{trainer.PPO, 4, def.Prompts},
		{trainer.ReinforcePP, 1, trainer.DefaultRLConfig(trainer.ReinforcePP).Prompts},
	} {
		c := AlgorithmRL(def, tc.algo)
		if c.Algorithm != tc.algo || c.LR != 3e-4 || c.Steps != 7 || c.N != tc.n || c.Prompts != tc.prompts {
			t.Errorf("%s: algo %s lr %g steps %d n %d prompts %d; want lr 3e-4, steps 7, n %d, prompts %d",
				tc.algo, c.Algorithm, c.LR, c.Steps, c.N, c.Prompts, tc.n, tc.prompts)
		}
	}
}

// TestPlanMethods checks the table's rows and ablation switches.
func TestPlanMethods(t *testing.T) {
	p, err := NewPlan(Request{Preset: "paper-mini", Quick: true, Seeds: 3})
	if err != nil {
		t.Fatal(err)
	}
	// --quick shares one SFT base: 1 SFT unit + 3 seeds x 10 methods.
	if len(p.Seeds) != 3 || len(p.Methods) != 10 || len(p.Units()) != 31 || !p.SharedSFT {
		t.Fatalf("%d seeds, %d methods, %d units, shared SFT %v; want 3, 10, 31, true", len(p.Seeds), len(p.Methods), len(p.Units()), p.SharedSFT)
	}
	full, err := NewPlan(Request{Preset: "paper-mini", Seeds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Units()) != 33 || full.SharedSFT {
		t.Errorf("paper-mini: %d units, shared SFT %v; want 33 (an SFT per seed), false", len(full.Units()), full.SharedSFT)
	}
	switches := map[string][2]bool{}
	for _, m := range p.Methods {
		if m.Kind == KindRL {
			switches[m.Name] = [2]bool{m.RL.NoAdvantageMask, m.RL.NoLossMask}
			if m.RL.Steps != 20 {
				t.Errorf("%s: %d RL steps in --quick, want 20", m.Name, m.RL.Steps)
			}
		}
	}
	for name, want := range map[string][2]bool{"ppo": {false, false}, "ppo-no-adv-mask": {true, false}, "ppo-no-masks": {true, true}, "grpo-no-loss-mask": {false, true}, "rloo": {false, false}} {
		if switches[name] != want {
			t.Errorf("%s: (no advantage mask, no loss mask) = %v, want %v", name, switches[name], want)
		}
	}
	if est := p.Total(p.Units(), DefaultRates); est <= 0 || est.Minutes() > 90 {
		t.Errorf("--quick estimate %v, want within 90 minutes", est)
	}
	if _, err := NewPlan(Request{Preset: "nope", Seeds: 1}); err == nil {
		t.Error("unknown preset accepted")
	}
}

// TestPlanSelectMethods checks Request.Methods: the named rows only, in the table's order
// whatever the order asked, and an unknown name refused with the known ones listed.
func TestPlanSelectMethods(t *testing.T) {
	p, err := NewPlan(Request{Preset: "paper-mini", Quick: true, Seeds: 2, Methods: []string{"grpo-no-loss-mask", "naive-rag", "grpo"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range p.Methods {
		got = append(got, m.Name)
	}
	if want := "naive-rag grpo grpo-no-loss-mask"; strings.Join(got, " ") != want {
		t.Errorf("methods %v, want %s", got, want)
	}
	if n := len(p.Units()); n != 1+2*3 {
		t.Errorf("%d units, want 7 (one shared SFT, 2 seeds x 3 methods)", n)
	}
	full, err := NewPlan(Request{Preset: "paper-mini", Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	names := MethodNames()
	if len(names) < len(full.Methods) {
		t.Fatalf("MethodNames %v for %d methods", names, len(full.Methods))
	}
	for i, m := range full.Methods {
		if names[i] != m.Name || m.Extra {
			t.Errorf("MethodNames()[%d] = %q, the table's row %d is %q (extra %v)", i, names[i], i, m.Name, m.Extra)
		}
	}
	// The extra methods (verl's further objectives) follow the table's rows and run only when
	// named.
	extras := names[len(full.Methods):]
	if !slices.Equal(extras, []string{"gspo", "opo", "gpg", "grpo-passk"}) {
		t.Errorf("extra methods %v, want gspo, opo, gpg, grpo-passk", extras)
	}
	named, err := NewPlan(Request{Preset: "paper-mini", Seeds: 1, Methods: []string{"grpo", "gspo", "grpo-passk"}})
	if err != nil {
		t.Fatal(err)
	}
	var picked []string
	for _, m := range named.Methods {
		picked = append(picked, m.Name+":"+string(m.RL.Algorithm))
	}
	if want := []string{"grpo:grpo", "gspo:gspo", "grpo-passk:grpo-passk"}; !slices.Equal(picked, want) {
		t.Errorf("--methods grpo,gspo,grpo-passk: %v, want %v", picked, want)
	}
	_, err = NewPlan(Request{Preset: "paper-mini", Seeds: 1, Methods: []string{"grpo", "gpro"}})
	if err == nil || !strings.Contains(err.Error(), `"gpro"`) || !strings.Contains(err.Error(), "reinforce++-baseline") {
		t.Errorf("unknown method: error %v, want one naming it and the known methods", err)
	}
}

// TestSharedSFT runs the tiny preset with two seeds sharing the first seed's SFT base: one SFT
// runs, both seeds' methods finish from that base, and their RL runs differ.
func TestSharedSFT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tiny experiment")
	}
	dir := t.TempDir()
	plan := tinyPlan(t, 2)
	plan.SharedSFT = true
	plan.Config.EvalEvery = 1 // and an evaluation during training: after step 1 of 2
	p, err := Open(dir, plan)
	if err != nil {
		t.Fatal(err)
	}
	sfts := 0
	res, err := Run(context.Background(), p, Options{Dir: dir, OnEvent: func(e Event) {
		if e.Kind == "start" && e.Unit.Method == nil {
			sfts++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if sfts != 1 {
		t.Errorf("%d SFT units ran, want 1", sfts)
	}
	if _, err := os.Stat(filepath.Join(dir, "seed-2", "sft-base")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("seed 2 has its own SFT base (stat: %v)", err)
	}
	// The base is a Hugging Face folder: SFTBase writes the tokenizer beside the weights.
	if _, err := tokenizer.Load(filepath.Join(dir, "seed-1", "sft-base", tokenizer.FileName)); err != nil {
		t.Errorf("seed 1's SFT base has no tokenizer: %v", err)
	}
	for _, row := range res.Methods {
		if len(row.Runs) != 2 {
			t.Fatalf("method %s: %d runs, want 2", row.Name, len(row.Runs))
		}
		for _, u := range row.Runs {
			var points []string
			for _, m := range u.Curve {
				points = append(points, fmt.Sprintf("%s@%d", m.Name, m.Step))
			}
			want := []string{"rl/heldout@1", "rl/unseen@1", "rl/heldout@2", "rl/unseen@2"}
			if u.RLSteps == 0 { // the baselines evaluate once
				want = nil
			}
			if !slices.Equal(points, want) {
				t.Errorf("%s seed %d: evaluations during training %v, want %v", row.Name, u.Seed, points, want)
			}
		}
	}
	if !strings.Contains(res.Markdown(), "| heldout EM @1 | heldout EM @2 |") {
		t.Errorf("results.md has no table of the evaluations during training:\n%s", res.Markdown())
	}
	if !res.SharedSFT || !strings.Contains(res.Markdown(), "shared by all seeds") {
		t.Errorf("results do not say the SFT base was shared")
	}
}

// TestResultOfAnotherUnit checks that a unit's result.json is taken as its result only when it
// names the unit's method and seed: a damaged one ("null", "{}") or one copied from another
// unit is an error naming the file, not a finished unit with no figures or another's.
func TestResultOfAnotherUnit(t *testing.T) {
	p, err := NewPlan(Request{Preset: "tiny", Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(p, Options{Dir: t.TempDir()})
	m := p.Methods[len(p.Methods)-1]
	u := Unit{Seed: p.Seeds[0], Method: &m}
	path := filepath.Join(r.unitDir(u), ResultFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, content string
		done          bool
	}{
		{"its own", fmt.Sprintf(`{"method": %q, "seed": %d, "evals": []}`, m.Name, u.Seed), true},
		{"null", "null", false},
		{"empty object", "{}", false},
		{"another method", fmt.Sprintf(`{"method": "naive-rag", "seed": %d}`, u.Seed), false},
		{"another seed", fmt.Sprintf(`{"method": %q, "seed": %d}`, m.Name, u.Seed+1), false},
	} {
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, done, err := r.finished(u)
		if done != tc.done || (err == nil) != tc.done || (err != nil && !strings.Contains(err.Error(), path)) {
			t.Errorf("%s: done %v, error %v; want done %v and, if not, an error naming %s", tc.name, done, err, tc.done, path)
		}
	}
}

// recordSteps lists the name and step of every record in a unit's JSONL file, one
// "name@step" a line, the file's lines that are not a record as they are.
func recordSteps(t *testing.T, path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		var rec struct {
			Name  string
			Phase string
			Step  int
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			out.WriteString(line + "\n")
			continue
		}
		fmt.Fprintf(&out, "%s%s@%d\n", rec.Name, rec.Phase, rec.Step)
	}
	return out.String()
}
