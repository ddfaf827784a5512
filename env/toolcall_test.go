package env

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseToolCalls(t *testing.T) {
	q := `{"name": "search", "arguments": {"query": "x"}}`
	args := map[string]any{"query": "x"}
	cases := []struct {
		name  string
		text  string
		limit int
		calls []string // names of the well-formed calls, in order
		errs  []ParseErrorKind
	}{
		{"no call", "<think>hi</think>\n<answer>x</answer>", 0, nil, nil},
		{"one call, Qwen layout", "<think>a</think>\n<tool_call>\n" + q + "\n</tool_call>", 0, []string{"search"}, nil},
		{"tight", "<tool_call>" + q + "</tool_call>", 0, []string{"search"}, nil},
		{"whitespace, CRLF, tabs", "<tool_call> \r\n\t" + q + " \t\r\n </tool_call>", 0, []string{"search"}, nil},
		{"arguments as a JSON string", `<tool_call>{"name": "search", "arguments": "{\"query\": \"x\"}"}</tool_call>`, 0, []string{"search"}, nil},
		{"arguments absent", `<tool_call>{"name": "search"}</tool_call>`, 0, []string{"search"}, nil},
		{"arguments null", `<tool_call>{"name": "search", "arguments": null}</tool_call>`, 0, []string{"search"}, nil},
		{"extra field ignored", `<tool_call>{"id": 3, "name": "search", "arguments": {}}</tool_call>`, 0, []string{"search"}, nil},
		{"two calls", "<tool_call>" + q + "</tool_call>\n<tool_call>" + strings.Replace(q, "search", "lookup", 1) + "</tool_call>", 0, []string{"search", "lookup"}, nil},
		{"limit", strings.Repeat("<tool_call>"+q+"</tool_call>", 3), 2, []string{"search", "search"}, []ParseErrorKind{ErrTooManyCalls}},
		{"unclosed", "<tool_call>\n" + q, 0, nil, []ParseErrorKind{ErrUnclosed}},
		{"unclosed after a good call", "<tool_call>" + q + "</tool_call><tool_call>" + q, 0, []string{"search"}, []ParseErrorKind{ErrUnclosed}},
		{"only open tag", "<tool_call>", 0, nil, []ParseErrorKind{ErrUnclosed}},
		{"stray close", q + "</tool_call>", 0, nil, []ParseErrorKind{ErrUnopened}},
		{"close before open", "</tool_call><tool_call>" + q + "</tool_call>", 0, []string{"search"}, []ParseErrorKind{ErrUnopened}},
		{"nested", "<tool_call><tool_call>" + q + "</tool_call></tool_call>", 0, nil, []ParseErrorKind{ErrNested}},
		{"nested unclosed", "<tool_call><tool_call>" + q + "</tool_call>", 0, nil, []ParseErrorKind{ErrUnclosed}},
		{"empty", "<tool_call>\n \n</tool_call>", 0, nil, []ParseErrorKind{ErrEmpty}},
		{"bad JSON", `<tool_call>{"name": "search", "arguments": {"query": "x"}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadJSON}},
		{"single quotes", `<tool_call>{'name': 'search'}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadJSON}},
		{"prose instead of JSON", `<tool_call>search for x</tool_call>`, 0, nil, []ParseErrorKind{ErrBadJSON}},
		{"code fence", "<tool_call>```json\n" + q + "\n```</tool_call>", 0, nil, []ParseErrorKind{ErrBadJSON}},
		{"truncated JSON", `<tool_call>{"name": "sea</tool_call>`, 0, nil, []ParseErrorKind{ErrBadJSON}},
		{"extra text after JSON", "<tool_call>" + q + " thanks</tool_call>", 0, nil, []ParseErrorKind{ErrExtraText}},
		{"two objects", "<tool_call>" + q + q + "</tool_call>", 0, nil, []ParseErrorKind{ErrExtraText}},
		{"array", `<tool_call>[` + q + `]</tool_call>`, 0, nil, []ParseErrorKind{ErrNotObject}},
		{"string", `<tool_call>"search"</tool_call>`, 0, nil, []ParseErrorKind{ErrNotObject}},
		{"number", `<tool_call>42</tool_call>`, 0, nil, []ParseErrorKind{ErrNotObject}},
		{"null", `<tool_call>null</tool_call>`, 0, nil, []ParseErrorKind{ErrNotObject}},
		{"missing name", `<tool_call>{"arguments": {"query": "x"}}</tool_call>`, 0, nil, []ParseErrorKind{ErrMissingName}},
		{"name not a string", `<tool_call>{"name": 3, "arguments": {}}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadName}},
		{"empty name", `<tool_call>{"name": " ", "arguments": {}}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadName}},
		{"arguments an array", `<tool_call>{"name": "search", "arguments": ["x"]}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadArguments}},
		{"arguments a number", `<tool_call>{"name": "search", "arguments": 1}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadArguments}},
		{"arguments a plain string", `<tool_call>{"name": "search", "arguments": "x"}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadArguments}},
		{"arguments a string holding an array", `<tool_call>{"name": "search", "arguments": "[1]"}</tool_call>`, 0, nil, []ParseErrorKind{ErrBadArguments}},
		{"bad then good", "<tool_call>{</tool_call>\n<tool_call>" + q + "</tool_call>", 0, []string{"search"}, []ParseErrorKind{ErrBadJSON}},
		{"misspelt tag", "<toolcall>" + q + "</toolcall>", 0, nil, nil},
		{"invalid UTF-8", "<tool_call>\xff\xfe</tool_call>", 0, nil, []ParseErrorKind{ErrBadJSON}},
		// Bounds: MaxCallBytes between the tags, MaxCallDepth levels of nesting.
		{"at the size limit", "<tool_call>" + padCall(MaxCallBytes) + "</tool_call>", 0, []string{"pad"}, nil},
		{"one byte over the size limit", "<tool_call>" + padCall(MaxCallBytes+1) + "</tool_call>", 0, nil, []ParseErrorKind{ErrTooLong}},
		{"huge call then a good one", "<tool_call>" + padCall(1<<20) + "</tool_call><tool_call>" + q + "</tool_call>", 0,
			[]string{"search"}, []ParseErrorKind{ErrTooLong}},
		{"at the depth limit", "<tool_call>" + deepCall(MaxCallDepth, false) + "</tool_call>", 0, []string{"deep"}, nil},
		{"one level over the depth limit", "<tool_call>" + deepCall(MaxCallDepth+1, false) + "</tool_call>", 0, nil, []ParseErrorKind{ErrTooDeep}},
		{"deep garbage", "<tool_call>" + strings.Repeat("[", 5000) + "</tool_call>", 0, nil, []ParseErrorKind{ErrTooDeep}},
		{"brackets inside strings do not count", `<tool_call>{"name": "deep", "arguments": {"q": "` + strings.Repeat("[{", 100) + `\"]"}}</tool_call>`, 0,
			[]string{"deep"}, nil},
		{"string-held arguments at the depth limit", "<tool_call>" + deepCall(MaxCallDepth, true) + "</tool_call>", 0, []string{"deep"}, nil},
		{"string-held arguments over the depth limit", "<tool_call>" + deepCall(MaxCallDepth+1, true) + "</tool_call>", 0, nil, []ParseErrorKind{ErrBadArguments}},
	}
	for _, c := range cases {
		calls, errs := ParseToolCalls(c.text, c.limit)
		var names []string
		for _, call := range calls {
			names = append(names, call.Name)
			if call.Arguments == nil {
				t.Errorf("%s: nil Arguments", c.name)
			}
			if got := c.text[call.Start:call.End]; !strings.HasPrefix(got, ToolCallOpen) || !strings.HasSuffix(got, ToolCallClose) {
				t.Errorf("%s: span %q is not a tagged call", c.name, got)
			}
		}
		var kinds []ParseErrorKind
		for _, e := range errs {
			kinds = append(kinds, e.Kind)
			if e.Error() == "" || e.Offset < 0 || e.Offset > len(c.text) {
				t.Errorf("%s: error %+v has no message or a bad offset", c.name, e)
			}
		}
		if !reflect.DeepEqual(names, c.calls) {
			t.Errorf("%s: calls %v, want %v", c.name, names, c.calls)
		}
		if !reflect.DeepEqual(kinds, c.errs) {
			t.Errorf("%s: errors %v, want %v", c.name, kinds, c.errs)
		}
		if len(calls) > 0 && calls[0].Name == "search" && len(calls[0].Arguments) > 0 && !reflect.DeepEqual(calls[0].Arguments, args) {
			t.Errorf("%s: arguments %v, want %v", c.name, calls[0].Arguments, args)
		}
	}
}

// padCall returns a well-formed call named "pad" of exactly n bytes (n >= 40).
func padCall(n int) string {
	head, tail := `{"name": "pad", "arguments": {"q": "`, `"}}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// deepCall returns a well-formed call named "deep" whose JSON nests depth levels of objects
// and arrays (the call object is level 1, the arguments object level 2); inString puts the
// arguments in a JSON string, where they count from level 1 again.
func deepCall(depth int, inString bool) string {
	if inString {
		args := `{"a": ` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}"
		return `{"name": "deep", "arguments": "` + strings.ReplaceAll(args, `"`, `\"`) + `"}`
	}
	return `{"name": "deep", "arguments": {"a": ` + strings.Repeat("[", depth-2) + strings.Repeat("]", depth-2) + "}}"
}

func TestParseErrorMessagesNameTheLimit(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"size", "<tool_call>" + padCall(MaxCallBytes+10) + "</tool_call>", "tool call too long: 16394 bytes, at most 16384"},
		{"depth", "<tool_call>" + deepCall(40, false) + "</tool_call>", "tool call nested too deeply: more than 32 levels of objects and arrays"},
		{"string-held depth", "<tool_call>" + deepCall(40, true) + "</tool_call>",
			`"arguments" must be a JSON object: a string holding more than 32 levels of objects and arrays`},
	}
	for _, c := range cases {
		_, errs := ParseToolCalls(c.text, 0)
		if len(errs) != 1 || errs[0].Error() != c.want {
			t.Errorf("%s: errors %v, want one reading %q", c.name, errs, c.want)
		}
	}
}

