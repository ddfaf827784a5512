package pipeline

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"agentr1/env/qa"
	"agentr1/model"
)

// TestCalcStates finds the state before each demonstrated calculation of a tiny calculator
// run: the context ends where the calculating turn begins (after both searches' results) and
// the expression is the one that turn computes; a demonstration whose call is a mistake is
// left out.
func TestCalcStates(t *testing.T) {
	cfg := tinyCalcConfig(t)
	cfg.Demos = 40
	s, p := tinySetupPolicy(t, cfg)
	tok := s.Tokenizer
	states := CalcStates(tok, s.Demos, s.DemoMistakes)
	if len(states) == 0 {
		t.Fatal("no calculating states in 40 demonstrations of a world half numeric")
	}
	for _, st := range states {
		text := tok.Decode(st.Context)
		if !strings.HasSuffix(text, "</tool_response><|im_end|>\n<|im_start|>assistant\n") &&
			!strings.HasSuffix(text, "</tool_response>") {
			t.Errorf("context does not end after a tool response: ...%q", text[max(0, len(text)-80):])
		}
		_, turns, _ := strings.Cut(text, "<|im_start|>assistant\n") // after the prompt, which shows the call format
		if strings.Contains(turns, calculatorCall) {
			t.Errorf("context already holds a calculator call: ...%q", text[max(0, len(text)-200):])
		}
		if strings.Count(st.Expression, " ") != 2 || !strings.ContainsAny(st.Expression, "+-") {
			t.Errorf("expression %q, want \"x op y\"", st.Expression)
		}
	}
	// Marking every turn a mistake leaves no state.
	if n := len(CalcStates(tok, s.Demos, allMistakes(s.DemoMistakes))); n != 0 {
		t.Errorf("%d states from demonstrations whose every turn is a mistake", n)
	}

	// A tiny untrained policy's shares are shares, and a state too long for its context is
	// left out.
	stop := s.Specials.TurnStops()
	st, err := MeasureCalcTurn(context.Background(), p, tok, states, model.Sampler{Temperature: 1}, 2, 8, stop, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.States != len(states) || st.Samples != 2 {
		t.Errorf("measured %d states x %d samples, want %d x 2", st.States, st.Samples, len(states))
	}
	checkShares(t, st, st.Greedy.Calls, st.Greedy.Right, st.Greedy.Twice, st.Greedy.Answers,
		st.Sampled.Calls, st.Sampled.Right, st.Sampled.Twice, st.Sampled.Answers)
	long := []CalcState{{Context: make([]int, p.Config.MaxPositionEmbeddings), Expression: "1 + 2"}}
	if st, _ := MeasureCalcTurn(context.Background(), p, tok, long, model.Sampler{Temperature: 1}, 2, 8, stop, 1); st.States != 0 {
		t.Errorf("a state filling the context was measured: %+v", st)
	}
}

// TestOneNumberTwice tells a calculation on one number twice from every other expression.
func TestOneNumberTwice(t *testing.T) {
	for expr, want := range map[string]bool{
		"1875 - 1875": true, "15 + 15": true, " 7 -  7 ": true,
		"1900 - 1875": false, "15 + 51": false, "1875": false, "": false, " - ": false,
		"1875 * 1875": false, "187 - 1875": false,
	} {
		if got := oneNumberTwice(expr); got != want {
			t.Errorf("oneNumberTwice(%q) = %v, want %v", expr, got, want)
		}
	}
}

// TestAnswerStates finds the state before each demonstrated answer of a calculation's result:
// the context ends with the calculator's response, which holds the result, and the operands are
// the calculation's; a demonstration whose answer is a mistake is left out. A tiny untrained
// policy's shares are shares.
func TestAnswerStates(t *testing.T) {
	cfg := tinyCalcConfig(t)
	cfg.Demos = 40
	s, p := tinySetupPolicy(t, cfg)
	tok := s.Tokenizer
	states := AnswerStates(tok, s.Demos, s.DemoMistakes)
	if len(states) == 0 {
		t.Fatal("no answer states after a calculation in 40 demonstrations of a world half numeric")
	}
	for _, st := range states {
		text := tok.Decode(st.Context)
		last := text[strings.LastIndex(text, "<tool_response>"):]
		if !strings.Contains(last, st.Result) || !strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(text, "<|im_start|>assistant\n")), "</tool_response><|im_end|>") &&
			!strings.HasSuffix(text, "</tool_response>") {
			t.Errorf("context does not end with the calculator's response of %q: ...%q", st.Result, text[max(0, len(text)-120):])
		}
		call := text[strings.LastIndex(text, calculatorCall):]
		if !strings.Contains(call, st.Operands[0]) || !strings.Contains(call, st.Operands[1]) {
			t.Errorf("operands %q not in the last calculator call %q", st.Operands, call)
		}
	}
	if n := len(AnswerStates(tok, s.Demos, allMistakes(s.DemoMistakes))); n != 0 {
		t.Errorf("%d states from demonstrations whose every turn is a mistake", n)
	}

	stop := s.Specials.TurnStops()
	st, err := MeasureAnswerTurn(context.Background(), p, tok, states, model.Sampler{Temperature: 1}, 2, 8, stop, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.States != len(states) || st.Samples != 2 {
		t.Errorf("measured %d states x %d samples, want %d x 2", st.States, st.Samples, len(states))
	}
	checkShares(t, st, st.Greedy.Answers, st.Greedy.Result, st.Greedy.Operand, st.Greedy.Noted,
		st.Sampled.Answers, st.Sampled.Result, st.Sampled.Operand, st.Sampled.Noted)
}

