package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toks appends tokens of one role with the masks the paper gives that role: agent tokens
// are trained and carry advantages, prompt and observation tokens neither.
func toks(dst []Token, role string, texts ...string) []Token {
	for _, s := range texts {
		t := Token{Text: s, Role: role}
		if role == RoleAgent {
			t.ActionMask, t.AdvantageMask, t.LogProb = 1, 1, -0.25
		}
		dst = append(dst, t)
	}
	return dst
}

// demoSample is a two-turn trajectory in the paper's ChatML format: think, search, read the
// tool response, answer. The answer text holds HTML that must come out escaped. Advantages
// fall linearly from adv0 over the agent tokens, like a GAE estimate; the outcome reward sits
// on the last agent token.
func demoSample(step int, adv0, reward float64, answer string) Sample {
	var ts []Token
	ts = toks(ts, RolePrompt, "<|im_start|>", "system", "\n", "You", " are", " a", " helpful", " assistant", ".", " Tools", ":", " search", "(query", ")", "<|im_end|>", "\n",
		"<|im_start|>", "user", "\n", "Question", ":", " Who", " directed", " the", " film", " that", " won", " <", "Best", " Picture", ">", " in", " 1998", "?", "<|im_end|>", "\n", "<|im_start|>", "assistant", "\n")
	ts = toks(ts, RoleAgent, "<think>", "I", " should", " search", " first", ".", "</think>", "\n", "<tool_call>", "\n",
		`{"name": "search", "arguments": {"query": "Best Picture 1998"}}`, "\n", "</tool_call>")
	ts = toks(ts, RoleObservation, "<|im_end|>", "\n", "<|im_start|>", "user", "\n", "<tool_response>", "\n",
		"1. Titanic (1997 film): won Best Picture at the 70th Academy Awards; directed by James Cameron.", "\n", "</tool_response>", "<|im_end|>", "\n", "<|im_start|>", "assistant", "\n")
	ts = toks(ts, RoleAgent, "<think>", "The", " tool", " says", " James", " Cameron", ".", "</think>", "\n", "<answer>", answer, "</answer>", "<|im_end|>")
	n, k := 0, 0
	for _, t := range ts {
		if t.Role == RoleAgent {
			n++
		}
	}
	last := 0
	for i := range ts {
		if ts[i].Role == RoleAgent {
			ts[i].Advantage = adv0 * (1 - 0.5*float64(k)/float64(n-1))
			k++
			last = i
		}
	}
	ts[last].Reward = reward
	em := 0.0
	if reward == 1 {
		em = 1
	}
	return Sample{
		Step: step, Split: "train",
		Question: "Who directed the film that won <Best Picture> in 1998?",
		Gold:     []string{"James Cameron", "Cameron & co"},
		Answer:   answer, Reward: reward, EM: em, F1: em,
		Tokens: ts,
		ToolCalls: []ToolCall{{Turn: 0, Name: "search", Arguments: `{"query": "Best Picture 1998"}`,
			Result: "1. Titanic (1997 film): won Best Picture at the 70th Academy Awards; directed by James Cameron."},
			{Turn: 1, Name: "lookup", Arguments: `{"x": 1}`, Error: `unknown tool "lookup" <b>`}},
		Outcome: "answered",
	}
}

// writeRun makes a run directory with every file: three RL steps of metrics, two samples per
// step (one right with a positive advantage, one wrong with a negative one), eval and config.
func writeRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ConfigFile, `{"algo": "grpo", "seed": 1, "optim": {"lr": 1e-6, "betas": [0.9, 0.999]}, "note": "<script>alert('cfg')</script>"}`)
	var m strings.Builder
	for i, em := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&m, `{"step": %d, "reward_mean": %g, "reward_std": 0.2, "em": %g, "format_rate": %g, "approx_kl": %g, "entropy": %g, "response_length": %d, "phase": "rl", "step_time_s": 1.5, "kl_coef": 0.001}`+"\n",
			i+1, em-0.2, em, 0.5+em/2, 0.001*float64(i), 1.2-0.1*float64(i), 100+20*i)
	}
	write(MetricsFile, m.String())
	var samples []Sample
	for step := 1; step <= 3; step++ {
		samples = append(samples,
			demoSample(step, 1.5, 1, "James Cameron"),
			demoSample(step, -0.75, -0.5, `<script>alert("x")</script>`))
	}
	if err := WriteSamples(filepath.Join(dir, SamplesFile), samples); err != nil {
		t.Fatal(err)
	}
	write(EvalFile, `{"base": {"em": 0.1, "f1": 0.2, "n": 50}, "final": {"em": 0.35, "f1": 0.45, "n": 50},
 "baselines": {"naive_rag": {"em": 0.2, "f1": 0.3, "n": 50}, "closed_book": {"em": 0.05, "f1": 0.1, "n": 50}},
 "by_type": {"bridge": {"em": 0.4}, "comparison": {"em": 0.3}}}`)
	return dir
}

// TestWriteDemoPage writes the fixture's page to $REPORT_DEMO_OUT for a person to look at.
func TestWriteDemoPage(t *testing.T) {
	out := os.Getenv("REPORT_DEMO_OUT")
	if out == "" {
		t.Skip("set REPORT_DEMO_OUT=FILE to write the demo page")
	}
	if err := WriteHTML(writeRun(t), out, Options{}); err != nil {
		t.Fatal(err)
	}
}
