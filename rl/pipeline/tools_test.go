package pipeline

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"agentr1/env"
	"agentr1/env/calc"
	"agentr1/env/qa"
	"agentr1/rl/rollout"
	"agentr1/rl/trainer"
)

// TestToolChoice checks that the chosen tools, and only they, are built, listed in both system
// prompts and routed to by name, and that a tool not chosen is an unknown tool to the agent.
func TestToolChoice(t *testing.T) {
	passages := []env.Passage{{ID: "p1", Title: "Kalo", Text: "Kalo was founded in 1921."}}
	for _, c := range []struct {
		tools        string
		want, absent []string // tool names the prompts list / must not list
	}{
		{"search", []string{"search"}, []string{"calculator"}},
		{"calculator", []string{"calculator"}, []string{`"search"`}},
		{"search,calculator", []string{"search", "calculator"}, nil},
	} {
		names, err := env.ParseToolNames(c.tools)
		if err != nil {
			t.Fatal(err)
		}
		tools, err := BuildTools(names, passages, 2, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.tools, err)
		}
		if len(tools) != len(names) {
			t.Errorf("%s: built %d tools", c.tools, len(tools))
		}
		cfg := DefaultConfig()
		cfg.Tools = names
		for _, compact := range []bool{true, false} {
			cfg.CompactPrompt = compact
			e, err := qa.New(cfg.QAConfig(), tools...)
			if err != nil {
				t.Fatalf("%s: %v", c.tools, err)
			}
			for _, n := range c.want {
				if !strings.Contains(e.System(), `"name": "`+n+`"`) {
					t.Errorf("%s, compact %v: system prompt does not list %s:\n%s", c.tools, compact, n, e.System())
				}
			}
			for _, n := range c.absent {
				if strings.Contains(e.System(), n) {
					t.Errorf("%s, compact %v: system prompt names %s:\n%s", c.tools, compact, n, e.System())
				}
			}
		}
		e, _ := qa.New(cfg.QAConfig(), tools...)
		e.Reset(qa.Question{Question: "When was Kalo founded?", Answers: []string{"1921"}})
		step := e.Step(t.Context(), "<think>x</think>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2026 - 1921\"}}\n</tool_call>")
		got := step.Calls[0]
		if names.Has(calc.Name) != (got.Status == env.CallOK && got.Output == "105") {
			t.Errorf("%s: calculator call gave %s %q", c.tools, got.Status, got.Output)
		}
		if !names.Has(calc.Name) && got.Status != env.CallUnknownTool {
			t.Errorf("%s: calculator call is %s, want unknown_tool", c.tools, got.Status)
		}
	}
}

func TestCompactPromptUnchangedForSearch(t *testing.T) {
	for _, names := range []env.ToolNames{nil, {"search"}} {
		if got := compactSystemPrompt(names); got != CompactSystemPrompt {
			t.Errorf("compactSystemPrompt(%v) = %q, want CompactSystemPrompt", names, got)
		}
	}
}

func TestToolsSetting(t *testing.T) {
	c := DefaultConfig()
	c.Tools = env.ToolNames{"search", "abacus"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `unknown tool "abacus"; registered tools: calculator, search`) {
		t.Errorf("Validate with abacus: %v", err)
	}
	c.Tools = env.ToolNames{"search"}
	c.EvalWorld.Numeric = 0.2
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "numeric questions") {
		t.Errorf("Validate with numeric questions and no calculator: %v", err)
	}
	c.Tools = env.ToolNames{"search", "calculator"}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate with numeric questions and the calculator: %v", err)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"Tools":"search,calculator"`) {
		t.Errorf("config.json holds %s", raw)
	}
	var back Config
	if err := json.Unmarshal(raw, &back); err != nil || back.Tools.String() != "search,calculator" {
		t.Errorf("read back Tools %v, %v", back.Tools, err)
	}
	if err := json.Unmarshal([]byte(`{"Tools": "search,,calculator"}`), &back); err == nil || !strings.Contains(err.Error(), "an empty name") {
		t.Errorf("bad Tools in JSON: %v", err)
	}
}

