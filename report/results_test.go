package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// evalNew is eval.json as agentr1 train writes it: sets by name, each before and after RL
// with the baselines, and an evaluation during RL.
const evalNew = `{"rl_steps": 40, "starting_policy": "SFT base",
 "sets": {
  "heldout": {"about": "held-out questions",
   "before_rl": {"name": "sft/heldout", "step": 0, "n": 100, "em": 0.24, "f1": 0.3,
     "groups": {"dataset=world": {"n": 100, "em": 0.24}, "type=bridge": {"n": 60, "em": 0.2}, "type=comparison": {"n": 40, "em": 0.3}}},
   "after_rl": {"name": "rl/heldout", "step": 40, "n": 100, "em": 0.49, "f1": 0.55,
     "groups": {"dataset=world": {"n": 100, "em": 0.49}, "type=bridge": {"n": 60, "em": 0.5}, "type=comparison": {"n": 40, "em": 0.475}}},
   "em_gain": 0.25,
   "baselines": {"base_tool_call": {"n": 100, "em": 0.23, "f1": 0.29}, "naive_rag": {"n": 100, "em": 0.11, "f1": 0.15},
     "closed_book": {"n": 100, "em": 0.02, "f1": 0.04, "groups": {"type=bridge": {"em": 0.01}}}}},
  "unseen": {"about": "a new world",
   "before_rl": {"name": "sft/unseen", "step": 0, "n": 50, "em": 0.1, "f1": 0.12},
   "after_rl": {"name": "rl/unseen", "step": 40, "n": 50, "em": 0.06, "f1": 0.1},
   "em_gain": -0.04,
   "baselines": {"naive_rag": {"n": 50, "em": 0.08, "f1": 0.09}}}},
 "during_rl": [{"name": "rl/heldout", "step": 20, "n": 100, "em": 0.4}, {"name": "rl/unseen", "step": 20, "n": 50, "em": 0.12}]}`

// evalOld is the same run in the earlier layout: "base" and "final" picked from one set,
// every evaluation under "<phase>/<set>", and a history of all of them in the order they ran.
const evalOld = `{"base": {"name": "sft/unseen", "em": 0.1}, "final": {"name": "rl/unseen", "em": 0.06},
 "baselines": {"naive_rag": {"name": "naive-rag/unseen", "em": 0.08}},
 "sets": {
  "sft/heldout": {"name": "sft/heldout", "step": 0, "n": 100, "em": 0.24, "f1": 0.3,
     "groups": {"dataset=world": {"n": 100, "em": 0.24}, "type=bridge": {"n": 60, "em": 0.2}, "type=comparison": {"n": 40, "em": 0.3}}},
  "sft/unseen": {"name": "sft/unseen", "step": 0, "n": 50, "em": 0.1, "f1": 0.12},
  "rl/heldout": {"name": "rl/heldout", "step": 40, "n": 100, "em": 0.49, "f1": 0.55,
     "groups": {"dataset=world": {"n": 100, "em": 0.49}, "type=bridge": {"n": 60, "em": 0.5}, "type=comparison": {"n": 40, "em": 0.475}}},
  "rl/unseen": {"name": "rl/unseen", "step": 40, "n": 50, "em": 0.06, "f1": 0.1},
  "base-tool-call/heldout": {"n": 100, "em": 0.23, "f1": 0.29},
  "naive-rag/heldout": {"n": 100, "em": 0.11, "f1": 0.15},
  "closed-book/heldout": {"n": 100, "em": 0.02, "f1": 0.04, "groups": {"type=bridge": {"em": 0.01}}},
  "naive-rag/unseen": {"n": 50, "em": 0.08, "f1": 0.09}},
 "history": [{"name": "sft/heldout", "step": 0, "em": 0.24}, {"name": "sft/unseen", "step": 0, "em": 0.1},
  {"name": "rl/heldout", "step": 20, "n": 100, "em": 0.4}, {"name": "rl/unseen", "step": 20, "n": 50, "em": 0.12},
  {"name": "rl/heldout", "step": 40, "em": 0.49}, {"name": "rl/unseen", "step": 40, "em": 0.06},
  {"name": "naive-rag/unseen", "step": 0, "em": 0.08}]}`

