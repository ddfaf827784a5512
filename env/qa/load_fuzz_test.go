package qa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"agentr1/env"
)

// FuzzLoadJSONL feeds arbitrary bytes to the two JSONL question loaders (mhqa and FlashRAG)
// and checks that neither panics; that an error starts with "path:N: " where line N exists
// and is not blank (the line at fault), or says "path: no questions" exactly when no line
// holds anything; and that on success every non-blank line became one question holding the
// fields the loader requires. (Corpus lines are search.ReadCorpus's,
// fuzzed by env/search's FuzzReadCorpus.) Run longer with
// `go test -run '^$' -fuzz '^FuzzLoadJSONL$' ./env/qa/`.
func FuzzLoadJSONL(f *testing.F) {
	f.Add([]byte(`{"id": "a", "question": "Q?", "answers": ["x"], "paragraphs": [{"pid": "p1", "is_supporting": true}]}` + "\n\n" +
		`{"id": "b", "title": "T", "text": "t", "question": "Q2", "answers": ["y", "z"], "golden_answers": ["y"]}`))
	f.Add([]byte(`{"id": 7, "contents": "\"Aaron\"\nAaron is a prophet."}` + "\r\n" + `{"id": "8", "contents": "no newline"}`))
	f.Add([]byte("  \n\t\n{\"id\": \n"))
	f.Add([]byte(`{"id": " ", "question": "Q", "answers": []}`))
	f.Add([]byte(`{"id": "c", "question": "Q", "answers": "x", "golden_answers": null, "contents": null}`))
	f.Add([]byte("\xff\xfe{}\n[1, 2]\nnull\n"))
	f.Add([]byte(" \r\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "fuzz.jsonl"
		lines := bytes.Split(data, []byte("\n"))
		nonBlank := 0
		for _, l := range lines {
			if len(strings.TrimSpace(string(l))) > 0 {
				nonBlank++
			}
		}
		type result struct {
			name string
			n    int
			err  error
			bad  string // first broken record, if any
		}
		var results []result
		qs, err := LoadMHQA(bytes.NewReader(data), path)
		results = append(results, result{"LoadMHQA", len(qs), err, badQuestions(qs)})
		qs, err = LoadFlashRAG(bytes.NewReader(data), path, "nq")
		bad := badQuestions(qs)
		for i, q := range qs {
			if q.Dataset != "nq" {
				bad = fmt.Sprintf("question %d has dataset %q, want nq", i, q.Dataset)
			}
		}
		results = append(results, result{"LoadFlashRAG", len(qs), err, bad})

		for _, r := range results {
			if r.err == nil {
				if nonBlank == 0 {
					t.Fatalf("%s: no error on a file without questions", r.name)
				}
				if r.n != nonBlank {
					t.Fatalf("%s: %d records from %d non-blank lines", r.name, r.n, nonBlank)
				}
				if r.bad != "" {
					t.Fatalf("%s: %s", r.name, r.bad)
				}
				continue
			}
			msg := r.err.Error()
			empty := strings.HasPrefix(msg, path+": no questions")
			if empty != (nonBlank == 0) {
				t.Fatalf("%s: error %q from %d non-blank lines: want \"no questions\" exactly when there are none", r.name, msg, nonBlank)
			}
			if empty {
				continue
			}
			rest, ok := strings.CutPrefix(msg, path+":")
			num, _, ok2 := strings.Cut(rest, ": ")
			n, err := strconv.Atoi(num)
			if !ok || !ok2 || err != nil {
				t.Fatalf("%s: error %q does not start with %q", r.name, msg, path+":LINE: ")
			}
			if n < 1 || n > len(lines) || len(strings.TrimSpace(string(lines[n-1]))) == 0 {
				t.Fatalf("%s: error %q names line %d, which is not a non-blank line of %d", r.name, msg, n, len(lines))
			}
		}
	})
}

// badQuestions returns why a loaded question breaks the loaders' contract (an id, a question
// and at least one answer), or "".
func badQuestions(qs []Question) string {
	for i, q := range qs {
		if strings.TrimSpace(q.ID) == "" || strings.TrimSpace(q.Question) == "" || len(q.Answers) == 0 {
			return fmt.Sprintf("question %d %+v lacks an id, a question or an answer", i, q)
		}
	}
	return ""
}

