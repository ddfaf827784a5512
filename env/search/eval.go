package search

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"agentr1/data"
)

// EvalQuestion is what retrieval evaluation needs of a multi-hop question: its text and the
// ids of its supporting passages.
type EvalQuestion struct {
	ID         string   // the question's id in its set
	Question   string   // the question's text
	Supporting []string // passage ids (the corpus's "id", the question's paragraphs[].pid)
}

// LoadEvalQuestions reads questions in the mhqa JSONL schema (data/mhqa/README.md) from the
// file at path (gzip-compressed when the name ends in ".gz"), or from the embedded set of that name ("hotpotqa", "2wiki", "musique").
func LoadEvalQuestions(path string) ([]EvalQuestion, error) {
	if slices.Contains(data.Names(), path) && path != "corpus" {
		r, err := data.Open(path)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return ReadEvalQuestions(r, data.Path(path))
	}
	r, err := openMaybeGzip(path)
	if err != nil {
		return nil, fmt.Errorf("questions: %w", err)
	}
	defer r.Close()
	return ReadEvalQuestions(r, path)
}

// questionLine holds the fields of the mhqa question schema that evaluation reads.
type questionLine struct {
	ID         string `json:"id"`
	Question   string `json:"question"`
	Paragraphs []struct {
		PID          string `json:"pid"`
		IsSupporting bool   `json:"is_supporting"`
	} `json:"paragraphs"`
}

// ReadEvalQuestions reads mhqa JSONL questions: {"id", "question", "paragraphs": [{"pid",
// "is_supporting", ...}], ...}. name labels errors, which give the line number. Every
// question needs its text and at least one supporting paragraph with a pid.
func ReadEvalQuestions(r io.Reader, name string) ([]EvalQuestion, error) {
	var qs []EvalQuestion
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l questionLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		if l.Question == "" {
			return nil, fmt.Errorf("%s:%d: question %q has no \"question\" text", name, lineNo, l.ID)
		}
		q := EvalQuestion{ID: l.ID, Question: l.Question}
		for i, p := range l.Paragraphs {
			if !p.IsSupporting {
				continue
			}
			if p.PID == "" {
				return nil, fmt.Errorf("%s:%d: paragraphs[%d] is supporting but has no \"pid\"", name, lineNo, i)
			}
			if !slices.Contains(q.Supporting, p.PID) {
				q.Supporting = append(q.Supporting, p.PID)
			}
		}
		if len(q.Supporting) == 0 {
			return nil, fmt.Errorf("%s:%d: question %q has no supporting paragraph", name, lineNo, l.ID)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: no questions", name)
	}
	return qs, nil
}

// Recall is retrieval recall at one cutoff K over a question set.
type Recall struct {
	K int // the number of passages retrieved per question
	// All is the fraction of questions with every supporting passage in the top K.
	All float64
	// Any is the fraction of questions with at least one supporting passage in the top K.
	Any float64
}

// EvalResult is the outcome of Evaluate.
type EvalResult struct {
	Recall   []Recall      // one per cutoff, in the order asked
	PerQuery time.Duration // mean search time per question
}

// Evaluate searches every question's text for the top max(ks) passages and measures recall
// at each cutoff in ks. It fails when a supporting passage id is not in the index, since
// recall would then be wrong rather than low.
func Evaluate(ix *Index, qs []EvalQuestion, ks []int) (EvalResult, error) {
	if len(ks) == 0 || len(qs) == 0 {
		return EvalResult{}, fmt.Errorf("search: evaluate needs questions and cutoffs")
	}
	byID := make(map[string]int, ix.Len())
	for d := range ix.Len() {
		byID[ix.Passage(d).ID] = d
	}
	supporting := make([][]int, len(qs)) // question -> passage numbers
	for i, q := range qs {
		for _, pid := range q.Supporting {
			d, ok := byID[pid]
			if !ok {
				return EvalResult{}, fmt.Errorf("search: question %q: supporting passage %q is not in the index", q.ID, pid)
			}
			supporting[i] = append(supporting[i], d)
		}
	}
	kmax := slices.Max(ks)
	hits := make([][]Hit, len(qs))
	start := time.Now()
	for i, q := range qs {
		hits[i] = ix.Search(q.Question, kmax)
	}
	elapsed := time.Since(start)

	res := EvalResult{PerQuery: elapsed / time.Duration(len(qs))}
	for _, k := range ks {
		r := Recall{K: k}
		for i := range qs {
			top := hits[i][:min(k, len(hits[i]))]
			found := 0
			for _, d := range supporting[i] {
				if slices.ContainsFunc(top, func(h Hit) bool { return h.Doc == d }) {
					found++
				}
			}
			if found == len(supporting[i]) {
				r.All++
			}
			if found > 0 {
				r.Any++
			}
		}
		r.All /= float64(len(qs))
		r.Any /= float64(len(qs))
		res.Recall = append(res.Recall, r)
	}
	return res, nil
}
