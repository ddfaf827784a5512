package search

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"agentr1/env"
)

// Retrieved is one passage a retriever returned, with its score (BM25 for the local index,
// whatever the server reports for a remote one; 0 when it reports none).
type Retrieved struct {
	Passage
	Score float64 // the retriever's score; higher is better
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
		out[i] = Retrieved{Passage: ix.Passage(h.Doc), Score: float64(h.Score)}
	}
	return out, nil
}

// DefaultTopK is how many passages the search tool returns per call (Agent-R1's setting).
const DefaultTopK = 5

// Bounds of one search tool call, used when the Tool's fields are not set.
const (
	// DefaultMaxQueryBytes bounds a query: a longer one is refused with an error the agent
	// reads (a search query is a few words; a turn pasted into it is a mistake to learn from).
	DefaultMaxQueryBytes = 1024
	// DefaultMaxOutputBytes bounds the text of one call, so that huge passages cannot blow up
	// memory: passages are rendered only up to it (ToolEnv then cuts to what the agent reads,
	// env.Config.MaxOutputChars).
	DefaultMaxOutputBytes = 16 << 10
)

// Tool is the agent's wiki search tool: name "search", arguments {"query": string}. It returns
// the top TopK passages of its Retriever as numbered passages with their titles (see Format).
//
// Tool implements env.PassageTool: CallPassages also returns the ids of the passages shown,
// best first, which the QA environment uses for its process reward and evaluation for
// retrieval recall along a trajectory. A Tool is safe for concurrent use.
type Tool struct {
	Retriever Retriever // where the passages come from: the local index or a remote server
	TopK      int       // passages returned per call
	// MaxQueryBytes refuses longer queries; <= 0 means DefaultMaxQueryBytes.
	MaxQueryBytes int
	// MaxOutputBytes bounds the text a call returns (FormatLimit); <= 0 means
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
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
// formatted results, cut to MaxOutputBytes, and the ids of the passages the text shows (at
// least in part), best first. A query over MaxQueryBytes is refused.
func (t *Tool) CallPassages(ctx context.Context, args map[string]any) (string, []string, error) {
	query, ok := args["query"].(string)
	if !ok {
		return "", nil, fmt.Errorf("search: argument \"query\" must be a string, got %T", args["query"])
	}
	if strings.TrimSpace(query) == "" {
		return "", nil, fmt.Errorf("search: empty query")
	}
	if limit := orDefault(t.MaxQueryBytes, DefaultMaxQueryBytes); len(query) > limit {
		return "", nil, fmt.Errorf("search: query of %d bytes, at most %d; search for a short phrase", len(query), limit)
	}
	results, err := t.Retriever.Retrieve(ctx, query, t.TopK)
	if err != nil {
		return "", nil, err
	}
	text, shown := FormatLimit(results, orDefault(t.MaxOutputBytes, DefaultMaxOutputBytes))
	ids := make([]string, shown)
	for i, r := range results[:shown] {
		ids[i] = r.ID
	}
	return text, ids, nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Format renders results as the agent reads them, one numbered passage per line, as
// Search-R1's passages-to-string does:
//
//	Doc 1 (Title: "Gian Carlo Menotti") Gian Carlo Menotti was an Italian-American composer ...
//
// No results give "No results found.".
func Format(results []Retrieved) string {
	text, _ := FormatLimit(results, math.MaxInt)
	return text
}

// FormatLimit renders results as Format does but writes at most maxBytes bytes of them (cut on
// a rune boundary), followed, when cut, by env.OutputCutMarker naming the bytes left out; the
// text left out is never built, so a huge passage costs no memory. It returns the text and how
// many results it shows at least in part (the first ones). It panics if maxBytes < 1.
func FormatLimit(results []Retrieved, maxBytes int) (text string, shown int) {
	if maxBytes < 1 {
		panic("search.FormatLimit: maxBytes " + strconv.Itoa(maxBytes))
	}
	if len(results) == 0 {
		return "No results found.", 0
	}
	w := cappedWriter{room: maxBytes}
	for i, r := range results {
		if i > 0 {
			w.write("\n")
		}
		if w.cut == 0 && w.room > 0 {
			shown = i + 1
		}
		w.write("Doc " + strconv.Itoa(i+1) + ` (Title: "`)
		w.write(r.Title)
		w.write(`") `)
		w.write(r.Text)
	}
	if w.cut > 0 {
		w.b.WriteString(fmt.Sprintf(env.OutputCutMarker, w.cut))
	}
	return w.b.String(), shown
}

// cappedWriter keeps the first room bytes written to it (on a rune boundary) and counts the
// rest.
type cappedWriter struct {
	b    strings.Builder
	room int // bytes still to keep
	cut  int // bytes left out
}

func (w *cappedWriter) write(s string) {
	if w.cut > 0 || len(s) > w.room {
		i := min(w.room, len(s))
		for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
			i--
		}
		w.b.WriteString(s[:i])
		w.room, w.cut = 0, w.cut+len(s)-i
		return
	}
	w.b.WriteString(s)
	w.room -= len(s)
}
