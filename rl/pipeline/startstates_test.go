package pipeline

import (
	"context"
	"slices"
	"strings"
	"testing"

	"agentr1/rl/trainer"
)

// TestStartStates builds a tiny calculator run with a third of its RL set start states: they
// are at most that share of Train, each prompt is an RL question's prompt followed by the
// scripted agent's turns, ending after a tool response, and an episode replays those turns,
// so that the right answer written next earns the full reward.
func TestStartStates(t *testing.T) {
	cfg := tinyCalcConfig(t)
	cfg.RL.MaxLen = 1000
	cfg.StartStates = 0
	base, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StartStates = 1.0 / 3
	s, err := Prepare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := len(base.Train)
	if s.StartStates == 0 || len(s.Train) != n+s.StartStates || s.StartStates > startCount(cfg.StartStates, n) {
		t.Fatalf("%d start states in a set of %d (questions %d); want about %d", s.StartStates, len(s.Train), n, startCount(cfg.StartStates, n))
	}
	if !strings.Contains(s.Describe(), "start states") {
		t.Errorf("Describe does not count the start states: %s", s.Describe())
	}
	numeric := numericTypes(s)
	calcs := 0
	for _, p := range s.Train[n:] {
		text := s.Tokenizer.Decode(p.Prompt)
		if !strings.HasSuffix(text, "</tool_response><|im_end|>\n<|im_start|>assistant\n") {
			t.Fatalf("start state does not end after a tool response: ...%q", text[max(0, len(text)-120):])
		}
		// The same question's own problem: its prompt begins the state's.
		var own *trainer.Problem
		for i := range base.Train {
			if q := s.Tokenizer.Decode(base.Train[i].Prompt); strings.HasPrefix(text, q) && base.Train[i].Type == p.Type {
				own = &base.Train[i]
				break
			}
		}
		if own == nil {
			t.Fatalf("no RL question begins the start state %q", text[:min(len(text), 300)])
		}
		// Answering right from the state earns the full reward, the replayed turns' format
		// and searches counting as the episode's own.
		ep := p.NewEpisode()
		if numeric[p.Type] {
			calcs++
		}
		tr, err := ep.Step(context.Background(), "<think>x</think>\n<answer>"+p.Answers[0]+"</answer><|im_end|>")
		if err != nil || !tr.Done {
			t.Fatalf("answer turn: %+v, %v", tr, err)
		}
		out := ep.Finish(false)
		if out.Reward != 1 || out.Stats[trainer.StatEM] != 1 {
			t.Errorf("the right answer from a start state scored %+v", out)
		}
		if out.Stats[trainer.StatSearches] < 1 {
			t.Errorf("the replayed searches are not in the episode: %+v", out.Stats)
		}
	}
	if calcs == 0 {
		t.Errorf("no start state of a numeric question among %d", s.StartStates)
	}
	cfg.StartStates = 1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "StartStates") {
		t.Errorf("StartStates 1: error %v, want one naming the field", err)
	}
}