// TestCalcTurnWeights checks that SFTConfig.CalcCallWeight and CalcAnswerWeight scale the
// action weights of exactly the calculating turns CalcStates measures and the answer turns
// AnswerStates measures, on top of MistakeWeight, and of no other turn.
func TestCalcTurnWeights(t *testing.T) {
	cfg := tinyCalcConfig(t)
	cfg.Demos = 40
	s, _ := tinySetupPolicy(t, cfg)
	sft := cfg.SFT
	sft.MistakeWeight, sft.CalcCallWeight, sft.CalcAnswerWeight = 0.5, 3, 5
	plain := mistakeWeights(s.DemoMistakes, sft.MistakeWeight)
	w := actionWeights(s, sft)
	if len(w) != len(s.Demos) {
		t.Fatalf("%d weight lists for %d demonstrations", len(w), len(s.Demos))
	}
	calls, answers := 0, 0
	for i := range w {
		for k := range w[i] {
			switch last := k == len(s.Demos[i].Turns)-1; {
			case w[i][k] == 5*plain[i][k] && last:
				answers++
			case w[i][k] == 3*plain[i][k] && !last:
				calls++
			case w[i][k] != plain[i][k]:
				t.Errorf("demonstration %d turn %d: weight %g, want %g (MistakeWeight alone)", i, k, w[i][k], plain[i][k])
			}
		}
	}
	wantCalls, wantAnswers := len(CalcStates(s.Tokenizer, s.Demos, s.DemoMistakes)), len(AnswerStates(s.Tokenizer, s.Demos, s.DemoMistakes))
	if calls != wantCalls || answers != wantAnswers || wantCalls == 0 || wantAnswers == 0 {
		t.Errorf("%d calculating turns weighted 3 times and %d answer turns 5 times, want the %d calculating states' and the %d answer states'",
			calls, answers, wantCalls, wantAnswers)
	}
	sft.CalcCallWeight, sft.CalcAnswerWeight = 1, 1
	if !reflect.DeepEqual(actionWeights(s, sft), plain) {
		t.Error("CalcCallWeight and CalcAnswerWeight 1 changed the action weights")
	}
}

// TestChoiceAnswerWeight checks that SFTConfig.ChoiceAnswerWeight scales the action weight of
// exactly the answer turns of the demonstrations choosing between two names, on top of
// MistakeWeight: each such answer names one of the two its question offers, and no other turn
// changes.
func TestChoiceAnswerWeight(t *testing.T) {
	cfg := tinyCalcConfig(t)
	cfg.Demos = 40
	s, _ := tinySetupPolicy(t, cfg)
	sft := cfg.SFT
	sft.MistakeWeight, sft.ChoiceAnswerWeight = 0.5, 4
	plain := mistakeWeights(s.DemoMistakes, sft.MistakeWeight)
	w := actionWeights(s, sft)
	choices := 0
	for i := range w {
		for k := range w[i] {
			if w[i][k] == plain[i][k] {
				continue
			}
			last := len(s.Demos[i].Turns) - 1
			if w[i][k] != 4*plain[i][k] || k != last || s.DemoMistakes[i][k] {
				t.Errorf("demonstration %d turn %d of %d: weight %g, want %g (MistakeWeight alone)", i, k, last+1, w[i][k], plain[i][k])
				continue
			}
			choices++
			answer, _ := qa.CheckAnswerTurn(s.Tokenizer.Decode(s.Demos[i].Turns[k].Action), false)
			prompt := s.Tokenizer.Decode(s.Demos[i].Before(0))
			if answer == "" || !(strings.Contains(prompt, ", "+answer+" or ") || strings.Contains(prompt, " or "+answer+"?")) {
				t.Errorf("demonstration %d: weighted answer %q is not an option of its question:\n%s", i, answer, prompt)
			}
		}
	}
	if choices == 0 {
		t.Error("no answer turn weighted: the demonstrations hold no question choosing between two names?")
	}
	sft.ChoiceAnswerWeight = 1
	if !reflect.DeepEqual(actionWeights(s, sft), plain) {
		t.Error("ChoiceAnswerWeight 1 changed the action weights")
	}
}

