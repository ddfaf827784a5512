package search

import (
	"context"
	"encoding/json"
	"fmt"
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

func TestFormatLimit(t *testing.T) {
	results := []Retrieved{
		{Passage: Passage{ID: "a", Title: "A", Text: "first passage"}},
		{Passage: Passage{ID: "b", Title: "Bé", Text: "second é passage"}},
	}
	full := Format(results)
	line1 := `Doc 1 (Title: "A") first passage`
	cases := []struct {
		name     string
		maxBytes int
		want     string
		shown    int
	}{
		{"everything fits", len(full), full, 2},
		{"one byte short", len(full) - 1, full[:len(full)-1] + "...[truncated 1 bytes]", 2},
		{"cut after the first line", len(line1), line1 + fmt.Sprintf("...[truncated %d bytes]", len(full)-len(line1)), 1},
		{"room for the separator only", len(line1) + 1, line1 + "\n" + fmt.Sprintf("...[truncated %d bytes]", len(full)-len(line1)-1), 1},
		{"cut inside the title's é", len(line1) + len("\nDoc 2 (Title: \"B") + 1,
			line1 + "\nDoc 2 (Title: \"B" + fmt.Sprintf("...[truncated %d bytes]", len(full)-len(line1)-len("\nDoc 2 (Title: \"B")), 2},
		{"one byte", 1, "D" + fmt.Sprintf("...[truncated %d bytes]", len(full)-1), 1},
	}
	for _, c := range cases {
		got, shown := FormatLimit(results, c.maxBytes)
		if got != c.want || shown != c.shown {
			t.Errorf("%s: FormatLimit = %q, %d; want %q, %d", c.name, got, shown, c.want, c.shown)
		}
	}
	if got, shown := FormatLimit(nil, 5); got != "No results found." || shown != 0 {
		t.Errorf("no results: %q, %d", got, shown)
	}
}

// TestToolBounds checks the search tool's own limits: a query over MaxQueryBytes is refused
// naming the limit, and a huge passage is rendered only up to MaxOutputBytes, with the marker
// and the ids of the passages shown.
func TestToolBounds(t *testing.T) {
	huge := strings.Repeat("opera ", 1<<20) // 6 MiB
	r := fixedRetriever{{Passage: Passage{ID: "h", Title: "Huge", Text: huge}}, {Passage: Passage{ID: "n", Title: "Next", Text: "x"}}}
	tool := &Tool{Retriever: r, TopK: 2, MaxQueryBytes: 10, MaxOutputBytes: 100}
	if _, _, err := tool.CallPassages(context.Background(), map[string]any{"query": strings.Repeat("q", 11)}); err == nil ||
		err.Error() != "search: query of 11 bytes, at most 10; search for a short phrase" {
		t.Errorf("long query: error %v", err)
	}
	text, ids, err := tool.CallPassages(context.Background(), map[string]any{"query": strings.Repeat("q", 10)})
	want := `Doc 1 (Title: "Huge") ` + huge[:100-len(`Doc 1 (Title: "Huge") `)]
	if err != nil || !strings.HasPrefix(text, want) || !strings.HasSuffix(text, " bytes]") || len(text) > 100+len("...[truncated 1234567890 bytes]") {
		t.Errorf("huge passage: %d bytes %q..., %v", len(text), text[:min(len(text), 120)], err)
	}
	if !slices.Equal(ids, []string{"h"}) {
		t.Errorf("huge passage: ids %v, want only the passage shown", ids)
	}
	// The defaults apply to a Tool built without bounds.
	tool = NewTool(r, 2)
	if _, _, err := tool.CallPassages(context.Background(), map[string]any{"query": strings.Repeat("q", DefaultMaxQueryBytes+1)}); err == nil {
		t.Errorf("query over DefaultMaxQueryBytes accepted")
	}
	if text, _, _ := tool.CallPassages(context.Background(), map[string]any{"query": "q"}); len(text) > DefaultMaxOutputBytes+40 {
		t.Errorf("output of %d bytes, DefaultMaxOutputBytes %d", len(text), DefaultMaxOutputBytes)
	}
}

// fixedRetriever returns its results, up to k, for any query.
type fixedRetriever []Retrieved

func (f fixedRetriever) Retrieve(_ context.Context, _ string, k int) ([]Retrieved, error) {
	return f[:min(k, len(f))], nil
}
