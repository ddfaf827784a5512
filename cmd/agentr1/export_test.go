package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/env"
	"agentr1/env/qa"
	"agentr1/env/search"
	"agentr1/env/world"
	"agentr1/internal/verlexport"
	"agentr1/rl/pipeline"
)

// readExport reads DIR/train.parquet and DIR/validation.parquet with the Parquet library.
func readExport(t *testing.T, dir string) (train, validation []verlexport.Row) {
	t.Helper()
	var err error
	if train, err = verlexport.ReadFile(filepath.Join(dir, "train.parquet")); err != nil {
		t.Fatal(err)
	}
	if validation, err = verlexport.ReadFile(filepath.Join(dir, "validation.parquet")); err != nil {
		t.Fatal(err)
	}
	return train, validation
}

// checkExportRows checks every column of rows, the split's file, against the questions qs it
// must hold in order, the data source and the top-k the system prompt's tool states.
// With schema false the system message must be the instructions alone.
func checkExportRows(t *testing.T, name, split string, rows []verlexport.Row, qs []qa.Question, dataSource string, topK int, schema bool) {
	t.Helper()
	if len(rows) != len(qs) {
		t.Fatalf("%s %s: %d rows, want %d questions", name, split, len(rows), len(qs))
	}
	tools := []env.Tool{&search.Tool{TopK: topK}}
	system := qa.SystemPrompt(qa.DefaultInstructions, tools)
	cfg := qa.DefaultConfig()
	if !schema {
		system, cfg.SystemPrompt = qa.DefaultInstructions, qa.DefaultInstructions
	}
	// The prompt agentr1 itself gives the question: verl's chat template renders the exported
	// messages to exactly this text (ChatML, Qwen2.5's template without a tools argument).
	e, err := qa.New(cfg, tools...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		q := qs[i]
		where := name + " " + split + " row " + q.ID
		if r.DataSource != dataSource {
			t.Errorf("%s: data_source %q, want %q", where, r.DataSource, dataSource)
		}
		if len(r.Prompt) != 2 || r.Prompt[0] != (verlexport.Message{Role: "system", Content: system}) ||
			r.Prompt[1] != (verlexport.Message{Role: "user", Content: "Question: " + q.Question}) {
			t.Errorf("%s: prompt %q", where, r.Prompt)
		} else if got, want := env.RenderPrompt(r.Prompt[0].Content, r.Prompt[1].Content), e.Reset(q); got != want {
			t.Errorf("%s: the prompt renders as\n%s\nagentr1 renders\n%s", where, got, want)
		}
		if r.Ability != "multihop_qa" {
			t.Errorf("%s: ability %q", where, r.Ability)
		}
		gt := r.RewardModel.GroundTruth
		if r.RewardModel.Style != "rule" || !slices.Equal(gt.Target, q.Answers) || gt.Numeric != q.Numeric {
			t.Errorf("%s: reward_model %+v, want style rule, target %q, numeric %v", where, r.RewardModel, q.Answers, q.Numeric)
		}
		if want := (verlexport.ExtraInfo{Index: int64(i), QuestionID: q.ID, Split: split}); r.ExtraInfo != want {
			t.Errorf("%s: extra_info %+v, want %+v", where, r.ExtraInfo, want)
		}
	}
}

