package qa

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"agentr1/data"
	"agentr1/env"
)

// eachLine calls fn with every non-blank line of a JSONL stream and its 1-based number,
// wrapping fn's error as "path:line: ...". Lines may be of any length.
func eachLine(r io.Reader, path string, fn func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if ferr := fn(line); ferr != nil {
				return fmt.Errorf("%s:%d: %w", path, n, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
}

// decodeStrict unmarshals one JSON line, naming the JSON error.
func decodeStrict(line []byte, v any) error {
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("bad JSON: %w", err)
	}
	return nil
}

// checkQuestion enforces the fields every loader needs.
func checkQuestion(q *Question) error {
	switch {
	case strings.TrimSpace(q.ID) == "":
		return errors.New(`missing "id"`)
	case strings.TrimSpace(q.Question) == "":
		return fmt.Errorf("question %s: empty question", q.ID)
	case len(q.Answers) == 0:
		return fmt.Errorf("question %s: no answers", q.ID)
	}
	return nil
}

// mhqaLine is one question of the normalised mhqa JSONL (data/mhqa/README.md).
type mhqaLine struct {
	Question
	Paragraphs []struct {
		Title        string `json:"title"`
		IsSupporting bool   `json:"is_supporting"`
		PID          string `json:"pid"`
	} `json:"paragraphs"`
}

// LoadMHQA reads questions in agentr1's normalised multi-hop QA JSONL (data/mhqa/README.md):
// {"id", "question", "answers", "type", "supporting_titles", "paragraphs": [{"pid",
// "is_supporting", ...}], "dataset", "split", ...}. SupportingPIDs are the pids of the
// supporting paragraphs. path names the stream in errors ("file:line: ...").
func LoadMHQA(r io.Reader, path string) ([]Question, error) {
	var out []Question
	err := eachLine(r, path, func(line []byte) error {
		var m mhqaLine
		if err := decodeStrict(line, &m); err != nil {
			return err
		}
		q := m.Question
		q.SupportingPIDs = nil
		for _, p := range m.Paragraphs {
			if p.IsSupporting && p.PID != "" {
				q.SupportingPIDs = append(q.SupportingPIDs, p.PID)
			}
		}
		if err := checkQuestion(&q); err != nil {
			return err
		}
		out = append(out, q)
		return nil
	})
	return nonEmpty(out, path, err)
}

// nonEmpty passes a loader's result on, with an error naming path when it read no question: an
// empty or blank-only file is a mistake, and every consumer needs at least one.
func nonEmpty(qs []Question, path string, err error) ([]Question, error) {
	if err == nil && len(qs) == 0 {
		return nil, fmt.Errorf("%s: no questions: the file is empty or holds only blank lines", path)
	}
	return qs, err
}

// LoadEmbedded reads one of the embedded mhqa question sets: "hotpotqa", "2wiki" or "musique".
func LoadEmbedded(name string) ([]Question, error) {
	rc, err := data.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return LoadMHQA(rc, data.Path(name))
}

// flashRAGQuestion is a Search-R1 / FlashRAG question line.
type flashRAGQuestion struct {
	ID            string   `json:"id"`
	Question      string   `json:"question"`
	GoldenAnswers []string `json:"golden_answers"`
}

// LoadFlashRAG reads questions in the Search-R1 / FlashRAG JSONL form {"id", "question",
// "golden_answers": [..]}; dataset names them (FlashRAG files carry no dataset field).
func LoadFlashRAG(r io.Reader, path, dataset string) ([]Question, error) {
	var out []Question
	err := eachLine(r, path, func(line []byte) error {
		var f flashRAGQuestion
		if err := decodeStrict(line, &f); err != nil {
			return err
		}
		q := Question{ID: f.ID, Question: f.Question, Answers: f.GoldenAnswers, Dataset: dataset}
		if err := checkQuestion(&q); err != nil {
			return err
		}
		out = append(out, q)
		return nil
	})
	return nonEmpty(out, path, err)
}

// hotpotRecord is one question of the native HotpotQA JSON release.
type hotpotRecord struct {
	ID              string            `json:"_id"`
	Question        string            `json:"question"`
	Answer          string            `json:"answer"`
	Type            string            `json:"type"`
	Level           string            `json:"level"`
	SupportingFacts []json.RawMessage `json:"supporting_facts"` // [title, sentence index]
	Context         []json.RawMessage `json:"context"`          // [title, [sentences]]
}

// LoadHotpotJSON reads the native HotpotQA JSON (one array of {"_id", "question", "answer",
// "type", "level", "supporting_facts": [[title, sent]], "context": [[title, [sentences]]]})
// and returns the questions and the distinct context paragraphs as passages, with the mhqa ids
// (PassageID of the title and the joined sentences, whitespace runs folded), so that the
// questions' SupportingPIDs point into the returned passages. Errors name path and the
// question's index in the array.
func LoadHotpotJSON(r io.Reader, path string) ([]Question, []env.Passage, error) {
	dec := json.NewDecoder(r)
	var recs []hotpotRecord
	if err := dec.Decode(&recs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var qs []Question
	var passages []env.Passage
	seen := map[string]bool{}
	for i, rec := range recs {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s: question %d (%s): %s", path, i, rec.ID, fmt.Sprintf(format, args...))
		}
		q := Question{ID: rec.ID, Question: rec.Question, Answers: []string{rec.Answer},
			Type: rec.Type, Level: rec.Level, Dataset: "hotpotqa"}
		if rec.Answer == "" {
			q.Answers = nil
		}
		if err := checkQuestion(&q); err != nil {
			return nil, nil, fail("%v", err)
		}
		support := map[string]bool{}
		for j, raw := range rec.SupportingFacts {
			var fact []json.RawMessage
			var title string
			if json.Unmarshal(raw, &fact) != nil || len(fact) != 2 || json.Unmarshal(fact[0], &title) != nil {
				return nil, nil, fail("supporting_facts[%d] is not [title, sentence]", j)
			}
			if !support[title] {
				support[title] = true
				q.SupportingTitles = append(q.SupportingTitles, title)
			}
		}
		for j, raw := range rec.Context {
			var para []json.RawMessage
			var title string
			var sents []string
			if json.Unmarshal(raw, &para) != nil || len(para) != 2 ||
				json.Unmarshal(para[0], &title) != nil || json.Unmarshal(para[1], &sents) != nil {
				return nil, nil, fail("context[%d] is not [title, [sentences]]", j)
			}
			text := strings.Join(strings.Fields(strings.Join(sents, "")), " ")
			id := PassageID(title, text)
			if support[title] {
				q.SupportingPIDs = append(q.SupportingPIDs, id)
			}
			if !seen[id] {
				seen[id] = true
				passages = append(passages, env.Passage{ID: id, Title: title, Text: text})
			}
		}
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return nil, nil, fmt.Errorf("%s: no questions: the array is empty", path)
	}
	return qs, passages, nil
}
