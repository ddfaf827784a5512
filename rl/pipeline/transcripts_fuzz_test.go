package pipeline

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"agentr1/env"
)

// FuzzReadTranscripts feeds ReadTranscripts arbitrary files and checks: no panic; an error
// starts "t.jsonl:N: " with N a non-blank line (or is "t.jsonl: no transcripts" exactly when
// every line is blank) and nothing is returned beside it; on success one demonstration per
// non-blank line, each with at least one non-empty action, and each line's cut ChatML text
// (Transcript.Text) begins with its prompt, which ends by opening the assistant's turn.
func FuzzReadTranscripts(f *testing.F) {
	f.Add([]byte(transcriptMessages + "\n" + transcriptChatML + "\n"))
	f.Add([]byte(transcriptFile()))
	f.Add([]byte("\n  \n"))
	f.Add([]byte(`{"messages": [{"role": "assistant", "content": "A", "tool_calls": [{"function": {"name": "s", "arguments": "{\"a\": [1, {\"b\": null}]}"}}]}]}`))
	f.Add([]byte(`{"tools": [{"type": "function", "function": {"name": "s", "parameters": {"type": "object", "properties": {}}}}], "messages": [{"role": "assistant", "content": "A"}]}`))
	f.Add([]byte(`{"text": "<|im_start|>assistant\n<tool_call>\n{}\n</tool_call><|im_end|>"}`))
	f.Add([]byte(`{"text": "<|im_start|>user\nQ<|im_end|><|im_start|>assistant\nA<|im_end|>"}`))
	tok := transcriptTokenizer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		demos, err := ReadTranscripts(bytes.NewReader(data), "t.jsonl", tok, 0)
		var nonBlank []int // line numbers, from 1
		for i, line := range strings.Split(string(data), "\n") {
			if len(bytes.TrimSpace([]byte(line))) > 0 {
				nonBlank = append(nonBlank, i+1)
			}
		}
		if err != nil {
			if demos != nil {
				t.Fatalf("%d demonstrations beside the error %v", len(demos), err)
			}
			msg := err.Error()
			if len(nonBlank) == 0 {
				if msg != "t.jsonl: no transcripts" {
					t.Fatalf("blank file: error %q", msg)
				}
				return
			}
			n, _, ok := strings.Cut(strings.TrimPrefix(msg, "t.jsonl:"), ": ")
			line, convErr := strconv.Atoi(n)
			if !strings.HasPrefix(msg, "t.jsonl:") || !ok || convErr != nil || !containsInt(nonBlank, line) {
				t.Fatalf("error %q does not start with t.jsonl:N: for a non-blank line N (non-blank lines %v)", msg, nonBlank)
			}
			return
		}
		if len(demos) != len(nonBlank) {
			t.Fatalf("%d demonstrations from %d non-blank lines", len(demos), len(nonBlank))
		}
		for i, d := range demos {
			if len(d.Turns) == 0 || len(d.Turns[0].Action) == 0 {
				t.Fatalf("demonstration %d has no action", i)
			}
		}
		for _, line := range strings.Split(string(data), "\n") {
			if len(bytes.TrimSpace([]byte(line))) == 0 {
				continue
			}
			tr, err := ParseTranscript(bytes.TrimSpace([]byte(line)))
			if err != nil {
				t.Fatalf("ReadTranscripts took a line ParseTranscript refuses: %v", err)
			}
			if !strings.HasSuffix(tr.Prompt, env.ImStart+"assistant\n") || !strings.HasPrefix(tr.Text(), tr.Prompt) {
				t.Fatalf("prompt %q does not open the assistant's turn", tr.Prompt)
			}
			for _, a := range tr.Actions {
				if a == "" {
					t.Fatalf("empty action in %q", tr.Actions)
				}
			}
		}
	})
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
