package env

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTool is a configurable Tool for the tests.
type fakeTool struct {
	name  string
	calls atomic.Int32
	run   func(ctx context.Context, args map[string]any) (string, error)
}

func (f *fakeTool) Name() string        { return f.name }
func (f *fakeTool) Description() string { return "test tool <" + f.name + ">" }
func (f *fakeTool) Parameters() *Schema {
	return &Schema{Type: "object", Required: []string{"query"}, Properties: map[string]*Schema{"query": {Type: "string"}}}
}
func (f *fakeTool) Call(ctx context.Context, args map[string]any) (string, error) {
	f.calls.Add(1)
	return f.run(ctx, args)
}

// fakeSearch is a PassageTool returning one passage id per call.
type fakeSearch struct{ fakeTool }

func (f *fakeSearch) CallPassages(ctx context.Context, args map[string]any) (string, []string, error) {
	f.calls.Add(1)
	q := args["query"].(string)
	return "Doc 1 (Title: " + q + ") text", []string{"pid-" + q}, nil
}

func call(name, query string) string {
	return "<think>t</think>\n<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": {\"query\": \"" + query + "\"}}\n</tool_call>"
}

func newTestEnv(t *testing.T, cfg Config) (*ToolEnv, map[string]*fakeTool) {
	t.Helper()
	tools := map[string]*fakeTool{
		"echo": {name: "echo", run: func(_ context.Context, a map[string]any) (string, error) { return "echo " + a["query"].(string), nil }},
		"fail": {name: "fail", run: func(context.Context, map[string]any) (string, error) { return "", errors.New("backend down") }},
		"boom": {name: "boom", run: func(context.Context, map[string]any) (string, error) { panic("kaboom") }},
		"slow": {name: "slow", run: func(ctx context.Context, _ map[string]any) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}},
		"stuck": {name: "stuck", run: func(context.Context, map[string]any) (string, error) {
			time.Sleep(300 * time.Millisecond) // ignores its context
			return "late", nil
		}},
		"long": {name: "long", run: func(context.Context, map[string]any) (string, error) { return strings.Repeat("ab", 100), nil }},
	}
	search := &fakeSearch{fakeTool{name: "search"}}
	list := []Tool{search}
	for _, ft := range tools {
		list = append(list, ft)
	}
	tools["search"] = &search.fakeTool
	e, err := NewToolEnv(cfg, list...)
	if err != nil {
		t.Fatal(err)
	}
	return e, tools
}

