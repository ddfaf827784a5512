package search

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"agentr1/env"
)

// Retrieved is one passage a retriever returned, with its score (BM25 for the local index,
// whatever the server reports for a remote one; 0 when it reports none).
type Retrieved struct {
	Passage
	Score float64
}

// Retriever returns the top k passages for a query, best first. *Index and *Remote are
// Retrievers; both are safe for concurrent use.
type Retriever interface {
	Retrieve(ctx context.Context, query string, k int) ([]Retrieved, error)
}

// Retrieve implements Retriever with Search.
func (ix *Index) Retrieve(ctx context.Context, query string, k int) ([]Retrieved, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hits := ix.Search(query, k)
	out := make([]Retrieved, len(hits))
	for i, h := range hits {
		out[i] = Retrieved{Passage: ix.passages[h.Doc], Score: float64(h.Score)}
	}
	return out, nil
}

// DefaultTopK is how many passages the search tool returns per call (Agent-R1's setting).
const DefaultTopK = 5

// Tool is the agent's wiki search tool: name "search", arguments {"query": string}. It returns
// the top TopK passages of its Retriever as numbered passages with their titles (see Format).
//
// Tool implements env.PassageTool: CallPassages also returns the ids of the passages shown,
// best first, which the QA environment uses for its process reward and evaluation for
// retrieval recall along a trajectory. A Tool is safe for concurrent use.
type Tool struct {
	Retriever Retriever
	TopK      int
}

var _ env.PassageTool = (*Tool)(nil)

// NewTool returns a search tool over r returning topK passages per call. It panics if topK < 1.
func NewTool(r Retriever, topK int) *Tool {
	if topK < 1 {
		panic("search: NewTool with topK " + strconv.Itoa(topK))
	}
	return &Tool{Retriever: r, TopK: topK}
}

// NewRemoteSearch returns a search tool that queries a Search-R1-compatible retrieval server
// at url (e.g. "http://127.0.0.1:8000/retrieve"). It panics if topK < 1.
func NewRemoteSearch(url string, topK int) *Tool {
	return NewTool(NewRemote(url), topK)
}

// Name implements env.Tool.
func (t *Tool) Name() string { return "search" }

// Description implements env.Tool.
func (t *Tool) Description() string {
	return "Search Wikipedia for a query. Returns the " + strconv.Itoa(t.TopK) +
		" most relevant passages, each with the title of its article."
}

// Parameters implements env.Tool: {"query": string}, required.
func (t *Tool) Parameters() *env.Schema {
	return &env.Schema{
		Type: "object",
		Properties: map[string]*env.Schema{
			"query": {Type: "string", Description: "The search query, e.g. an entity name or a question."},
		},
		Required: []string{"query"},
	}
}

// Call implements env.Tool.
func (t *Tool) Call(ctx context.Context, args map[string]any) (string, error) {
	text, _, err := t.CallPassages(ctx, args)
	return text, err
}

// CallPassages implements env.PassageTool: it searches for args["query"] and returns the
// formatted results and the ids of the passages in them, best first.
func (t *Tool) CallPassages(ctx context.Context, args map[string]any) (string, []string, error) {
	query, ok := args["query"].(string)
	if !ok {
		return "", nil, fmt.Errorf("search: argument \"query\" must be a string, got %T", args["query"])
	}
	if strings.TrimSpace(query) == "" {
		return "", nil, fmt.Errorf("search: empty query")
	}
	results, err := t.Retriever.Retrieve(ctx, query, t.TopK)
	if err != nil {
		return "", nil, err
	}
	ids := make([]string, len(results))
	for i, r := range results {
		ids[i] = r.ID
	}
	return Format(results), ids, nil
}

// Format renders results as the agent reads them, one numbered passage per line, as
// Search-R1's passages-to-string does:
//
//	Doc 1 (Title: "Gian Carlo Menotti") Gian Carlo Menotti was an Italian-American composer ...
//
// No results give "No results found.".
func Format(results []Retrieved) string {
	if len(results) == 0 {
		return "No results found."
	}
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Doc %d (Title: \"%s\") %s", i+1, r.Title, r.Text)
	}
	return b.String()
}