// TestResultsLayouts: both layouts of eval.json give the same headline table (each set by
// name, EM and F1 before and after RL, the gain, the baselines in the paper's order), the
// same cards naming their set, the same per-type table and the same table during RL.
func TestResultsLayouts(t *testing.T) {
	flat := func(tb tableView) string {
		var rows []string
		for _, r := range tb.Rows {
			rows = append(rows, strings.Join(r, ","))
		}
		return tb.Caption + " | " + strings.Join(tb.Header, ",") + " | " + strings.Join(rows, ";")
	}
	for _, layout := range []struct{ name, json string }{{"current", evalNew}, {"earlier", evalOld}} {
		v, err := parseValue([]byte(layout.json))
		if err != nil {
			t.Fatalf("%s: %v", layout.name, err)
		}
		ev := buildEval(v)
		if ev.Headline == nil || ev.Compare != nil || len(ev.Extra) != 0 {
			t.Fatalf("%s: headline %v, generic tables %v %v; want the headline only", layout.name, ev.Headline, ev.Compare, ev.Extra)
		}
		var rows []string
		for _, r := range ev.Headline.Rows {
			rows = append(rows, strings.Join(append([]string{r.Set, r.N, r.Metric, r.Before, r.After, r.Gain, r.GainClass}, r.Baselines...), ","))
		}
		got := ev.Headline.Start + " | " + strings.Join(ev.Headline.Baselines, ",") + " | " + strings.Join(rows, ";")
		want := "SFT base | Base Tool Call,Naive RAG,closed book | " +
			"held-out,100,EM,0.240,0.490,+0.250,up,0.230,0.110,0.020;held-out,100,F1,0.300,0.550,+0.250,up,0.290,0.150,0.040;" +
			"unseen,50,EM,0.100,0.060,-0.040,down,,0.080,;unseen,50,F1,0.120,0.100,-0.020,down,,0.090,"
		if got != want {
			t.Errorf("%s: headline\n got %q\nwant %q", layout.name, got, want)
		}
		if len(ev.ByType) != 1 {
			t.Fatalf("%s: %d per-type tables, want 1 (the held-out set's)", layout.name, len(ev.ByType))
		}
		if got, want := flat(ev.ByType[0]), "EM by question type: held-out | ,n,SFT base,after RL,gain,Base Tool Call,Naive RAG,closed book | "+
			"bridge,60,0.200,0.500,+0.300,,,0.010;comparison,40,0.300,0.475,+0.175,,,"; got != want {
			t.Errorf("%s: per type\n got %q\nwant %q", layout.name, got, want)
		}
		if ev.During == nil {
			t.Fatalf("%s: no table during RL", layout.name)
		}
		if got, want := flat(*ev.During), "EM during RL (step s: after s RL steps) | step,held-out,unseen | "+
			"0 (SFT base),0.240,0.100;20,0.400,0.120;40 (after RL),0.490,0.060"; got != want {
			t.Errorf("%s: during RL\n got %q\nwant %q", layout.name, got, want)
		}
		cards := summaryCards(&run{Eval: v}, nil)
		var cs []string
		for _, c := range cards {
			cs = append(cs, c.Label+"="+c.Value+" ("+c.Sub+")")
		}
		if got, want := strings.Join(cs, "; "), "held-out: EM gain over the SFT base=+25 points (EM 0.240 → 0.490); unseen: EM gain over the SFT base=-4 points (EM 0.100 → 0.060)"; got != want {
			t.Errorf("%s: cards\n got %q\nwant %q", layout.name, got, want)
		}
	}
}