// TestAnswerSharesCount sorts answer turns after the calculation "1838 - 1405" (433): the
// result, an operand, another number, and a turn that calls a tool instead.
func TestAnswerSharesCount(t *testing.T) {
	s := AnswerState{Result: "433", Operands: [2]string{"1838", "1405"}}
	for _, c := range []struct {
		turn string
		want AnswerShares
	}{
		{"<think>Derol was founded in 1405. 1838 - 1405 is 433.</think>\n<answer>433</answer>", AnswerShares{1, 1, 0, 1}},
		{"<think>Derol was founded in 1405. Buni Kusi was born in 1838.</think>\n<answer>1838</answer>", AnswerShares{1, 0, 1, 0}},
		{"<think>It is 4,330.</think>\n<answer>433 years</answer>", AnswerShares{1, 1, 0, 0}},
		{"<think>I need 1838 - 1405.</think>\n<answer>1,405</answer>", AnswerShares{1, 0, 1, 0}},
		{"<think>433 is the difference.</think>\n<answer>434</answer>", AnswerShares{1, 0, 0, 1}},
		{"<think>I need 1838 - 1405.</think>\n<tool_call>\n{\"name\": \"calculator\"}\n</tool_call>", AnswerShares{}},
	} {
		var got AnswerShares
		got.count(c.turn, s)
		if got != c.want {
			t.Errorf("%q: %+v, want %+v", c.turn, got, c.want)
		}
	}
}

// allMistakes marks every turn of demonstrations shaped as mistakes a mistake.
func allMistakes(mistakes [][]bool) [][]bool {
	all := make([][]bool, len(mistakes))
	for i, m := range mistakes {
		all[i] = make([]bool, len(m))
		for k := range all[i] {
			all[i][k] = true
		}
	}
	return all
}

// checkShares fails the test for any share outside [0, 1], printing the stats st.
func checkShares(t *testing.T, st any, shares ...float64) {
	t.Helper()
	for _, v := range shares {
		if v < 0 || v > 1 {
			t.Errorf("share %v out of [0, 1]: %+v", v, st)
		}
	}
}

// TestWeakAnswerTurn checks the verdict on both sides of its threshold, and that a run of the
// calculator task warns before RL of its warm start's answer turn, here an untrained one's,
// while a run without the calculator does not measure it.
func TestWeakAnswerTurn(t *testing.T) {
	if msg := weakAnswerTurn(20, AnswerShares{Answers: 1, Result: .7}); msg != "" {
		t.Errorf("warned of a warm start answering the result from 14 of 20 states: %s", msg)
	}
	if msg := weakAnswerTurn(0, AnswerShares{}); msg != "" {
		t.Errorf("warned with no state measured: %s", msg)
	}
	msg := weakAnswerTurn(20, AnswerShares{Answers: 1, Result: .25, Operand: .5})
	if !strings.Contains(msg, "from 5 of 20") || !strings.Contains(msg, "an operand from 10") {
		t.Errorf("warning %q does not give the counts (the result from 5 of 20, an operand from 10)", msg)
	}

	for _, c := range []struct {
		name string
		cfg  Config
		warn bool
	}{{"calculator", tinyCalcConfig(t), true}, {"search", tinyConfig(t), false}} {
		cfg := c.cfg
		cfg.RL.Steps = 1
		if c.warn {
			cfg.Demos = 40 // TestAnswerStates finds answer states among them
		}
		var warned []string
		res, err := Run(context.Background(), cfg, false, func(kind string, rec any) {
			if s, ok := rec.(string); ok && kind == "warn" && strings.Contains(s, "answer turn") {
				warned = append(warned, s)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(warned) > 0; got != c.warn {
			t.Errorf("%s run: warned of the answer turn %v (%q), want %v", c.name, got, warned, c.warn)
		}
		for _, msg := range warned {
			if !slices.Contains(res.WarmStart, msg) {
				t.Errorf("%s run: Result.WarmStart %q lacks the warning %q, for the summary to repeat", c.name, res.WarmStart, msg)
			}
		}
	}
}
