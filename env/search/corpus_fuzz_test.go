package search

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReadCorpus feeds arbitrary bytes to ReadCorpus, the one corpus reader, and checks that
// it never panics; that an error starts with "path:N: " where line N exists and is not blank
// (the line at fault), or is "path: no passages" exactly when no line holds anything; and that
// on success every non-blank line became one passage with a non-blank id, unique, and a title
// or a text. Run longer with `go test -run '^$' -fuzz '^FuzzReadCorpus$' ./env/search/`.
func FuzzReadCorpus(f *testing.F) {
	f.Add([]byte(`{"id": "a", "title": "T", "text": "t", "datasets": ["hotpotqa"]}` + "\n\n" + `{"id": 7, "contents": "\"Aaron\"\nAaron is a prophet."}`))
	f.Add([]byte(`{"id": 7, "contents": "\"Aaron\"\nAaron is a prophet."}` + "\r\n" + `{"id": "8", "contents": "no newline"}`))
	f.Add([]byte("  \n\t\n{\"id\": \n"))
	f.Add([]byte(`{"id": " ", "text": "x"}` + "\n" + `{"id": 1.5, "text": "x"}` + "\n" + `{"id": 1e2, "text": "x"}`))
	f.Add([]byte(`{"id": "a", "text": "x"}` + "\n" + `{"id": "a", "text": "y"}`))
	f.Add([]byte(`{"id": 3, "text": "x"}` + "\n" + `{"id": "3", "text": "y"}` + "\n" + `{"id": -0, "text": "z"}`))
	f.Add([]byte(`{"id": "c", "title": "", "text": "", "contents": null}` + "\n" + `{"ID": "d", "Text": "case"}`))
	f.Add([]byte("\xff\xfe{}\n[1, 2]\nnull\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "fuzz.jsonl"
		// The reader's lines: split at "\n" (a final line may lack it).
		lines := bytes.Split(data, []byte("\n"))
		nonBlank := 0
		for _, l := range lines {
			if len(bytes.TrimSpace(l)) > 0 {
				nonBlank++
			}
		}
		ps, err := ReadCorpus(bytes.NewReader(data), path)
		if err == nil {
			if len(ps) != nonBlank {
				t.Fatalf("%d passages from %d non-blank lines", len(ps), nonBlank)
			}
			ids := map[string]bool{}
			for i, p := range ps {
				if strings.TrimSpace(p.ID) == "" || ids[p.ID] || (p.Title == "" && p.Text == "") {
					t.Fatalf("passage %d %+v: blank or repeated id, or no title and no text", i, p)
				}
				ids[p.ID] = true
			}
			return
		}
		msg := err.Error()
		if msg == path+": no passages" {
			if nonBlank != 0 {
				t.Fatalf("%q with %d non-blank lines", msg, nonBlank)
			}
			return
		}
		rest, ok := strings.CutPrefix(msg, path+":")
		num, _, ok2 := strings.Cut(rest, ": ")
		n, convErr := strconv.Atoi(num)
		if !ok || !ok2 || convErr != nil {
			t.Fatalf("error %q does not start with %q", msg, path+":LINE: ")
		}
		if n < 1 || n > len(lines) || len(bytes.TrimSpace(lines[n-1])) == 0 {
			t.Fatalf("error %q names line %d, which is not a non-blank line of %d", msg, n, len(lines))
		}
	})
}

// FuzzReadCorpusRoundTrip writes one passage in each corpus format from fuzzed values (with
// encoding/json, as the corpora's own tools do) and checks that ReadCorpus gives it back
// unchanged: an agentr1 line {"id", "title", "text"} with a string id, a FlashRAG line {"id",
// "contents": "\"title\"\ntext"} with the same id, the FlashRAG line with the integer id num
// (read as its decimal text), and contents without a newline (read as untitled text).
func FuzzReadCorpusRoundTrip(f *testing.F) {
	f.Add("79ae9550199b", int64(0), "Act of Congress (music group)", "Act of Congress is a Birmingham, Alabama based group.")
	f.Add(`"`, int64(-7), "0", "0")
	f.Add("id-3", int64(1)<<62, "T\"itle", " spaced \t text\nsecond line")
	f.Add("é", int64(12), "", "x")
	f.Fuzz(func(t *testing.T, id string, num int64, title, text string) {
		for _, s := range []string{id, title, text} {
			if !utf8.ValidString(s) {
				return // encoding/json would replace the bad bytes: not the same passage
			}
		}
		if strings.TrimSpace(id) == "" || (title == "" && text == "") {
			return // not a valid passage; FuzzReadCorpus covers refusals
		}
		read := func(name string, line map[string]any) []Passage {
			t.Helper()
			raw, err := json.Marshal(line)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := ReadCorpus(bytes.NewReader(raw), name)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, raw, err)
			}
			return ps
		}
		want := Passage{ID: id, Title: title, Text: text}
		if got := read("agentr1", map[string]any{"id": id, "title": title, "text": text}); len(got) != 1 || got[0] != want {
			t.Fatalf("agentr1 line: got %+v, want %+v", got, want)
		}
		// "\"title\"\ntext" cannot carry a title holding a newline; ParseContents strips one
		// pair of quotes, so any title without a newline survives.
		if !strings.Contains(title, "\n") {
			contents := Contents(want)
			if got := read("flashrag", map[string]any{"id": id, "contents": contents}); len(got) != 1 || got[0] != want {
				t.Fatalf("FlashRAG line: got %+v, want %+v", got, want)
			}
			wantNum := Passage{ID: strconv.FormatInt(num, 10), Title: title, Text: text}
			if got := read("flashrag-int", map[string]any{"id": num, "contents": contents}); len(got) != 1 || got[0] != wantNum {
				t.Fatalf("FlashRAG line with an integer id: got %+v, want %+v", got, wantNum)
			}
		}
		if text != "" && !strings.Contains(text, "\n") {
			wantUntitled := Passage{ID: id, Text: text}
			if got := read("untitled", map[string]any{"id": id, "contents": text}); len(got) != 1 || got[0] != wantUntitled {
				t.Fatalf("contents without a newline: got %+v, want %+v", got, wantUntitled)
			}
		}
	})
}