// TestNamesReadRow: where eval.json has answer sources, a set's headline gains a row of the
// name answers read, for each system that has them (the others, and one with no name answer,
// blank), and the set's first
// row spans it; the page explains it. Without them the table is as before.
func TestNamesReadRow(t *testing.T) {
	sources := func(names, invented int) string {
		return fmt.Sprintf(`, "answer_sources": {"episodes": 100, "names": %d, "in_question": 0, "read": %d, "invented": %d}`, names, names-invented, invented)
	}
	withSources := strings.Replace(evalNew, `"em": 0.24, "f1": 0.3,`, `"em": 0.24, "f1": 0.3`+sources(89, 71)+`,`, 1)
	withSources = strings.Replace(withSources, `"em": 0.49, "f1": 0.55,`, `"em": 0.49, "f1": 0.55`+sources(88, 2)+`,`, 1)
	withSources = strings.Replace(withSources, `"closed_book": {"n": 100, "em": 0.02, "f1": 0.04`, `"closed_book": {"n": 100, "em": 0.02, "f1": 0.04`+sources(90, 85), 1)
	withSources = strings.Replace(withSources, `"naive_rag": {"n": 100, "em": 0.11, "f1": 0.15`, `"naive_rag": {"n": 100, "em": 0.11, "f1": 0.15`+sources(0, 0), 1)
	for _, c := range []struct {
		name, json string
		rows       []string // the headline's rows of names read
	}{
		{"with answer sources", withSources, []string{"held-out,3,names read,18 of 89,86 of 88,,,5 of 90"}},
		{"without", evalNew, nil},
	} {
		v, err := parseValue([]byte(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		h := buildEval(v).Headline
		var rows []string
		for _, r := range h.Rows {
			if r.First && r.Span != 2+len(c.rows) && r.Set == "held-out" {
				t.Errorf("%s: the held-out set's first row spans %d rows, want %d", c.name, r.Span, 2+len(c.rows))
			}
			if r.Metric == "names read" {
				rows = append(rows, strings.Join(append([]string{r.Set, fmt.Sprint(r.Span), r.Metric, r.Before, r.After}, r.Baselines...), ","))
			}
		}
		if strings.Join(rows, ";") != strings.Join(c.rows, ";") || h.NamesRead != (len(c.rows) > 0) {
			t.Errorf("%s: rows of names read %q (NamesRead %v), want %q", c.name, rows, h.NamesRead, c.rows)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, EvalFile), []byte(withSources), 0o644); err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := Render(&page, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<th class="metric">names read</th><td class="num">18 of 89</td>`, "Names read: of the answers that are names"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestYardstickCards: a yardstick puts its spread, in points as the cards' gains, and where
// the run's gain lies against it under the gain of each set it names, and nowhere else.
func TestYardstickCards(t *testing.T) {
	v, err := parseValue([]byte(evalNew))
	if err != nil {
		t.Fatal(err)
	}
	y := &Yardstick{Source: "the default run, seeds 1-5", Gains: map[string]Spread{"heldout": {Mean: 29, SD: 8}}}
	cards := summaryCards(&run{Eval: v}, y)
	if len(cards) != 2 {
		t.Fatalf("%d cards, want 2", len(cards))
	}
	if got, want := cards[0].Note, "the default run, seeds 1-5: +29 ± 8 points; this run is within the seed spread (-0.5 sd)"; got != want {
		t.Errorf("held-out card's note %q, want %q", got, want)
	}
	if cards[1].Note != "" {
		t.Errorf("unseen card has a note %q, but the yardstick has no unseen figure", cards[1].Note)
	}
	var html strings.Builder
	if err := pageTemplate.Execute(&html, &page{Cards: cards}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "seeds 1-5: &#43;29 ± 8 points") {
		t.Error("the page does not show the yardstick")
	}
}

// TestSpreadPlace: a gain more than two standard deviations from the mean is outside the
// spread, on its side; one within two is within it.
func TestSpreadPlace(t *testing.T) {
	s := Spread{Mean: 17, SD: 5}
	for _, c := range []struct {
		g    float64
		want string
	}{
		{17, "is within the seed spread (+0.0 sd)"},
		{7, "is within the seed spread (-2.0 sd)"},
		{6, "is below the seed spread (-2.2 sd)"},
		{0, "is below the seed spread (-3.4 sd)"},
		{28, "is above the seed spread (+2.2 sd)"},
	} {
		if got := s.Place(c.g); got != c.want {
			t.Errorf("Place(%v) = %q, want %q", c.g, got, c.want)
		}
	}
	if got := (Spread{Mean: 3}).Place(3); got != "cannot be placed (no spread)" {
		t.Errorf("no spread: %q", got)
	}
}

// TestSignedPoints: a gain in points is rounded to a whole point and always signed, a gain
// that rounds to nothing as "+0" (never "-0").
func TestSignedPoints(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{18, "+18"}, {-4, "-4"}, {0.4, "+0"}, {-0.4, "+0"}, {0, "+0"}, {29.5, "+30"}, {-12.6, "-13"}} {
		if got := SignedPoints(c.x); got != c.want {
			t.Errorf("SignedPoints(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

// TestToolOutput: the chat template around a tool response is cut, its text kept.
func TestToolOutput(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<|im_end|>\n<|im_start|>user\n<tool_response>\n1. A: b\n2. C: d\n</tool_response><|im_end|>\n<|im_start|>assistant\n", "1. A: b\n2. C: d"},
		{"  plain output \n", "plain output"},
		{"<tool_response>\ncut short", "cut short"},
	} {
		if got := ToolOutput(tc.in); got != tc.want {
			t.Errorf("ToolOutput(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRenderRewardPartsAndGroup: a trajectory's header splits its reward into outcome and
// process parts, its group lists the members' rewards with this one marked, and a tied group
// says its advantages are 0; tool results lose the chat template around them.
func TestRenderRewardPartsAndGroup(t *testing.T) {
	dir := t.TempDir()
	won := demoSample(2, 1.5, 1, "James Cameron")
	won.OutcomeReward, won.ProcessReward, won.Reward = 1, 0.2, 1.2
	won.Group = &Group{ID: 4, Rewards: []float64{0, 1.2, 0, 0}, Member: 1, Mean: 0.3, Std: 0.6, Tied: false}
	won.ToolCalls[0].Result = "<|im_end|>\n<|im_start|>user\n<tool_response>\n1. Titanic: directed by James Cameron.\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	tied := demoSample(2, 0, 0, "nobody")
	tied.Group = &Group{ID: 5, Rewards: []float64{0, 0, 0, 0}, Member: 2, Tied: true}
	if err := WriteSamples(dir+"/"+SamplesFile, []Sample{won, tied}); err != nil {
		t.Fatal(err)
	}
	html := render(t, dir, Options{})
	for _, want := range []string{
		"reward &#43;1.2 = outcome &#43;1 + process &#43;0.2",
		`rewards <span class="chip">0</span><span class="chip self" title="this trajectory">&#43;1.2</span><span class="chip">0</span>`,
		"mean &#43;0.3 · std 0.6",
		"A = &#43;1.5",
		"<strong>tied</strong>: all rewards equal, so every advantage is 0",
		"<pre>1. Titanic: directed by James Cameron.</pre>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(html, "&lt;tool_response&gt;\n1. Titanic") {
		t.Errorf("tool result keeps the chat template")
	}

	// A sample written before the parts were recorded: Reward held the outcome alone, and a
	// process reward sat on a token.
	old := demoSample(1, 0.5, 0, "wrong")
	old.Tokens[len(old.Tokens)/2].Reward = 0.2
	v := viewSample(old, 1)
	if v.Reward != 0.2 || v.OutcomeReward != 0 || v.ProcessReward != 0.2 {
		t.Errorf("earlier sample: reward %v = outcome %v + process %v, want 0.2 = 0 + 0.2", v.Reward, v.OutcomeReward, v.ProcessReward)
	}
}

// TestTrainCards: the train cards give the mean of a window of steps at each end, not one
// step's noisy value, and say so.
func TestTrainCards(t *testing.T) {
	m := &metrics{}
	for i := range 100 {
		em := 0.2
		if i >= 80 {
			em = 0.5
		}
		if i == 99 {
			em = 0.1 // one bad last step does not make the card
		}
		m.Rows = append(m.Rows, metricRow{"step": float64(i + 1), "em": em})
		m.Phase = append(m.Phase, "rl")
	}
	var got []string
	for _, c := range summaryCards(&run{Metrics: m}, nil) {
		got = append(got, c.Label+"="+c.Value+" ("+c.Sub+")")
	}
	want := "RL steps=100 (100 lines in metrics.jsonl); train EM, mean of the last 20 steps=0.48 (first 20 steps 0.2 (sampled))"
	if strings.Join(got, "; ") != want {
		t.Errorf("cards\n got %q\nwant %q", strings.Join(got, "; "), want)
	}
}