func TestExportVerl(t *testing.T) {
	flashRAG := filepath.Join(t.TempDir(), "nq_dev.jsonl")
	if err := os.WriteFile(flashRAG, []byte(`{"id": "dev_0", "question": "who wrote maria golovin", "golden_answers": ["Gian Carlo Menotti", "Menotti"]}
{"id": "dev_1", "question": "where is mantua", "golden_answers": ["Italy"]}
{"id": "dev_2", "question": "when was karl born", "golden_answers": ["1898"]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	musique, err := qa.LoadEmbedded("musique")
	if err != nil {
		t.Fatal(err)
	}
	fileQs, err := loadQuestions(flashRAG)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		args       []string
		qs         []qa.Question // every question, the validation ones last
		validation int
		dataSource string
		topK       int
		schema     bool
	}{
		{"musique", []string{"--data", "musique", "--held-out", "33"}, musique, 33, "musique", search.DefaultTopK, true},
		{"held-out above the questions", []string{"--data", flashRAG, "--held-out", "5", "--topk", "3"}, fileQs, 2, "nq_dev", 3, true},
		{"no tool schema", []string{"--data", flashRAG, "--held-out", "1", "--tool-schema=false"}, fileQs, 1, "nq_dev", search.DefaultTopK, false},
	}
	for _, tc := range cases {
		dir := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := runCmd(append([]string{"export", "verl", "--out", dir}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		if !strings.Contains(stdout, "agentr1 serve search --corpus mhqa") {
			t.Errorf("%s: output does not say how to serve the corpus:\n%s", tc.name, stdout)
		}
		train, validation := readExport(t, dir)
		n := len(tc.qs) - tc.validation
		checkExportRows(t, tc.name, "train", train, tc.qs[:n], tc.dataSource, tc.topK, tc.schema)
		checkExportRows(t, tc.name, "validation", validation, tc.qs[n:], tc.dataSource, tc.topK, tc.schema)
	}
}

// TestExportVerlWorld exports the default run's training world: its questions as `agentr1
// train` splits them, and its passages as a corpus the search service loads.
func TestExportVerlWorld(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCmd("export", "verl", "--data", "world", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg := pipeline.DefaultConfig()
	w, err := world.New(cfg.TrainWorld)
	if err != nil {
		t.Fatal(err)
	}
	qs := w.Questions()
	heldout, _ := pipeline.EvalQuestions(cfg, w, w)
	n := len(qs) - len(heldout)
	train, validation := readExport(t, dir)
	checkExportRows(t, "world", "train", train, qs[:n], "world", cfg.SearchTopK, true)
	checkExportRows(t, "world", "validation", validation, heldout, "world", cfg.SearchTopK, true)
	corpus := filepath.Join(dir, "corpus.jsonl")
	passages, err := search.LoadCorpus(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(passages, w.Passages) {
		t.Errorf("corpus.jsonl holds %d passages, not the world's %d", len(passages), len(w.Passages))
	}
	if !strings.Contains(stdout, "agentr1 serve search --corpus "+corpus) {
		t.Errorf("output does not say how to serve the corpus:\n%s", stdout)
	}
}

func TestExportVerlErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"id": "a", "question": "q", "answers": ["x"]}`+"\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(one, []byte(`{"id": "a", "question": "q", "answers": ["x"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cases := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no format", []string{"export"}, 2, `the only format is "verl"`},
		{"unknown format", []string{"export", "csv", "--data", "hotpotqa", "--out", out}, 2, `the only format is "verl"`},
		{"no data", []string{"export", "verl", "--out", out}, 2, "--data is required"},
		{"no out", []string{"export", "verl", "--data", "hotpotqa"}, 2, "--out is required"},
		{"unknown data", []string{"export", "verl", "--data", "hotpot", "--out", out}, 2, `--data "hotpot": want world, hotpotqa, 2wiki, musique or a question FILE`},
		{"data is a folder", []string{"export", "verl", "--data", dir, "--out", out}, 2, "is a folder"},
		{"bad line", []string{"export", "verl", "--data", bad, "--out", out}, 1, bad + ":2: bad JSON"},
		{"one question", []string{"export", "verl", "--data", one, "--out", out}, 1, "1 question; want at least 2"},
		{"held-out 0", []string{"export", "verl", "--data", "hotpotqa", "--out", out, "--held-out", "0"}, 2, "--held-out 0: want at least 1"},
		{"negative topk", []string{"export", "verl", "--data", "hotpotqa", "--out", out, "--topk", "-1"}, 2, "--topk -1"},
	}
	for _, tc := range cases {
		code, _, stderr := runCmd(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, code, stderr, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s behind (%v)", out, err)
	}
}
