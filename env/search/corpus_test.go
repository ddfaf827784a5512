package search

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadCorpus(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []Passage
		err   string // substring of the error; "" for success
	}{
		{"agentr1 format", `{"id": "a1", "title": "T", "text": "x y", "datasets": ["hotpotqa"]}` + "\n\n" +
			`{"id": "a2", "text": "no title"}`,
			[]Passage{{ID: "a1", Title: "T", Text: "x y"}, {ID: "a2", Text: "no title"}}, ""},
		{"Search-R1 format", `{"id": "0", "contents": "\"Evan Morris\"\nEvan L. Morris was a lobbyist."}` + "\n" +
			`{"id": "1", "contents": "untitled text"}`,
			[]Passage{{ID: "0", Title: "Evan Morris", Text: "Evan L. Morris was a lobbyist."}, {ID: "1", Text: "untitled text"}}, ""},
		{"CRLF lines", "{\"id\": \"a\", \"text\": \"x\"}\r\n{\"id\": \"b\", \"text\": \"y\"}\r\n",
			[]Passage{{ID: "a", Text: "x"}, {ID: "b", Text: "y"}}, ""},
		{"bad JSON", `{"id": "a", "text": "x"}` + "\n" + `{"id": "b", "text": }`, nil, "c.jsonl:2:"},
		{"missing id", `{"title": "T", "text": "x"}`, nil, `c.jsonl:1: passage has no "id"`},
		{"empty id", `{"id": "", "text": "x"}`, nil, `c.jsonl:1: passage has no "id"`},
		{"no text", `{"id": "a", "title": "T"}`, nil, `c.jsonl:1: passage "a" has neither "text" nor "contents"`},
		{"duplicate id", `{"id": "a", "text": "x"}` + "\n" + `{"id": "b", "text": "y"}` + "\n" + `{"id": "a", "text": "z"}`, nil, `c.jsonl:3: passage id "a" already used on line 1`},
		{"integer ids, FlashRAG's numbering", `{"id": 7, "text": "x"}` + "\n" + `{"id": -12, "contents": "\"T\"\ny"}` + "\n" + `{"id": 0, "text": "z"}`,
			[]Passage{{ID: "7", Text: "x"}, {ID: "-12", Title: "T", Text: "y"}, {ID: "0", Text: "z"}}, ""},
		{"integer and string id collide", `{"id": 7, "text": "x"}` + "\n" + `{"id": "7", "text": "y"}`, nil, `c.jsonl:2: passage id "7" already used on line 1`},
		{"escaped string id", `{"id": "caf\u00e9 \"q\"", "text": "x"}`, []Passage{{ID: `café "q"`, Text: "x"}}, ""},
		{"fractional id", `{"id": 7.5, "text": "x"}`, nil, `c.jsonl:1: "id" 7.5 is not an integer`},
		{"exponent id", `{"id": 1e3, "text": "x"}`, nil, `c.jsonl:1: "id" 1e3 is not an integer`},
		{"boolean id", `{"id": true, "text": "x"}`, nil, `c.jsonl:1: "id" must be a string or an integer, got true`},
		{"null id", `{"id": null, "text": "x"}`, nil, `c.jsonl:1: passage has no "id"`},
		{"blank id", `{"id": " \t", "text": "x"}`, nil, `c.jsonl:1: passage has no "id" (blank)`},
		{"contents without a newline is untitled text", `{"id": 3, "contents": "\"T\" text"}`, []Passage{{ID: "3", Text: `"T" text`}}, ""},
		{"empty passage", `{"id": "a", "title": "", "text": ""}`, nil, `c.jsonl:1: passage "a" has no title and no text`},
		{"empty contents", `{"id": "a", "contents": ""}`, nil, `c.jsonl:1: passage "a" has no title and no text`},
		{"text wins over contents", `{"id": "a", "text": "t", "contents": "\"C\"\nc"}`, []Passage{{ID: "a", Text: "t"}}, ""},
		{"not an object", `["a", "b"]`, nil, "c.jsonl:1: bad JSON"},
		{"wrong text type", `{"id": "a", "text": 3}`, nil, "c.jsonl:1: bad JSON"},
		{"empty file", "\n\n", nil, "c.jsonl: no passages"},
	}
	for _, c := range cases {
		got, err := ReadCorpus(strings.NewReader(c.input), "c.jsonl")
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestReadCorpusLineLimit checks that a line over the limit is refused naming its line and
// the limit, and that a line of exactly the limit is read.
func TestReadCorpusLineLimit(t *testing.T) {
	line := `{"id": "a", "text": "` + strings.Repeat("x", 100) + `"}`
	in := `{"id": "b", "text": "y"}` + "\n" + line + "\n"
	if _, err := readCorpus(strings.NewReader(in), "c.jsonl", len(line)-1); err == nil ||
		err.Error() != fmt.Sprintf("c.jsonl:2: line longer than MaxCorpusLineBytes (%d bytes)", len(line)-1) {
		t.Errorf("line over the limit: error %v", err)
	}
	// The scanner needs room for the newline too.
	if got, err := readCorpus(strings.NewReader(in), "c.jsonl", len(line)+1); err != nil || len(got) != 2 {
		t.Errorf("line at the limit: %d passages, %v", len(got), err)
	}
}

func TestParseContents(t *testing.T) {
	cases := []struct{ contents, title, text string }{
		{"\"Title\"\nsome text", "Title", "some text"},
		{"Bare title\nsome text", "Bare title", "some text"},
		{"\"Quoted \"inner\" title\"\nline one\nline two", `Quoted "inner" title`, "line one\nline two"},
		{"no newline at all", "", "no newline at all"},
		{"\"\"\n", "", ""},
	}
	for _, c := range cases {
		title, text := ParseContents(c.contents)
		if title != c.title || text != c.text {
			t.Errorf("ParseContents(%q) = %q, %q; want %q, %q", c.contents, title, text, c.title, c.text)
		}
	}
	p := Passage{ID: "x", Title: "Maria Golovin", Text: "An opera."}
	if title, text := ParseContents(Contents(p)); title != p.Title || text != p.Text {
		t.Errorf("ParseContents(Contents(p)) = %q, %q", title, text)
	}
}

func TestLoadCorpus(t *testing.T) {
	passages, err := LoadCorpus(EmbeddedCorpus)
	if err != nil {
		t.Fatal(err)
	}
	if len(passages) != 19719 {
		t.Errorf("embedded corpus: %d passages, want 19719", len(passages))
	}
	if p := passages[0]; p.ID != "79ae9550199b" || p.Title != "Act of Congress (music group)" {
		t.Errorf("embedded corpus: first passage %+v", p)
	}
	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	if err := os.WriteFile(path, []byte(`{"id": "a", "text": "x"}`+"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCorpus(path); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("LoadCorpus of a bad file: error %v does not name file and line", err)
	}
	gzPath := filepath.Join(t.TempDir(), "corpus.jsonl.gz")
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	io.WriteString(zw, `{"id": "0", "contents": "\"T\"\nbody"}`+"\n")
	zw.Close()
	if err := os.WriteFile(gzPath, zbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadCorpus(gzPath); err != nil || !reflect.DeepEqual(got, []Passage{{ID: "0", Title: "T", Text: "body"}}) {
		t.Errorf("LoadCorpus of a gzip file: %+v, %v", got, err)
	}
	if err := os.WriteFile(gzPath, []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCorpus(gzPath); err == nil || !strings.Contains(err.Error(), gzPath) {
		t.Errorf("LoadCorpus of a bad gzip file: error %v does not name the file", err)
	}
	if _, err := LoadCorpus(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Error("LoadCorpus of a missing file succeeded")
	}
}
