package search

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
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

// MaxCorpusLineBytes bounds one line of a corpus file: a longer line is an error naming it,
// so a file without newlines cannot be read whole into memory. Real passages are a few KiB.
const MaxCorpusLineBytes = 64 << 20

// corpusLine holds the fields of either corpus format; the id stays raw, being a string or a
// number.
type corpusLine struct {
	ID       json.RawMessage `json:"id"`
	Title    *string         `json:"title"`
	Text     *string         `json:"text"`
	Contents *string         `json:"contents"`
}

// ReadCorpus reads JSONL passages, one object per line, in either of two formats (blank lines
// are skipped, other fields ignored):
//   - agentr1's: {"id", "title", "text", ...}, "title" optional;
//   - Search-R1 / FlashRAG's: {"id", "contents": "\"<title>\"\n<text>"}, split by
//     ParseContents (contents without a newline are untitled text).
//
// An id is a non-blank string or an integer, kept as its decimal text (FlashRAG dumps number
// their passages); ids are unique. A passage needs "text" or "contents" (text wins when both
// are given) and may not be empty in both title and text. name labels errors, which give the
// line number ("corpus.jsonl:12: ..."); a line over MaxCorpusLineBytes and a stream without
// passages are errors too. This is the one corpus reader of agentr1: the index, the search
// commands, evaluation and the QA tests all read passages through it.
func ReadCorpus(r io.Reader, name string) ([]Passage, error) {
	return readCorpus(r, name, MaxCorpusLineBytes)
}

// readCorpus is ReadCorpus with lines of at most maxLine bytes.
func readCorpus(r io.Reader, name string, maxLine int) ([]Passage, error) {
	var passages []Passage
	seen := make(map[string]int) // id -> line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(maxLine, 1<<16)), maxLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		p, err := parseCorpusLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		if first, dup := seen[p.ID]; dup {
			return nil, fmt.Errorf("%s:%d: passage id %q already used on line %d", name, lineNo, p.ID, first)
		}
		seen[p.ID] = lineNo
		passages = append(passages, p)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%s:%d: line longer than MaxCorpusLineBytes (%d bytes)", name, lineNo+1, maxLine)
	} else if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, lineNo+1, err)
	}
	if len(passages) == 0 {
		return nil, fmt.Errorf("%s: no passages", name)
	}
	return passages, nil
}

// parseCorpusLine decodes one non-blank corpus line into a passage (see ReadCorpus).
func parseCorpusLine(line []byte) (Passage, error) {
	var l corpusLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Passage{}, fmt.Errorf("bad JSON: %w", err)
	}
	id, err := passageID(l.ID)
	if err != nil {
		return Passage{}, err
	}
	p := Passage{ID: id}
	switch {
	case l.Text != nil:
		p.Text = *l.Text
		if l.Title != nil {
			p.Title = *l.Title
		}
	case l.Contents != nil:
		p.Title, p.Text = ParseContents(*l.Contents)
	default:
		return Passage{}, fmt.Errorf("passage %q has neither \"text\" nor \"contents\"", id)
	}
	if p.Title == "" && p.Text == "" {
		return Passage{}, fmt.Errorf("passage %q has no title and no text", id)
	}
	return p, nil
}

// passageID reads a corpus id: a non-blank JSON string (escapes resolved), or a JSON integer,
// kept as written (its decimal text: 7 -> "7"). Fractions and exponents are refused: they name
// no passage of any corpus format and would not read back the same.
func passageID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New(`passage has no "id"`)
	}
	var id string
	if err := json.Unmarshal(raw, &id); err == nil {
		if strings.TrimSpace(id) == "" {
			return "", errors.New(`passage has no "id" (blank)`)
		}
		return id, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf(`"id" must be a string or an integer, got %s`, shorten(string(raw), 40))
	}
	if !isDecimalInteger(n.String()) {
		return "", fmt.Errorf(`"id" %s is not an integer`, shorten(n.String(), 40))
	}
	return n.String(), nil
}

// isDecimalInteger reports whether s is a JSON integer: an optional minus and digits, without
// leading zeros.
func isDecimalInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// shorten cuts s to n bytes for an error message.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
