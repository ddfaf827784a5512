package search

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"agentr1/data"
	"agentr1/env"
)

// Passage is one retrievable unit of the corpus: a Wikipedia paragraph and its article title.
// It is env.Passage, so search results, QA supporting passages and process rewards share ids.
type Passage = env.Passage

// Contents renders a passage as Search-R1 / FlashRAG store it: "\"<title>\"\n<text>".
func Contents(p Passage) string {
	return `"` + p.Title + "\"\n" + p.Text
}

// ParseContents splits a Search-R1 / FlashRAG "contents" string into title and text. The
// first line is the title, in double quotes when the corpus was built by FlashRAG's scripts;
// a string without a newline is all text.
func ParseContents(contents string) (title, text string) {
	first, rest, ok := strings.Cut(contents, "\n")
	if !ok {
		return "", contents
	}
	if len(first) >= 2 && first[0] == '"' && first[len(first)-1] == '"' {
		first = first[1 : len(first)-1]
	}
	return first, rest
}

// EmbeddedCorpus is the name that selects the corpus embedded in package data (19,719
// Wikipedia passages of the HotpotQA, 2Wiki and MuSiQue samples) instead of a file.
const EmbeddedCorpus = "mhqa"

// LoadCorpus reads the passages of the corpus file at path (gzip-compressed when the name ends
// in ".gz"), or of the embedded corpus when path is "mhqa". See ReadCorpus for the formats.
func LoadCorpus(path string) ([]Passage, error) {
	if path == EmbeddedCorpus {
		r, err := data.Open("corpus")
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return ReadCorpus(r, data.Path("corpus"))
	}
	r, err := openMaybeGzip(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	defer r.Close()
	return ReadCorpus(r, path)
}

// openMaybeGzip opens the file at path, decompressing it when the name ends in ".gz".
func openMaybeGzip(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return f, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// corpusLine holds the fields of either corpus format.
type corpusLine struct {
	ID       *string `json:"id"`
	Title    *string `json:"title"`
	Text     *string `json:"text"`
	Contents *string `json:"contents"`
}

// ReadCorpus reads JSONL passages, one object per line, in either of two formats (blank lines
// are skipped, other fields ignored):
//   - agentr1's: {"id", "title", "text", ...}
//   - Search-R1 / FlashRAG's: {"id", "contents": "\"<title>\"\n<text>"}
//
// name labels errors, which give the line number. Passage ids must be unique and non-empty.
func ReadCorpus(r io.Reader, name string) ([]Passage, error) {
	var passages []Passage
	seen := make(map[string]int) // id -> line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l corpusLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		var p Passage
		switch {
		case l.ID == nil || *l.ID == "":
			return nil, fmt.Errorf("%s:%d: passage has no \"id\"", name, lineNo)
		case l.Text != nil:
			p = Passage{ID: *l.ID, Text: *l.Text}
			if l.Title != nil {
				p.Title = *l.Title
			}
		case l.Contents != nil:
			p.ID = *l.ID
			p.Title, p.Text = ParseContents(*l.Contents)
		default:
			return nil, fmt.Errorf("%s:%d: passage %q has neither \"text\" nor \"contents\"", name, lineNo, *l.ID)
		}
		if first, dup := seen[p.ID]; dup {
			return nil, fmt.Errorf("%s:%d: passage id %q already used on line %d", name, lineNo, p.ID, first)
		}
		seen[p.ID] = lineNo
		passages = append(passages, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(passages) == 0 {
		return nil, fmt.Errorf("%s: no passages", name)
	}
	return passages, nil
}