// FuzzLoadRoundTrip writes one valid record in each question format from fuzzed strings (with
// encoding/json, as the datasets' own tools do) and checks that the loader gives it back
// unchanged: an mhqa question with its supporting pids, a FlashRAG question, and a native
// HotpotQA record (its context paragraphs become passages with PassageID ids that the
// question's SupportingPIDs point to). Corpus lines round-trip in env/search's
// FuzzReadCorpusRoundTrip.
func FuzzLoadRoundTrip(f *testing.F) {
	f.Add("5a70f4c4", "Which composer wrote Maria Golovin?", "Gian Carlo Menotti", "Maria Golovin", "Maria Golovin is an opera. ", true)
	f.Add("0", "who?", "A", "Aaron", "Aaron is a prophet.\nMore.", false)
	f.Add("id-3", "q\u2028<&>?", "yes", "T\"itle", " spaced \t text ", true)
	f.Add("é", "Q", "no", "", "x", false)
	f.Fuzz(func(t *testing.T, id, question, answer, title, text string, supporting bool) {
		for _, s := range []string{id, question, answer, title, text} {
			if !utf8.ValidString(s) {
				return // encoding/json would replace the bad bytes: not the same record
			}
		}
		if strings.TrimSpace(id) == "" || strings.TrimSpace(question) == "" {
			return // not a valid record; FuzzLoadJSONL covers rejection
		}

		// mhqa question.
		want := Question{ID: id, Question: question, Answers: []string{answer}, Type: "bridge", Dataset: "hotpotqa", Split: "dev"}
		pid := PassageID(title, text)
		if supporting {
			want.SupportingTitles = []string{title}
			want.SupportingPIDs = []string{pid}
		}
		line := map[string]any{"id": id, "question": question, "answers": want.Answers, "type": "bridge",
			"dataset": "hotpotqa", "split": "dev", "supporting_titles": want.SupportingTitles,
			"paragraphs": []map[string]any{{"title": title, "text": text, "is_supporting": supporting, "pid": pid}}}
		qs, err := LoadMHQA(bytes.NewReader(marshalLine(t, line)), "q.jsonl")
		if err != nil || len(qs) != 1 || !reflect.DeepEqual(qs[0], want) {
			t.Fatalf("mhqa: got %+v, %v; want %+v", qs, err, want)
		}

		// FlashRAG question.
		wantF := Question{ID: id, Question: question, Answers: []string{answer, answer + "!"}, Dataset: "nq"}
		qs, err = LoadFlashRAG(bytes.NewReader(marshalLine(t, map[string]any{
			"id": id, "question": question, "golden_answers": wantF.Answers})), "f.jsonl", "nq")
		if err != nil || len(qs) != 1 || !reflect.DeepEqual(qs[0], wantF) {
			t.Fatalf("flashrag: got %+v, %v; want %+v", qs, err, wantF)
		}

		// Native HotpotQA: one supporting paragraph, or a fact naming another title.
		fact := title
		if !supporting {
			fact = title + " (other)"
		}
		rec := []map[string]any{{"_id": id, "question": question, "answer": answer, "type": "bridge", "level": "hard",
			"supporting_facts": []any{[]any{fact, 0}}, "context": []any{[]any{title, []string{text}}}}}
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		hq, hp, err := LoadHotpotJSON(bytes.NewReader(raw), "h.json")
		if answer == "" {
			if err == nil || !strings.Contains(err.Error(), "h.json: question 0") {
				t.Fatalf("hotpot with no answer: error %v, want one naming h.json and question 0", err)
			}
			return
		}
		folded := strings.Join(strings.Fields(text), " ")
		wantH := Question{ID: id, Question: question, Answers: []string{answer}, Type: "bridge", Level: "hard",
			Dataset: "hotpotqa", SupportingTitles: []string{fact}}
		hid := PassageID(title, folded)
		if supporting {
			wantH.SupportingPIDs = []string{hid}
		}
		wantHP := []env.Passage{{ID: hid, Title: title, Text: folded}}
		if err != nil || !reflect.DeepEqual(hq, []Question{wantH}) || !reflect.DeepEqual(hp, wantHP) {
			t.Fatalf("hotpot: got %+v %+v, %v; want %+v %+v", hq, hp, err, wantH, wantHP)
		}
	})
}

// marshalLine encodes v as one JSONL line.
func marshalLine(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(raw, '\n')
}
