package search

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestToolCallPassages(t *testing.T) {
	ix, err := Build(smallCorpus(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	tool := NewTool(ix, 2)
	if tool.Name() != "search" || !strings.Contains(tool.Description(), "2 most relevant") {
		t.Errorf("Name %q, Description %q", tool.Name(), tool.Description())
	}
	schema, err := json.Marshal(tool.Parameters())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"object","properties":{"query":{"type":"string","description":"The search query, e.g. an entity name or a question."}},"required":["query"]}`; string(schema) != want {
		t.Errorf("Parameters = %s, want %s", schema, want)
	}

	text, ids, err := tool.CallPassages(context.Background(), map[string]any{"query": "Maria Golovin opera"})
	if err != nil {
		t.Fatal(err)
	}
	want := `Doc 1 (Title: "Maria Golovin") Maria Golovin is an English language opera in three acts by Gian Carlo Menotti.` + "\n" +
		`Doc 2 (Title: "The Hero (opera)") The Hero is a two-act opera by Italian-American composer Gian Carlo Menotti.`
	if text != want {
		t.Errorf("CallPassages text:\n%s\nwant:\n%s", text, want)
	}
	if !slices.Equal(ids, []string{"p1", "p2"}) {
		t.Errorf("CallPassages ids = %v, want [p1 p2]", ids)
	}
	if plain, err := tool.Call(context.Background(), map[string]any{"query": "Maria Golovin opera"}); err != nil || plain != text {
		t.Errorf("Call = %q, %v; want the CallPassages text", plain, err)
	}
	if text, ids, err := tool.CallPassages(context.Background(), map[string]any{"query": "zebra"}); err != nil || text != "No results found." || len(ids) != 0 {
		t.Errorf("no match: %q %v %v", text, ids, err)
	}

	bad := []struct {
		name string
		args map[string]any
	}{
		{"missing query", map[string]any{}},
		{"number query", map[string]any{"query": 3.0}},
		{"blank query", map[string]any{"query": "  \n"}},
	}
	for _, c := range bad {
		if _, _, err := tool.CallPassages(context.Background(), c.args); err == nil {
			t.Errorf("%s: CallPassages succeeded", c.name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := tool.CallPassages(ctx, map[string]any{"query": "opera"}); err == nil {
		t.Error("CallPassages with a cancelled context succeeded")
	}
}

func TestNewToolPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewTool with topK 0 did not panic")
		}
	}()
	NewTool(nil, 0)
}
