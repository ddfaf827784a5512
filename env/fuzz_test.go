package env

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseToolCalls checks that no text makes the parser panic, return overlapping or
// out-of-range calls, exceed its call limit or accept a call over MaxCallBytes or
// MaxCallDepth, or drop a tag silently. Run longer with
// `go test -fuzz FuzzParseToolCalls ./env/`.
func FuzzParseToolCalls(f *testing.F) {
	f.Add("<think>x</think>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}\n</tool_call>", 2)
	f.Add("<tool_call><tool_call>{}</tool_call>", 1)
	f.Add("</tool_call><tool_call>{\"name\": \"s\", \"arguments\": \"{\\\"q\\\": 1}\"}</tool_call>", 0)
	f.Add("<tool_call>[1, 2]</tool_call><tool_call>", 3)
	f.Add("<tool_call>"+strings.Repeat("[", 40)+"</tool_call>", 1)
	f.Add(`<tool_call>{"name": "s", "arguments": "{\"a\": `+strings.Repeat("[", 40)+`"}</tool_call>`, 1)
	f.Add(`<tool_call>{"name": "s", "arguments": {"q": "[[[[\"]]"}}</tool_call>`, 1)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		calls, errs := ParseToolCalls(text, limit)
		if limit > 0 && len(calls) > limit {
			t.Fatalf("%d calls, limit %d", len(calls), limit)
		}
		prevEnd := 0
		for _, c := range calls {
			if c.Start < prevEnd || c.End > len(text) || c.Start >= c.End {
				t.Fatalf("call span [%d, %d) after %d in %d bytes", c.Start, c.End, prevEnd, len(text))
			}
			if !strings.HasPrefix(text[c.Start:], ToolCallOpen) || !strings.HasSuffix(text[:c.End], ToolCallClose) {
				t.Fatalf("span %q is not a tagged call", text[c.Start:c.End])
			}
			if c.Name == "" || c.Arguments == nil {
				t.Fatalf("call %+v has no name or nil arguments", c)
			}
			body := text[c.Start+len(ToolCallOpen) : c.End-len(ToolCallClose)]
			if len(body) > MaxCallBytes || jsonDepth(body) > MaxCallDepth {
				t.Fatalf("call of %d bytes, depth %d accepted (limits %d, %d)", len(body), jsonDepth(body), MaxCallBytes, MaxCallDepth)
			}
			prevEnd = c.End
		}
		for _, e := range errs {
			if e.Offset < 0 || e.Offset > len(text) || e.Error() == "" {
				t.Fatalf("bad error %+v", e)
			}
		}
		if strings.Contains(text, ToolCallOpen) || strings.Contains(text, ToolCallClose) {
			if len(calls)+len(errs) == 0 {
				t.Fatalf("tags in %q but neither calls nor errors", text)
			}
		}
	})
}

// FuzzValidate checks that no JSON value makes the validator panic.
func FuzzValidate(f *testing.F) {
	f.Add(`{"query": "x", "topk": 3, "ids": [1, "a"], "filter": {"year": 1.5}}`)
	f.Add(`[null, true]`)
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		_ = testSchema.Validate(v)
	})
}
