package qa

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"agentr1/env"
)

func TestNormalizeAnswer(t *testing.T) {
	cases := []struct{ in, want string }{
		{"The Cat", "cat"},
		{"  a  Tale   of Two Cities. ", "tale of two cities"},
		{"U.S.A.", "usa"},
		{"It's", "its"},
		{"1,000", "1000"},
		{"A", ""},
		{"Anne and the anthem", "anne and anthem"},
		{"an_apple", "anapple"},
		{"the–end", "–end"}, // en dash is not ASCII punctuation but is a word boundary
		{"thé", "thé"},      // é is a word character: no article here
		{"Théâtre", "théâtre"},
		{"\tNew\nYork\u00a0City", "new york city"},
		{"(the) [a] {an}", ""},
		{"", ""},
	}
	for _, c := range cases {
		if got := NormalizeAnswer(c.in); got != c.want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestExactMatchAndF1(t *testing.T) {
	cases := []struct {
		name   string
		pred   string
		golds  []string
		em, f1 float64
	}{
		{"exact", "Paris", []string{"Paris"}, 1, 1},
		{"normalised", "the  paris.", []string{"Paris"}, 1, 1},
		{"alias", "NYC", []string{"New York City", "NYC"}, 1, 1},
		{"partial", "Gian Carlo Menotti", []string{"Menotti"}, 0, 0.5},
		{"partial recall", "the cat sat", []string{"cat sat on mat"}, 0, 2.0 / 3},
		{"best alias for F1", "cat sat", []string{"dog", "cat sat on mat"}, 0, 2.0 / 3},
		{"yes vs no", "yes", []string{"no"}, 0, 0},
		{"yes", "Yes", []string{"yes"}, 1, 1},
		{"yes inside a longer gold", "yes", []string{"yes it is"}, 0, 0},
		{"repeated tokens count once each", "x b b", []string{"b c"}, 0, 0.4},
		{"empty prediction", "", []string{"Paris"}, 0, 0},
		{"no golds", "Paris", nil, 0, 0},
	}
	for _, c := range cases {
		if em := ExactMatch(c.pred, c.golds); em != c.em {
			t.Errorf("%s: EM = %v, want %v", c.name, em, c.em)
		}
		if f1 := F1(c.pred, c.golds); math.Abs(f1-c.f1) > 1e-12 {
			t.Errorf("%s: F1 = %v, want %v", c.name, f1, c.f1)
		}
	}
}

func TestEq6(t *testing.T) {
	cases := []struct {
		answerOK, toolOK bool
		em               float64
		reward, format   float64
	}{
		{true, true, 1, 1, 1},
		{true, true, 0, 0, 1},
		{true, false, 1, -0.5, 0.5},
		{false, true, 1, -0.5, 0.5},
		{false, true, 0, -0.5, 0.5},
		{false, false, 1, -1, 0},
	}
	for _, c := range cases {
		r, f := Eq6(c.answerOK, c.toolOK, c.em)
		if r != c.reward || f != c.format {
			t.Errorf("Eq6(%v, %v, %v) = %v, %v; want %v, %v", c.answerOK, c.toolOK, c.em, r, f, c.reward, c.format)
		}
	}
}

func TestCheckTurns(t *testing.T) {
	answers := []struct {
		name         string
		text         string
		requireThink bool
		answer       string
		ok           bool
	}{
		{"canonical", "<think>x</think>\n<answer>Paris</answer><|im_end|>", true, "Paris", true},
		{"trailing newline", "<think>x</think>\n<answer> Paris </answer>\n", true, "Paris", true},
		{"no think", "<answer>Paris</answer>", true, "Paris", false},
		{"no think allowed", "<answer>Paris</answer>", false, "Paris", true},
		{"text after", "<think>x</think><answer>Paris</answer> done", true, "Paris", false},
		{"text before", "So <think>x</think><answer>Paris</answer>", true, "Paris", false},
		{"two answers", "<think>x</think><answer>A</answer><answer>B</answer>", true, "B", false},
		{"unclosed answer", "<think>x</think><answer>Paris", true, "", false},
		{"nested think", "<think><think>x</think></think><answer>P</answer>", true, "P", false},
		{"tool call inside", "<think>x</think><tool_call>{}</tool_call><answer>P</answer>", true, "P", false},
		{"nothing", "", true, "", false},
	}
	for _, c := range answers {
		a, ok := CheckAnswerTurn(c.text, c.requireThink)
		if a != c.answer || ok != c.ok {
			t.Errorf("answer turn %s: (%q, %v), want (%q, %v)", c.name, a, ok, c.answer, c.ok)
		}
	}
	tools := []struct {
		name         string
		text         string
		requireThink bool
		ok           bool
	}{
		{"canonical", "<think>x</think>\n<tool_call>\n{}\n</tool_call>", true, true},
		{"two calls", "<think>x</think>\n<tool_call>{}</tool_call>\n<tool_call>{}</tool_call>", true, true},
		{"no think", "<tool_call>{}</tool_call>", true, false},
		{"no think allowed", "<tool_call>{}</tool_call>", false, true},
		{"prose before", "Let me search <think>x</think><tool_call>{}</tool_call>", true, false},
		{"answer too", "<think>x</think><answer>a</answer><tool_call>{}</tool_call>", true, false},
	}
	for _, c := range tools {
		if ok := CheckToolTurn(c.text, c.requireThink); ok != c.ok {
			t.Errorf("tool turn %s: %v, want %v", c.name, ok, c.ok)
		}
	}
}

// lookup is a PassageTool finding the passage whose title equals the query.
type lookup struct{ passages []env.Passage }

func (l *lookup) Name() string        { return "search" }
func (l *lookup) Description() string { return "title lookup" }
func (l *lookup) Parameters() *env.Schema {
	return &env.Schema{Type: "object", Required: []string{"query"}, Properties: map[string]*env.Schema{"query": {Type: "string"}}}
}
func (l *lookup) Call(ctx context.Context, args map[string]any) (string, error) {
	s, _, err := l.CallPassages(ctx, args)
	return s, err
}
func (l *lookup) CallPassages(_ context.Context, args map[string]any) (string, []string, error) {
	q := args["query"].(string)
	for _, p := range l.passages {
		if strings.EqualFold(p.Title, q) {
			return "Doc 1 (Title: \"" + p.Title + "\") " + p.Text, []string{p.ID}, nil
		}
	}
	return "No results found.", nil, nil
}

func search(q string) string {
	return "<think>look up " + q + "</think>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"" + q + "\"}}\n</tool_call>"
}

func answer(a string) string { return "<think>done</think>\n<answer>" + a + "</answer><|im_end|>" }

func TestEpisodes(t *testing.T) {
	tool := &lookup{passages: []env.Passage{
		{ID: "p1", Title: "Maria Golovin", Text: "Maria Golovin is an opera by Gian Carlo Menotti."},
		{ID: "p2", Title: "Gian Carlo Menotti", Text: "Menotti was born in Italy."},
		{ID: "p3", Title: "Other", Text: "Nothing."},
	}}
	q := Question{ID: "q", Question: "Where was the composer of Maria Golovin born?", Answers: []string{"Italy"},
		SupportingPIDs: []string{"p1", "p2"}}
	cases := []struct {
		name    string
		turns   []string
		reward  float64
		em      float64
		process float64
		cut     bool
	}{
		{"two searches, right", []string{search("Maria Golovin"), search("Gian Carlo Menotti"), answer("italy")}, 1, 1, 0.2, false},
		{"repeated search pays once", []string{search("Maria Golovin"), search("Maria Golovin"), answer("Italy")}, 1, 1, 0.1, false},
		{"distractor search pays nothing", []string{search("Other"), answer("Italy")}, 1, 1, 0, false},
		{"wrong answer", []string{search("Maria Golovin"), answer("France")}, 0, 0, 0.1, false},
		{"closed book, right", []string{answer("Italy")}, 1, 1, 0, false},
		{"answer without think", []string{search("Maria Golovin"), "<answer>Italy</answer>"}, -0.5, 1, 0.1, false},
		{"malformed call, then right", []string{"<think>x</think>\n<tool_call>{\"name\": search}</tool_call>", answer("Italy")}, -0.5, 1, 0, false},
		{"unknown tool", []string{"<think>x</think><tool_call>{\"name\": \"wiki\", \"arguments\": {}}</tool_call>", answer("Italy")}, -0.5, 1, 0, false},
		{"invalid arguments", []string{"<think>x</think><tool_call>{\"name\": \"search\", \"arguments\": {\"q\": 1}}</tool_call>", answer("Italy")}, -0.5, 1, 0, false},
		{"both formats broken", []string{"<tool_call>{</tool_call>", "Italy"}, -1, 0, 0, false},
		{"cut at max turns", []string{search("Other"), search("Other"), search("Other")}, -0.5, 0, 0, true},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.Env.MaxTurns = 3
		cfg.ProcessReward = 0.1
		e, err := New(cfg, tool)
		if err != nil {
			t.Fatal(err)
		}
		prompt := e.Reset(q)
		if !strings.HasPrefix(prompt, "<|im_start|>system\nAnswer the question.") ||
			!strings.HasSuffix(prompt, "<|im_start|>user\nQuestion: "+q.Question+"<|im_end|>\n<|im_start|>assistant\n") {
			t.Fatalf("%s: prompt %q", c.name, prompt)
		}
		proc := 0.0
		for i, turn := range c.turns {
			if e.Done() {
				t.Fatalf("%s: done before turn %d", c.name, i)
			}
			s := e.Step(context.Background(), turn)
			for _, r := range s.ProcessRewards {
				proc += r
			}
		}
		if !e.Done() {
			t.Fatalf("%s: episode not done", c.name)
		}
		s := e.Score()
		if s.Reward != c.reward || s.EM != c.em || math.Abs(s.ProcessReward-c.process) > 1e-12 ||
			math.Abs(proc-c.process) > 1e-12 || s.CutMaxTurns != c.cut {
			t.Errorf("%s: score %+v (step process rewards %v); want reward %v em %v process %v cut %v",
				c.name, s, proc, c.reward, c.em, c.process, c.cut)
		}
	}
}

// echo is a tool that returns its argument: a calculator whose every result is given.
type echo struct{}

func (echo) Name() string        { return "calculator" }
func (echo) Description() string { return "returns the expression" }
func (echo) Parameters() *env.Schema {
	return &env.Schema{Type: "object", Required: []string{"expression"}, Properties: map[string]*env.Schema{"expression": {Type: "string"}}}
}
func (echo) Call(_ context.Context, args map[string]any) (string, error) {
	return args["expression"].(string), nil
}

func calculate(x string) string {
	return "<think>work it out</think>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"" + x + "\"}}\n</tool_call>"
}

// rewardCase is one episode of a process-reward test: the turns played on q and the process
// reward the episode must earn.
type rewardCase struct {
	name    string
	q       Question
	turns   []string
	process float64
}

// kuleSearch is the one-passage search of the process-reward tests.
func kuleSearch() *lookup {
	return &lookup{passages: []env.Passage{{ID: "p1", Title: "Kule", Text: "Kule was founded in 1173."}}}
}

// play resets e to q, plays turns and returns the last step.
func play(e *Env, q Question, turns []string) Step {
	e.Reset(q)
	var s Step
	for _, turn := range turns {
		s = e.Step(context.Background(), turn)
	}
	return s
}

// checkProcessRewards plays each case in an environment of cfg offering the Kule search and
// the echoing calculator, and checks the process reward its episode earns.
func checkProcessRewards(t *testing.T, cfg Config, cases []rewardCase) {
	t.Helper()
	e, err := New(cfg, kuleSearch(), echo{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		play(e, c.q, c.turns)
		if got := e.Score().ProcessReward; math.Abs(got-c.process) > 1e-12 {
			t.Errorf("%s: process reward %v, want %v", c.name, got, c.process)
		}
	}
}

// checkUnpaid checks that an environment of cfg pays no process reward at all, and installs
// no hook, for turns played on q.
func checkUnpaid(t *testing.T, cfg Config, q Question, turns []string) {
	t.Helper()
	e, err := New(cfg, kuleSearch(), echo{})
	if err != nil {
		t.Fatal(err)
	}
	if s := play(e, q, turns); e.Score().ProcessReward != 0 || len(s.ProcessRewards) != 0 {
		t.Errorf("%v paid %v", turns, e.Score().ProcessReward)
	}
}

// named is a question whose answer is a name, for the process-reward tests.
var named = Question{ID: "s", Question: "What is the capital of Y?", Answers: []string{"Kule"}}

// TestAnswerReward pays Config.AnswerReward once, for the first tool call whose whole result
// is an answer, by the rule the outcome uses (numeric questions compare numbers), beside the
// supporting-passage reward.
func TestAnswerReward(t *testing.T) {
	numeric := Question{ID: "n", Question: "How many years after Kule was founded was X born?", Answers: []string{"719"},
		SupportingPIDs: []string{"p1"}, Numeric: true}
	cfg := DefaultConfig()
	cfg.ProcessReward = 0.1
	cfg.AnswerReward = 0.3
	checkProcessRewards(t, cfg, []rewardCase{
		{"the answer, once", numeric, []string{search("Kule"), calculate("719"), answer("719")}, 0.1 + 0.3},
		{"as a number", numeric, []string{calculate("719.0"), answer("719")}, 0.3},
		{"paid once per episode", numeric, []string{calculate("719"), calculate("719"), answer("719")}, 0.3},
		{"a wrong result", numeric, []string{calculate("718"), answer("718")}, 0},
		{"a result that only begins with it", numeric, []string{calculate("719 years"), answer("719")}, 0},
		{"a passage is not a result", named, []string{search("Kule"), answer("Kule")}, 0},
		{"a named answer", named, []string{calculate("kule"), answer("Kule")}, 0.3},
	})
	// Off by default: the same calculation pays nothing.
	checkUnpaid(t, DefaultConfig(), numeric, []string{calculate("719"), answer("719")})
}

// TestOperandReward pays Config.OperandReward once, for the episode's first calculator call
// that runs, by the share of the question's operands its expression holds, beside the
// supporting-passage reward.
func TestOperandReward(t *testing.T) {
	numeric := Question{ID: "n", Question: "How many years after Kule was founded was X born?", Answers: []string{"719"},
		SupportingPIDs: []string{"p1"}, Numeric: true, Operands: []string{"1892", "1173"}}
	cfg := DefaultConfig()
	cfg.ProcessReward = 0.1
	cfg.OperandReward = 0.4
	// One environment plays every case in turn, so each also checks that Reset starts the
	// episode's reward afresh.
	checkProcessRewards(t, cfg, []rewardCase{
		{"both operands", numeric, []string{search("Kule"), calculate("1892 - 1173"), answer("719")}, 0.1 + 0.4},
		{"in either order", numeric, []string{calculate("1173 - 1892"), answer("719")}, 0.4},
		{"as decimals", numeric, []string{calculate("(1892.0 - 1173)"), answer("719")}, 0.4},
		{"one number twice", numeric, []string{calculate("1173 - 1173"), answer("0")}, 0.2},
		{"numbers not read", numeric, []string{calculate("1893 - 11730"), answer("0")}, 0},
		{"the first call only", numeric, []string{calculate("1173 - 1173"), calculate("1892 - 1173"), answer("719")}, 0.2},
		{"a malformed call does not count", numeric, []string{"<think>x</think>\n<tool_call>\n{\"name\": \"calculator\"}\n</tool_call>", calculate("1892 - 1173"), answer("719")}, 0.4},
		{"a search is not a calculation", numeric, []string{search("1892 1173"), answer("719")}, 0},
		{"no operands, no reward", named, []string{calculate("1892 - 1173"), answer("Kule")}, 0},
	})
	checkUnpaid(t, DefaultConfig(), numeric, []string{calculate("1892 - 1173"), answer("719")})
}

// TestScoreUnfinished scores an episode the rollout cut at its token budget, before any
// answer: the answer format fails, so Eq. 6 gives -0.5 however good the searches were.
func TestScoreUnfinished(t *testing.T) {
	tool := &lookup{passages: []env.Passage{{ID: "p1", Title: "A", Text: "A is B."}}}
	e, err := New(DefaultConfig(), tool)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(Question{ID: "q", Question: "What is A?", Answers: []string{"B"}})
	e.Step(context.Background(), search("A"))
	s := e.Score()
	if e.Done() || s.Reward != -0.5 || s.AnswerFormatOK || !s.ToolSyntaxOK || s.CutMaxTurns || s.Searches != 1 || s.Turns != 1 {
		t.Errorf("unfinished episode scored %+v", s)
	}
}

func TestNumericMatch(t *testing.T) {
	for _, c := range []struct {
		pred string
		gold []string
		want float64
	}{
		{"73", []string{"73"}, 1},
		{"73.0", []string{"73"}, 1},
		{" 73 years", []string{"73"}, 1},
		{"1,921", []string{"1921"}, 1},
		{"73.", []string{"73"}, 1},
		{"0.333333", []string{"0.3333333"}, 1},
		{"74", []string{"73"}, 0},
		{"-73", []string{"73"}, 0},
		{"seventy-three", []string{"73"}, 0},
		{"", []string{"73"}, 0},
		{"inf", []string{"inf"}, 0},
		{"73", []string{"Kalo", "73"}, 1},
	} {
		if got := NumericMatch(c.pred, c.gold); got != c.want {
			t.Errorf("NumericMatch(%q, %q) = %v, want %v", c.pred, c.gold, got, c.want)
		}
	}
}

// TestNumbers finds the decimal numbers of a text in order, a sentence's full stop and words
// apart, and a comma splitting a number.
func TestNumbers(t *testing.T) {
	for text, want := range map[string][]string{
		"1838 - 1405 is 433.":   {"1838", "1405", "433"},
		"It is 4,330 or 12.5.":  {"4", "330", "12.5"},
		"No number here":        nil,
		"r2d2 rose 0.75 points": {"2", "2", "0.75"},
	} {
		if got := Numbers(text); !slices.Equal(got, want) {
			t.Errorf("Numbers(%q) = %q, want %q", text, got, want)
		}
	}
}