// TestForCalculator checks that a run offered the calculator takes every setting of the
// calculator task it was not given, keeps those it was given, and reports what it set, and
// that a search-only run is left as it is.
func TestForCalculator(t *testing.T) {
	calcTools := env.ToolNames{"search", "calculator"}
	all := []string{"RL.Steps=90", "TrainWorld.Numeric=0.3", "EvalWorld.Numeric=0.3", "OperandRew=0.2",
		"StartStatesAnswer=0.5", "StartStatesAnswerTool=calculator", "SFT.CalcCallWeight=5", "SFT.CalcAnswerWeight=5", "SFT.ChoiceAnswerWeight=5"}
	for _, c := range []struct {
		name  string
		tools env.ToolNames
		given []string // fields the user set, each to givenValue before ForCalculator
		want  []string // what it reports it set
	}{
		{"search alone", env.ToolNames{"search"}, nil, nil},
		{"search alone, numeric set", env.ToolNames{"search"}, []string{"TrainWorld.Numeric"}, nil},
		{"calculator", calcTools, nil, all},
		{"calculator, train share given", env.ToolNames{"calculator", "search"}, []string{"TrainWorld.Numeric"},
			slices.Delete(slices.Clone(all), 1, 2)},
		{"calculator, steps, eval share and rewards given", calcTools, []string{"RL.Steps", "EvalWorld.Numeric", "OperandRew"},
			[]string{"TrainWorld.Numeric=0.3", "StartStatesAnswer=0.5", "StartStatesAnswerTool=calculator", "SFT.CalcCallWeight=5", "SFT.CalcAnswerWeight=5", "SFT.ChoiceAnswerWeight=5"}},
		{"calculator, all given", calcTools, []string{"RL.Steps", "TrainWorld.Numeric", "EvalWorld.Numeric", "OperandRew",
			"StartStatesAnswer", "StartStatesAnswerTool", "SFT.CalcCallWeight", "SFT.CalcAnswerWeight", "SFT.ChoiceAnswerWeight"}, nil},
	} {
		cfg := DefaultConfig()
		cfg.Tools = c.tools
		for _, f := range c.given {
			v := configField(&cfg, f)
			v.Set(givenValue(v))
		}
		before := cfg
		got := cfg.ForCalculator(func(f string) bool { return slices.Contains(c.given, f) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: set %q, want %q", c.name, got, c.want)
		}
		for _, s := range CalculatorTask {
			after, old := configField(&cfg, s.Field), configField(&before, s.Field)
			want := old.Interface() // a given field, or a search-only run's
			if c.tools.Has(calc.Name) && !slices.Contains(c.given, s.Field) {
				want = reflect.ValueOf(s.Value).Convert(after.Type()).Interface()
			}
			if after.Interface() != want {
				t.Errorf("%s: %s = %v, want %v", c.name, s.Field, after.Interface(), want)
			}
			after.Set(old)
		}
		if !reflect.DeepEqual(before, cfg) {
			t.Errorf("%s: ForCalculator changed a field outside CalculatorTask", c.name)
		}
	}
	if NumericShare <= 0 || NumericShare > 1 {
		t.Errorf("NumericShare = %v, want a share in (0, 1]", NumericShare)
	}
}

// configField is the field of c named by its dotted path ("RL.Steps"), settable.
func configField(c *Config, path string) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
	}
	return v
}

// givenValue is a value of v's type that no setting table uses: what a user gave.
func givenValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Float64:
		return reflect.ValueOf(0.45)
	case reflect.Int:
		return reflect.ValueOf(45)
	default:
		return reflect.ValueOf("search").Convert(v.Type())
	}
}

// TestPrepareWithTools checks that Prepare builds the chosen tools for every world and that the
// demonstrations are made with them, whatever their order: their prompts are the training
// prompts and the scripted agent still finds "search".
func TestPrepareWithTools(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Tools = env.ToolNames{"calculator", "search"}
	cfg.CompactPrompt = false
	cfg.RL.MaxLen = 2000
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for k, tools := range append(s.WorldTools, s.EvalTools) {
		if len(tools) != 2 || tools[0].Name() != "calculator" || tools[1].Name() != "search" {
			t.Errorf("tool set %d: %d tools", k, len(tools))
		}
	}
	if s.DemoSummary.Searches == 0 {
		t.Errorf("the scripted agent ran no search: %+v", s.DemoSummary)
	}
	prompt := s.Tokenizer.Decode(s.Demos[0].Prompt)
	if !strings.Contains(prompt, `"name": "calculator"`) || !strings.Contains(prompt, `"name": "search"`) {
		t.Errorf("demonstration prompt does not list both tools:\n%s", prompt)
	}
}

// TestSummarizeTools checks the per-tool evaluation figures, overall and by question type: the
// calculator's use on numeric and on other questions and each tool's error rate.
func TestSummarizeTools(t *testing.T) {
	ep := func(stats map[string]float64) *rollout.Result { return &rollout.Result{Stats: stats} }
	probs := []trainer.Problem{{Type: "year_difference"}, {Type: "year_difference"}, {Type: "bridge"}, {Type: "bridge"}}
	results := []*rollout.Result{
		ep(map[string]float64{"tool_calls/search": 2, "tool_errors/search": 0, "tool_calls/calculator": 1, "tool_errors/calculator": 0}),
		ep(map[string]float64{"tool_calls/search": 2, "tool_errors/search": 1, "tool_calls/calculator": 2, "tool_errors/calculator": 1}),
		ep(map[string]float64{"tool_calls/search": 2, "tool_errors/search": 0}),
		ep(map[string]float64{"tool_calls/search": 1, "tool_errors/search": 0, "tool_calls/calculator": 0, "tool_errors/calculator": 0}),
	}
	m := Summarize("eval", probs, results)
	check := func(where string, got *ToolMetrics, use, calls, errRate float64) {
		t.Helper()
		if got == nil {
			t.Errorf("%s: no figures", where)
			return
		}
		if float64(got.UseRate) != use || float64(got.Calls) != calls || math.Abs(float64(got.ErrorRate)-errRate) > 1e-12 {
			t.Errorf("%s: %+v, want use %v calls %v error rate %v", where, *got, use, calls, errRate)
		}
	}
	check("all/calculator", m.Tools["calculator"], 0.5, 0.75, 1.0/3)
	check("all/search", m.Tools["search"], 1, 1.75, 1.0/7)
	check("numeric/calculator", m.Groups["type=year_difference"].Tools["calculator"], 1, 1.5, 1.0/3)
	if c := m.Groups["type=bridge"].Tools["calculator"]; c != nil {
		t.Errorf("bridge questions: calculator figures %+v, want none (never called)", *c)
	}
}
