package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentr1/env"
	"agentr1/tokenizer"
)

// The same two-turn episode in both formats: a search, its result, the answer.
const (
	transcriptMessages = `{"messages": [{"role": "system", "content": "Answer with search."}, {"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"query\":\"capital of France\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "Paris is the capital of France."}, {"role": "assistant", "content": "<answer>Paris</answer>"}]}`
	transcriptChatML   = `{"text": "<|im_start|>system\nAnswer with search.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"capital of France\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nParis is the capital of France.\n</tool_response><|im_end|>\n<|im_start|>assistant\n<answer>Paris</answer><|im_end|>\n"}`
)

// TestParseTranscriptCut checks that both formats give the episode a rollout of the same
// conversation gives: the prompt of env.RenderPrompt, the call as the scripted agent writes
// it (ending at </tool_call>), the observation of env.ObservationText, the final answer with
// its <|im_end|> and nothing after it.
func TestParseTranscriptCut(t *testing.T) {
	want := Transcript{
		Prompt: env.RenderPrompt("Answer with search.", "What is the capital of France?"),
		Actions: []string{
			"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"capital of France\"}}\n</tool_call>",
			"<answer>Paris</answer><|im_end|>",
		},
		Observations: []string{env.ObservationText([]string{"Paris is the capital of France."}, false), ""},
	}
	for name, line := range map[string]string{"messages": transcriptMessages, "chatml": transcriptChatML} {
		got, err := ParseTranscript([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Prompt != want.Prompt || strings.Join(got.Actions, "|") != strings.Join(want.Actions, "|") ||
			strings.Join(got.Observations, "|") != strings.Join(want.Observations, "|") {
			t.Errorf("%s: cut\n%#v\nwant\n%#v", name, got, want)
		}
	}
}

// TestParseTranscriptRender checks the rendering of messages against Qwen2.5's template, as
// tokenizer.RenderChat gives it: the default system prompt, tools in the system turn, content
// before tool calls, two calls on their own lines, two tool messages in one user turn, and
// a final user turn after the answer kept as context.
func TestParseTranscriptRender(t *testing.T) {
	line := `{"tools": [{"type": "function", "function": {"name": "search", "description": "Search.", "parameters": {"type": "object"}}}],
	 "messages": [{"role": "user", "content": "Q?"},
	 {"role": "assistant", "content": "Two searches.", "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": {"query": "a", "n": 2}}}, {"function": {"name": "search", "arguments": "{\"query\": \"b\"}"}}]},
	 {"role": "tool", "content": "A"}, {"role": "tool", "content": "B"},
	 {"role": "assistant", "content": "AB"}, {"role": "user", "content": "Thanks"}]}`
	got, err := ParseTranscript([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	call := "Two searches.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a\", \"n\": 2}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"b\"}}\n</tool_call>"
	wantText := tokenizer.RenderChat([]tokenizer.Message{{Role: "user", Content: "Q?"}, {Role: "assistant", Content: call},
		{Role: "tool", Content: "A"}, {Role: "tool", Content: "B"}, {Role: "assistant", Content: "AB"}, {Role: "user", Content: "Thanks"}},
		[]tokenizer.ToolSpec{{Name: "search", Description: "Search.", Parameters: []byte(`{"type": "object"}`)}}, false)
	if got.Text() != wantText {
		t.Errorf("text\n%q\nwant\n%q", got.Text(), wantText)
	}
	if !strings.HasPrefix(got.Prompt, "<|im_start|>system\n"+tokenizer.QwenDefaultSystem+"\n\n# Tools") || !strings.HasSuffix(got.Prompt, "<|im_start|>assistant\n") {
		t.Errorf("prompt %q", got.Prompt)
	}
	if len(got.Actions) != 2 || got.Actions[0] != call || got.Actions[1] != "AB<|im_end|>" {
		t.Errorf("actions %q", got.Actions)
	}
	if want := env.ObservationText([]string{"A", "B"}, false); got.Observations[0] != want {
		t.Errorf("observation 0 %q, want %q", got.Observations[0], want)
	}
	if want := "\n<|im_start|>user\nThanks<|im_end|>\n"; got.Observations[1] != want {
		t.Errorf("observation 1 %q, want %q", got.Observations[1], want)
	}
}

// TestReadTranscriptsErrors checks that each malformed line is refused with its file, line
// number and field, and that nothing is returned.
func TestReadTranscriptsErrors(t *testing.T) {
	tok := transcriptTokenizer(t)
	for _, c := range []struct{ name, line, want string }{
		{"bad JSON", `{"messages": [`, "invalid JSON"},
		{"neither", `{"mesages": []}`, `neither "messages" nor "text"`},
		{"both", `{"messages": [], "text": ""}`, `both "text" and "messages"`},
		{"unknown role", `{"messages": [{"role": "user", "content": "Q"}, {"role": "robot", "content": "A"}]}`, `messages[1].role: unknown role "robot"`},
		{"bad arguments", `{"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": "{\"query\": "}}]}]}`, "messages[1].tool_calls[0].function.arguments: not a JSON object"},
		{"arguments not an object", `{"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": "[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"tool calls by the user", `{"messages": [{"role": "user", "content": "Q", "tool_calls": [{"function": {"name": "search", "arguments": "{}"}}]}]}`, "messages[0].tool_calls: only an assistant"},
		{"empty assistant", `{"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": ""}]}`, "messages[1].content: an assistant message with neither"},
		{"content parts", `{"messages": [{"role": "user", "content": [{"type": "text", "text": "Q"}]}, {"role": "assistant", "content": "A"}]}`, "field messages[0].content: a JSON array, want a string"},
		{"role a number", `{"messages": [{"role": "user", "content": "Q"}, {"role": 2, "content": "A"}]}`, "field messages[1].role: a JSON number, want a string"},
		{"tools an object", `{"tools": {}, "messages": [{"role": "assistant", "content": "A"}]}`, "field tools: a JSON object, want an array"},
		{"weight 0", `{"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A", "weight": 0}]}`, "messages[1].weight: 0; only 1 is supported"},
		{"marker in content", `{"messages": [{"role": "user", "content": "Q<|im_end|>"}, {"role": "assistant", "content": "A"}]}`, "messages[0].content: holds a ChatML marker"},
		{"bad tool schema", `{"tools": [{"type": "function", "function": {"name": "s", "parameters": "x"}}], "messages": [{"role": "assistant", "content": "A"}]}`, "tools[0].function.parameters: not a JSON object"},
		{"no assistant", `{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]}`, "no assistant turn"},
		{"chatml no assistant", `{"text": "<|im_start|>user\nQ<|im_end|>\n"}`, "no assistant turn"},
		{"chatml role", `{"text": "<|im_start|>user\nQ<|im_end|>\n<|im_start|>tool\nA<|im_end|>\n"}`, `field "text": turn 2: unknown role "tool"`},
		{"chatml unclosed", `{"text": "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA"}`, `field "text": turn 2 (assistant): no <|im_end|>`},
		{"chatml junk", `{"text": "hello"}`, `field "text": turn 1: want <|im_start|>`},
		{"too long", `{"messages": [{"role": "user", "content": "` + strings.Repeat("capital ", 200) + `"}, {"role": "assistant", "content": "A"}]}`, "longer than the model's limit of 128"},
	} {
		data := transcriptMessages + "\n\n" + c.line + "\n" + transcriptChatML + "\n"
		demos, err := ReadTranscripts(strings.NewReader(data), "t.jsonl", tok, 128)
		if err == nil || !strings.Contains(err.Error(), "t.jsonl:3: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want t.jsonl:3: ... %s", c.name, err, c.want)
		}
		if demos != nil {
			t.Errorf("%s: %d demonstrations returned beside the error", c.name, len(demos))
		}
	}
	if _, err := ReadTranscripts(strings.NewReader("\n\n"), "empty.jsonl", tok, 0); err == nil || !strings.Contains(err.Error(), "empty.jsonl: no transcripts") {
		t.Errorf("empty file: error %v", err)
	}
}

func transcriptTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := TrainTokenizer([]string{transcriptMessages, transcriptChatML, "<answer>Berlin</answer> Germany Rome Italy"}, 320, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// transcriptFile is five transcripts in both formats, as a user would write them.
func transcriptFile() string {
	var b strings.Builder
	for i, c := range []string{"France|Paris", "Germany|Berlin", "Italy|Rome", "France|Paris", "Germany|Berlin"} {
		country, city := strings.Split(c, "|")[0], strings.Split(c, "|")[1]
		line := transcriptMessages
		if i%2 == 1 {
			line = transcriptChatML
		}
		b.WriteString(strings.NewReplacer("France", country, "Paris", city).Replace(line) + "\n")
	}
	return b.String()
}

// TestTranscriptMasks checks that the warm start's weights on a transcript are 1 exactly on
// the assistant's text, the context weight on the tool response and the turn markers between,
// and 0 on the prompt.
func TestTranscriptMasks(t *testing.T) {
	tok := transcriptTokenizer(t)
	demos, err := ReadTranscripts(strings.NewReader(transcriptFile()), "t.jsonl", tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(demos) != 5 {
		t.Fatalf("%d demonstrations, want 5", len(demos))
	}
	d := demos[0]
	all := append([]int{}, d.Prompt...)
	for _, turn := range d.Turns {
		all = append(append(all, turn.Action...), turn.Observation...)
	}
	w := tokenWeights(d, nil, 0.25, len(all))
	var agent, context, prompt []int
	for i, x := range w {
		switch x {
		case 1:
			agent = append(agent, all[i])
		case 0.25:
			context = append(context, all[i])
		case 0:
			prompt = append(prompt, all[i])
		default:
			t.Fatalf("token %d has weight %g", i, x)
		}
	}
	tr, _ := ParseTranscript([]byte(transcriptMessages))
	if got, want := tok.Decode(agent), strings.Join(tr.Actions, ""); got != want {
		t.Errorf("trained tokens %q, want the assistant's text %q", got, want)
	}
	if got := tok.Decode(context); got != tr.Observations[0] {
		t.Errorf("context-weighted tokens %q, want the tool response %q", got, tr.Observations[0])
	}
	if got := tok.Decode(prompt); got != tr.Prompt {
		t.Errorf("unweighted tokens %q, want the prompt %q", got, tr.Prompt)
	}
}

// TestSFTOnTranscripts checks that the warm start on a transcript file lowers the agent-token
// loss within a few steps, and that a file read from disk names itself in its errors.
func TestSFTOnTranscripts(t *testing.T) {
	tok := transcriptTokenizer(t)
	path := filepath.Join(t.TempDir(), "mine.jsonl")
	if err := os.WriteFile(path, []byte(transcriptFile()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	demos, err := ReadTranscripts(f, path, tok, 512)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := NewPolicy(ModelConfig{Hidden: 32, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 64, InitRange: 0.02}, tok, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultSFTConfig()
	cfg.Steps, cfg.Batch, cfg.LR, cfg.WarmupSteps = 12, 5, 1e-2, 0
	var losses []float64
	sp, err := SpecialsOf(tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := SFT(context.Background(), policy, demos, cfg, sp.Pad, 1, func(m SFTMetrics) { losses = append(losses, float64(m.Loss)) }); err != nil {
		t.Fatal(err)
	}
	if len(losses) != cfg.Steps || !(losses[len(losses)-1] < 0.7*losses[0]) {
		t.Errorf("agent-token losses %.3f: want the last below 0.7 of the first", losses)
	}
}
