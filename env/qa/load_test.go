package qa

import (
	"strings"
	"testing"

	wikisearch "agentr1/env/search"
)

func TestLoadErrors(t *testing.T) {
	good := `{"id": "a", "question": "Q?", "answers": ["x"]}`
	cases := []struct {
		name string
		load func(string) error
		in   string
		want string
	}{
		{"mhqa bad JSON", mhqa, good + "\n{\"id\": \n", "f.jsonl:2: bad JSON"},
		{"mhqa no answers", mhqa, good + "\n\n" + `{"id": "b", "question": "Q?", "answers": []}`, "f.jsonl:3: question b: no answers"},
		{"mhqa no id", mhqa, `{"question": "Q?", "answers": ["x"]}`, `f.jsonl:1: missing "id"`},
		{"mhqa empty question", mhqa, `{"id": "c", "question": " ", "answers": ["x"]}`, "f.jsonl:1: question c: empty question"},
		{"mhqa answers not a list", mhqa, `{"id": "c", "question": "Q", "answers": "x"}`, "f.jsonl:1: bad JSON"},
		{"mhqa empty file", mhqa, "", "f.jsonl: no questions: the file is empty or holds only blank lines"},
		{"mhqa blank lines only", mhqa, "\n  \n\t\n", "f.jsonl: no questions"},
		{"flashrag empty file", flash, "\n", "f.jsonl: no questions"},
		{"hotpot empty array", hotpot, "[]", "f.json: no questions: the array is empty"},
		{"flashrag no golden answers", flash, `{"id": "1", "question": "Q?"}`, "f.jsonl:1: question 1: no answers"},
		{"hotpot not an array", hotpot, `{"_id": "a"}`, "f.json: json: cannot unmarshal object"},
		{"hotpot bad context", hotpot, `[{"_id": "a", "question": "Q", "answer": "x", "context": [["T", "not a list"]]}]`, "f.json: question 0 (a): context[0] is not [title, [sentences]]"},
		{"hotpot bad fact", hotpot, `[{"_id": "a", "question": "Q", "answer": "x", "supporting_facts": [[1, 0]]}]`, "f.json: question 0 (a): supporting_facts[0] is not [title, sentence]"},
		{"hotpot no answer", hotpot, `[{"_id": "a", "question": "Q", "answer": ""}]`, "f.json: question 0 (a): question a: no answers"},
	}
	for _, c := range cases {
		err := c.load(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func mhqa(s string) error   { _, err := LoadMHQA(strings.NewReader(s), "f.jsonl"); return err }
func flash(s string) error  { _, err := LoadFlashRAG(strings.NewReader(s), "f.jsonl", "nq"); return err }
func hotpot(s string) error { _, _, err := LoadHotpotJSON(strings.NewReader(s), "f.json"); return err }

func TestLoadFormats(t *testing.T) {
	qs, err := LoadFlashRAG(strings.NewReader(`{"id": "test_1", "question": "who?", "golden_answers": ["A", "B"]}`+"\n"), "f", "nq")
	if err != nil || len(qs) != 1 || qs[0].Dataset != "nq" || len(qs[0].Answers) != 2 {
		t.Errorf("FlashRAG questions: %+v, %v", qs, err)
	}
	native := `[{"_id": "h1", "question": "Q?", "answer": "yes", "type": "comparison", "level": "easy",
	  "supporting_facts": [["B", 0], ["A", 1], ["A", 0]],
	  "context": [["A", ["A is one. ", " It  is."]], ["B", ["B is two."]], ["C", ["C."]]]},
	 {"_id": "h2", "question": "Q2?", "answer": "no", "supporting_facts": [["C", 0]],
	  "context": [["C", ["C."]]]}]`
	hq, hp, err := LoadHotpotJSON(strings.NewReader(native), "f")
	if err != nil {
		t.Fatal(err)
	}
	if len(hq) != 2 || len(hp) != 3 {
		t.Fatalf("got %d questions, %d passages; want 2, 3 (C shared)", len(hq), len(hp))
	}
	if hp[0].Text != "A is one. It is." || hp[0].ID != PassageID("A", "A is one. It is.") {
		t.Errorf("passage A: %+v", hp[0])
	}
	q := hq[0]
	if strings.Join(q.SupportingTitles, ",") != "B,A" || len(q.SupportingPIDs) != 2 || q.SupportingPIDs[0] != hp[0].ID ||
		q.Level != "easy" || q.Answers[0] != "yes" || q.Dataset != "hotpotqa" {
		t.Errorf("question: %+v", q)
	}
	if hq[1].SupportingPIDs[0] != hp[2].ID {
		t.Errorf("shared passage C has different ids")
	}
}

// TestEmbeddedData loads the shipped datasets and checks that every supporting pid names a
// passage of the embedded corpus (read by the one corpus reader, search.LoadCorpus) and that
// PassageID reproduces every corpus id.
func TestEmbeddedData(t *testing.T) {
	passages, err := wikisearch.LoadCorpus(wikisearch.EmbeddedCorpus)
	if err != nil {
		t.Fatal(err)
	}
	if len(passages) != 19719 {
		t.Errorf("corpus has %d passages, want 19719", len(passages))
	}
	ids := make(map[string]bool, len(passages))
	for _, p := range passages {
		ids[p.ID] = true
		if got := PassageID(p.Title, p.Text); got != p.ID {
			t.Fatalf("PassageID(%q) = %s, corpus says %s", p.Title, got, p.ID)
		}
	}
	for name, n := range map[string]int{"hotpotqa": 844, "2wiki": 442, "musique": 133} {
		qs, err := LoadEmbedded(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(qs) != n {
			t.Errorf("%s: %d questions, want %d", name, len(qs), n)
		}
		for _, q := range qs {
			if len(q.SupportingPIDs) < 2 {
				t.Errorf("%s %s: %d supporting pids", name, q.ID, len(q.SupportingPIDs))
			}
			for _, id := range q.SupportingPIDs {
				if !ids[id] {
					t.Errorf("%s %s: supporting pid %s not in the corpus", name, q.ID, id)
				}
			}
			if q.Dataset != name {
				t.Errorf("%s %s: dataset %q", name, q.ID, q.Dataset)
			}
		}
	}
}
