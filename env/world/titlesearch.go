package world

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"agentr1/env"
)

// TitleSearch is an oracle search tool over a world's passages: the passages whose title
// equals the query (case-insensitive), then those whose title starts with the query and a
// space ("Kalo River" for "Kalo"), at most K. It needs no index, so tests and quick checks can
// run the environment without package search; its results are formatted as Search-R1 does
// ("Doc 1 (Title: \"...\") text"). It implements env.PassageTool and is safe for concurrent use.
type TitleSearch struct {
	byTitle map[string][]env.Passage // lower-cased title -> passages
	all     []env.Passage
	K       int // passages returned per query, at most
}

var _ env.PassageTool = (*TitleSearch)(nil)

// NewTitleSearch returns a TitleSearch over passages returning at most k of them.
func NewTitleSearch(passages []env.Passage, k int) *TitleSearch {
	s := &TitleSearch{byTitle: map[string][]env.Passage{}, all: passages, K: k}
	for _, p := range passages {
		t := strings.ToLower(p.Title)
		s.byTitle[t] = append(s.byTitle[t], p)
	}
	return s
}

// Name implements env.Tool.
func (s *TitleSearch) Name() string { return "search" }

// Description implements env.Tool.
func (s *TitleSearch) Description() string { return "Search the wiki for a title." }

// Parameters implements env.Tool: {"query": string}, required.
func (s *TitleSearch) Parameters() *env.Schema {
	return &env.Schema{Type: "object", Required: []string{"query"},
		Properties: map[string]*env.Schema{"query": {Type: "string", Description: "The title to look up."}}}
}

// Call implements env.Tool.
func (s *TitleSearch) Call(ctx context.Context, args map[string]any) (string, error) {
	text, _, err := s.CallPassages(ctx, args)
	return text, err
}

// CallPassages implements env.PassageTool.
func (s *TitleSearch) CallPassages(_ context.Context, args map[string]any) (string, []string, error) {
	q, _ := args["query"].(string)
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" {
		return "", nil, errors.New("empty query")
	}
	hits := append([]env.Passage(nil), s.byTitle[q]...)
	for _, p := range s.all {
		if len(hits) >= s.K {
			break
		}
		if strings.HasPrefix(strings.ToLower(p.Title), q+" ") {
			hits = append(hits, p)
		}
	}
	if len(hits) > s.K {
		hits = hits[:s.K]
	}
	if len(hits) == 0 {
		return "No results found.", nil, nil
	}
	var b strings.Builder
	ids := make([]string, len(hits))
	for i, p := range hits {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Doc %d (Title: %q) %s", i+1, p.Title, p.Text)
		ids[i] = p.ID
	}
	return b.String(), ids, nil
}