func TestToolEnvStep(t *testing.T) {
	cfg := Config{MaxTurns: 5, MaxCallsPerTurn: 2, MaxOutputChars: 50, Timeout: 50 * time.Millisecond}
	cases := []struct {
		name      string
		text      string
		done      bool
		statuses  []CallStatus
		outputs   []string // substrings of each call's Output
		format    int
		toolErrs  int
		truncated bool
	}{
		{name: "answer ends the episode", text: "<think>x</think>\n<answer>Paris</answer><|im_end|>", done: true},
		{name: "good call", text: call("echo", "hi"), statuses: []CallStatus{CallOK}, outputs: []string{"echo hi"}},
		{name: "passage tool", text: call("search", "Kalo"), statuses: []CallStatus{CallOK}, outputs: []string{"(Title: Kalo)"}},
		{name: "unknown tool", text: call("wiki", "hi"), statuses: []CallStatus{CallUnknownTool},
			outputs: []string{`Error: unknown tool "wiki"; tools: boom, echo, fail, long, search, slow, stuck`}, format: 1},
		{name: "invalid arguments", text: `<tool_call>{"name": "echo", "arguments": {"q": "hi"}}</tool_call>`,
			statuses: []CallStatus{CallInvalidArgs}, outputs: []string{`Error: invalid arguments for echo: arguments: missing required field "query"`}, format: 1},
		{name: "bad JSON", text: `<tool_call>{"name": "echo"</tool_call>`, statuses: []CallStatus{CallParseError},
			outputs: []string{"Error: tool call is not valid JSON"}, format: 1},
		{name: "unclosed", text: `<tool_call>{"name": "echo"}`, statuses: []CallStatus{CallParseError},
			outputs: []string{"Error: unclosed <tool_call>"}, format: 1},
		{name: "tool error", text: call("fail", "x"), statuses: []CallStatus{CallToolError}, outputs: []string{"Error: backend down"}, toolErrs: 1},
		{name: "tool panic", text: call("boom", "x"), statuses: []CallStatus{CallPanic}, outputs: []string{"Error: boom failed (internal error)"}, toolErrs: 1},
		{name: "timeout", text: call("slow", "x"), statuses: []CallStatus{CallTimeout}, outputs: []string{"Error: slow timed out"}, toolErrs: 1},
		{name: "tool ignoring its context", text: call("stuck", "x"), statuses: []CallStatus{CallTimeout}, outputs: []string{"timed out"}, toolErrs: 1},
		{name: "truncated output", text: call("long", "x"), statuses: []CallStatus{CallOK}, outputs: []string{strings.Repeat("ab", 25) + "...[truncated 150 bytes]"}, truncated: true},
		{name: "huge call", text: "<tool_call>" + padCall(1<<20) + "</tool_call>", statuses: []CallStatus{CallParseError},
			outputs: []string{"Error: tool call too long: 1048576 bytes, at most 16384"}, format: 1},
		{name: "deeply nested call", text: "<tool_call>" + strings.Repeat("[", 10000) + "</tool_call>", statuses: []CallStatus{CallParseError},
			outputs: []string{"Error: tool call nested too deeply"}, format: 1},
		{name: "calls in text order with errors between", text: call("echo", "a") + "<tool_call>[]</tool_call>" + call("echo", "b") + call("echo", "c"),
			statuses: []CallStatus{CallOK, CallParseError, CallOK, CallParseError},
			outputs:  []string{"echo a", "not a JSON object", "echo b", "too many tool calls"}, format: 2},
	}
	for _, c := range cases {
		e, _ := newTestEnv(t, cfg)
		res := e.Step(context.Background(), c.text)
		if res.Done != c.done || e.Done() != c.done {
			t.Errorf("%s: done = %v, want %v", c.name, res.Done, c.done)
		}
		if c.done {
			if res.End != EndNoToolCall || res.Observation != "" {
				t.Errorf("%s: end %v observation %q", c.name, res.End, res.Observation)
			}
			continue
		}
		if len(res.Calls) != len(c.statuses) {
			t.Fatalf("%s: %d records, want %d: %+v", c.name, len(res.Calls), len(c.statuses), res.Calls)
		}
		var outs []string
		for i, rec := range res.Calls {
			if rec.Status != c.statuses[i] {
				t.Errorf("%s: call %d status %v (%s), want %v", c.name, i, rec.Status, rec.Err, c.statuses[i])
			}
			if !strings.Contains(rec.Output, c.outputs[i]) {
				t.Errorf("%s: call %d output %q, want it to contain %q", c.name, i, rec.Output, c.outputs[i])
			}
			if rec.Truncated != c.truncated {
				t.Errorf("%s: call %d truncated = %v", c.name, i, rec.Truncated)
			}
			outs = append(outs, rec.Output)
		}
		if want := ObservationText(outs, false); res.Observation != want {
			t.Errorf("%s: observation %q, want %q", c.name, res.Observation, want)
		}
		if res.ObservationTail != len(ObservationClose) || !strings.HasSuffix(res.Observation, ObservationClose) {
			t.Errorf("%s: observation tail %d bytes, want the %d of ObservationClose ending %q", c.name,
				res.ObservationTail, len(ObservationClose), res.Observation)
		}
		s := e.Stats()
		if s.Turns != 1 || s.ToolCalls != len(c.statuses) || s.FormatErrors != c.format || s.ToolErrors != c.toolErrs {
			t.Errorf("%s: stats %+v, want format %d tool errors %d", c.name, s, c.format, c.toolErrs)
		}
	}
}

func TestToolEnvPassageIDs(t *testing.T) {
	e, _ := newTestEnv(t, DefaultConfig())
	res := e.Step(context.Background(), call("search", "Kalo"))
	if ids := res.Calls[0].PassageIDs; len(ids) != 1 || ids[0] != "pid-Kalo" {
		t.Errorf("passage ids %v, want [pid-Kalo]", ids)
	}
}