// TestStartStatesAnswer moves a share of the start states one step on, before the answer turn:
// on a numeric question such a state ends with the calculator's result, the asked number, and
// answering it earns the full reward; at share 0 no state ends so, at 1 every numeric one
// does, at 0.5 some do and some do not.
func TestStartStatesAnswer(t *testing.T) {
	for _, share := range []float64{0, 0.5, 1} {
		cfg := tinyCalcConfig(t)
		cfg.RL.MaxLen = 1000
		cfg.StartStates, cfg.StartStatesAnswer = 1.0/3, share
		s, err := Prepare(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		numericType := numericTypes(s)
		numeric, calculated := 0, 0
		for _, p := range s.Train[len(s.Train)-s.StartStates:] {
			if !numericType[p.Type] {
				continue
			}
			numeric++
			// A state before the calculation ends with a search's passages; one after it, with
			// the calculator's result.
			if text := s.Tokenizer.Decode(p.Prompt); !strings.HasSuffix(text, "<tool_response>\n"+p.Answers[0]+"\n</tool_response><|im_end|>\n<|im_start|>assistant\n") {
				continue
			}
			calculated++
			ep := p.NewEpisode()
			if _, err := ep.Step(context.Background(), "<think>x</think>\n<answer>"+p.Answers[0]+"</answer><|im_end|>"); err != nil {
				t.Fatal(err)
			}
			if out := ep.Finish(false); out.Stats[trainer.StatEM] != 1 || out.Reward < 1 {
				t.Errorf("share %v: the right answer after the calculation scored %+v", share, out)
			}
		}
		switch {
		case numeric == 0:
			t.Fatalf("share %v: no start state of a numeric question", share)
		case share == 0 && calculated != 0, share == 1 && calculated != numeric, share == 0.5 && (calculated == 0 || calculated == numeric):
			t.Errorf("share %v: %d of %d numeric start states end with the calculator's result", share, calculated, numeric)
		}
	}
	cfg := tinyCalcConfig(t)
	cfg.StartStatesAnswer = 1.5
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "StartStatesAnswer") {
		t.Errorf("StartStatesAnswer 1.5: error %v, want one naming the field", err)
	}
}

// TestStartStatesAnswerTool lets only the states whose last call is to the calculator begin at
// the answer turn: at share 1 every numeric start state ends with the calculator's result, and
// every other is the state before its last call, as at share 0.
func TestStartStatesAnswerTool(t *testing.T) {
	prompts := func(share float64, tool string) (s *Setup, numeric, other []string) {
		cfg := tinyCalcConfig(t)
		cfg.RL.MaxLen = 1000
		cfg.StartStates, cfg.StartStatesAnswer, cfg.StartStatesAnswerTool = 1.0/3, share, tool
		s, err := Prepare(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		numericType := numericTypes(s)
		for _, p := range s.Train[len(s.Train)-s.StartStates:] {
			text := s.Tokenizer.Decode(p.Prompt)
			if numericType[p.Type] {
				if !strings.HasSuffix(text, "<tool_response>\n"+p.Answers[0]+"\n</tool_response><|im_end|>\n<|im_start|>assistant\n") {
					text = "" // not after the calculation
				}
				numeric = append(numeric, text)
			} else {
				other = append(other, text)
			}
		}
		return s, numeric, other
	}
	_, _, before := prompts(0, "")
	_, _, anyTool := prompts(1, "")
	_, numeric, other := prompts(1, "calculator")
	if len(numeric) == 0 || len(other) == 0 {
		t.Fatalf("%d numeric and %d other start states, want some of each", len(numeric), len(other))
	}
	if i := slices.Index(numeric, ""); i >= 0 {
		t.Errorf("numeric start state %d does not end with the calculator's result", i)
	}
	if !slices.Equal(other, before) {
		t.Errorf("the %d other start states are not the %d states before the last call", len(other), len(before))
	}
	if slices.Equal(anyTool, before) {
		t.Errorf("with any tool at share 1 the other start states are those before the last call: the test cannot tell them apart")
	}
	cfg := tinyConfig(t)
	cfg.StartStatesAnswerTool = "calculator"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "StartStatesAnswerTool") {
		t.Errorf("StartStatesAnswerTool of a tool not offered: error %v, want one naming the field", err)
	}
}

// numericTypes is the set of the question types that s's training worlds mark numeric
// (qa.Question.Numeric).
func numericTypes(s *Setup) map[string]bool {
	types := map[string]bool{}
	for _, w := range s.Worlds {
		for _, task := range w.Tasks {
			if task.Numeric {
				types[task.Type] = true
			}
		}
	}
	return types
}

// TestStartCount: s start states make up share of n + s.
func TestStartCount(t *testing.T) {
	for _, c := range []struct {
		share float64
		n     int
		want  int
	}{{0, 100, 0}, {0.5, 100, 100}, {0.2, 100, 25}, {0.3, 13900, 5957}} {
		if got := startCount(c.share, c.n); got != c.want {
			t.Errorf("startCount(%v, %d) = %d, want %d", c.share, c.n, got, c.want)
		}
	}
}
