package env

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseToolNames(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{"search", "search", ""},
		{"search,calculator", "search,calculator", ""},
		{" search , calculator ", "search,calculator", ""},
		{"", "", `tools "": an empty name`},
		{"search,", "", `tools "search,": an empty name`},
		{"search,search", "", `"search" given twice`},
	} {
		got, err := ParseToolNames(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseToolNames(%q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("ParseToolNames(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	var n ToolNames
	if err := n.UnmarshalText([]byte("calculator,search")); err != nil || !n.Has("search") || n.Has("echo") {
		t.Errorf("UnmarshalText: %v, %v", n, err)
	}
	if b, _ := n.MarshalText(); string(b) != "calculator,search" {
		t.Errorf("MarshalText = %q", b)
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	echo := func(name string) ToolFactory {
		return func(s ToolSetup) (Tool, error) { return &fakeTool{name: name}, nil }
	}
	if err := r.Register("echo", echo("echo")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, err string }{
		{"echo", `tool "echo" registered twice`},
		{"", `tool name ""`},
		{"a,b", `tool name "a,b"`},
	} {
		if err := r.Register(c.name, echo(c.name)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Register(%q) error = %v, want %q", c.name, err, c.err)
		}
	}
	_ = r.Register("liar", echo("truth"))
	_ = r.Register("broken", func(ToolSetup) (Tool, error) { return nil, errors.New("no index") })
	if got := strings.Join(r.Names(), ","); got != "broken,echo,liar" {
		t.Errorf("Names = %s", got)
	}
	tools, err := r.Build(ToolNames{"echo"}, ToolSetup{})
	if err != nil || len(tools) != 1 || tools[0].Name() != "echo" {
		t.Fatalf("Build(echo) = %v, %v", tools, err)
	}
	for _, c := range []struct {
		names ToolNames
		err   string
	}{
		{nil, "no tools chosen; registered: broken, echo, liar"},
		{ToolNames{"echo", "calc"}, `unknown tool "calc"; registered: broken, echo, liar`},
		{ToolNames{"liar"}, `tool registered as "liar" calls itself "truth"`},
		{ToolNames{"broken"}, `tool "broken": no index`},
	} {
		if _, err := r.Build(c.names, ToolSetup{}); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Build(%v) error = %v, want %q", c.names, err, c.err)
		}
	}
}

// TestProcessRewardHook checks that the hook sees every call record, in text order and after
// the call ran, and that its rewards reach the records and the episode's Stats.
func TestProcessRewardHook(t *testing.T) {
	cfg := DefaultConfig()
	e, _ := newTestEnv(t, cfg)
	var seen []string
	e.SetProcessReward(func(rec *CallRecord) float64 {
		seen = append(seen, rec.Call.Name+":"+rec.Status.String())
		if rec.Status == CallOK && rec.Call.Name == "echo" {
			return 0.25
		}
		return 0
	})
	res := e.Step(context.Background(), call("echo", "a")+call("nope", "b")+call("fail", "c"))
	if got := strings.Join(seen, " "); got != "echo:ok nope:unknown_tool fail:tool_error" {
		t.Errorf("hook saw %q", got)
	}
	if res.Calls[0].ProcessReward != 0.25 || res.Calls[1].ProcessReward != 0 || res.Calls[2].ProcessReward != 0 {
		t.Errorf("rewards %v %v %v, want 0.25 0 0", res.Calls[0].ProcessReward, res.Calls[1].ProcessReward, res.Calls[2].ProcessReward)
	}
	e.Step(context.Background(), call("echo", "d"))
	if got := e.Stats().ProcessReward; got != 0.5 {
		t.Errorf("Stats.ProcessReward = %v, want 0.5", got)
	}
	e.Reset()
	if got := e.Stats().ProcessReward; got != 0 {
		t.Errorf("after Reset Stats.ProcessReward = %v, want 0", got)
	}
}