func TestObservationText(t *testing.T) {
	got := ObservationText([]string{"a", "b"}, false)
	want := "<|im_end|>\n<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	if got != want {
		t.Errorf("open turn:\n got %q\nwant %q", got, want)
	}
	if got := ObservationText([]string{"a"}, true); !strings.HasPrefix(got, "\n<|im_start|>user\n<tool_response>\na\n") {
		t.Errorf("closed turn: %q", got)
	}
	e, _ := newTestEnv(t, DefaultConfig())
	if res := e.Step(context.Background(), call("echo", "x")+"<|im_end|>"); !strings.HasPrefix(res.Observation, "\n<|im_start|>user") {
		t.Errorf("a turn ending in <|im_end|> got observation %q", res.Observation)
	}
}

func TestToolEnvMaxTurns(t *testing.T) {
	e, tools := newTestEnv(t, Config{MaxTurns: 2, Timeout: time.Second})
	ctx := context.Background()
	if r := e.Step(ctx, call("echo", "1")); r.Done || r.Turn != 1 {
		t.Fatalf("turn 1: %+v", r)
	}
	r := e.Step(ctx, call("echo", "2")+"<tool_call>{</tool_call>")
	if !r.Done || r.End != EndMaxTurns || r.Observation != "" || r.Turn != 2 {
		t.Fatalf("turn 2: done %v end %v observation %q", r.Done, r.End, r.Observation)
	}
	if r.Calls[0].Status != CallNotRun || r.Calls[1].Status != CallParseError {
		t.Errorf("turn 2 statuses %v %v", r.Calls[0].Status, r.Calls[1].Status)
	}
	if n := tools["echo"].calls.Load(); n != 1 {
		t.Errorf("echo ran %d times, want 1 (the cut turn's call must not run)", n)
	}
	if s := e.Stats(); s.Turns != 2 || s.ToolCalls != 3 || s.FormatErrors != 1 {
		t.Errorf("stats %+v", s)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Step after the end did not panic")
			}
		}()
		e.Step(ctx, "x")
	}()
	e.Reset()
	if e.Done() || !reflect.DeepEqual(e.Stats(), Stats{}) {
		t.Errorf("Reset left state: done %v stats %+v", e.Done(), e.Stats())
	}
}

func TestToolEnvCancelled(t *testing.T) {
	e, _ := newTestEnv(t, Config{MaxTurns: 3, Timeout: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := e.Step(ctx, call("slow", "x")); r.Calls[0].Status != CallCancelled {
		t.Errorf("status %v, want cancelled", r.Calls[0].Status)
	}
}

func TestNewToolEnvErrors(t *testing.T) {
	a := &fakeTool{name: "a"}
	bad := &badSchemaTool{fakeTool{name: "bad"}}
	cases := []struct {
		name  string
		cfg   Config
		tools []Tool
		want  string
	}{
		{"duplicate", DefaultConfig(), []Tool{a, a}, `two tools named "a"`},
		{"empty name", DefaultConfig(), []Tool{&fakeTool{}}, "empty name"},
		{"bad schema", DefaultConfig(), []Tool{bad}, `tool "bad": parameters: unknown type "str"`},
		{"no turns", Config{}, []Tool{a}, "MaxTurns = 0"},
	}
	for _, c := range cases {
		_, err := NewToolEnv(c.cfg, c.tools...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

type badSchemaTool struct{ fakeTool }

func (b *badSchemaTool) Parameters() *Schema { return &Schema{Type: "str"} }

func TestRenderTools(t *testing.T) {
	got := RenderTools([]Tool{&fakeTool{name: "echo"}})
	want := "<tools>\n" + `{"type": "function", "function": {"name": "echo", "description": "test tool <echo>", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}` + "\n</tools>"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestPythonJSONSpacing(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":1,"b":[1,2]}`, `{"a": 1, "b": [1, 2]}`},
		{`{"s":"x,y: \"q\", z"}`, `{"s": "x,y: \"q\", z"}`},
		{`{"e":"\\","f":2}`, `{"e": "\\", "f": 2}`},
	}
	for _, c := range cases {
		if got := pythonJSONSpacing([]byte(c.in)); got != c.want {
			t.Errorf("pythonJSONSpacing(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestCutOutput(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 3, "abc...[truncated 3 bytes]"},
		{"abcdef", 0, "...[truncated 6 bytes]"},
		{"aéb", 2, "a...[truncated 3 bytes]"}, // 'é' is 2 bytes: cut before it, not inside
		{"aéb", 3, "aé...[truncated 1 bytes]"},
	}
	for _, c := range cases {
		if got := cutOutput(c.s, c.n); got != c.want {
			t.Errorf("cutOutput(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