// TestParseToolCallsNeverPanics cuts a valid turn at every byte and splices tags into it.
func TestParseToolCallsNeverPanics(t *testing.T) {
	text := "<think>é</think>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"ü\"}}\n</tool_call><tool_call>"
	for i := 0; i <= len(text); i++ {
		for _, s := range []string{"", ToolCallOpen, ToolCallClose, "{", "\""} {
			ParseToolCalls(text[:i]+s+text[i:], 1)
		}
	}
}

// TestParseToolCallsLinear parses a turn of 200,000 stray closing tags followed by 50,000
// calls (4 MB). Searching the rest of the text for the next tag at every tag, as a naive
// parser does, takes about 5*10^11 byte comparisons here (minutes); one pass takes well under
// a second alone. The bound only separates the two: a loaded machine cannot fail it.
func TestParseToolCallsLinear(t *testing.T) {
	text := strings.Repeat(ToolCallClose, 200000) + strings.Repeat(`<tool_call>{"name": "s"}</tool_call>`, 50000)
	start := time.Now()
	calls, errs := ParseToolCalls(text, 0)
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("parsing %d bytes took %v: is the parser quadratic again?", len(text), took)
	}
	if len(calls) != 50000 || len(errs) != 200000 {
		t.Errorf("%d calls and %d errors, want 50000 and 200000", len(calls), len(errs))
	}
}
