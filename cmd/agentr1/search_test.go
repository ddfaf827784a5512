package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// searchFixture writes a four-passage corpus (agentr1 format) and two questions.
func searchFixture(t *testing.T) (corpus, questions string) {
	t.Helper()
	dir := t.TempDir()
	corpus = filepath.Join(dir, "corpus.jsonl")
	questions = filepath.Join(dir, "questions.jsonl")
	passages := `{"id": "p0", "title": "Gian Carlo Menotti", "text": "Gian Carlo Menotti was an Italian-American composer."}
{"id": "p1", "title": "Maria Golovin", "text": "Maria Golovin is an opera by Gian Carlo Menotti."}
{"id": "p2", "title": "Shining Brow", "text": "Shining Brow is an opera by Daron Hagen."}
{"id": "p3", "title": "Frank Lloyd Wright", "text": "Frank Lloyd Wright was an American architect."}
`
	qs := `{"id": "q1", "question": "Who composed Maria Golovin?", "paragraphs": [{"pid": "p1", "is_supporting": true}, {"pid": "p0", "is_supporting": true}, {"pid": "p2", "is_supporting": false}]}
{"id": "q2", "question": "Which architect inspired Shining Brow?", "paragraphs": [{"pid": "p2", "is_supporting": true}, {"pid": "p3", "is_supporting": true}]}
`
	if err := os.WriteFile(corpus, []byte(passages), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(questions, []byte(qs), 0o644); err != nil {
		t.Fatal(err)
	}
	return corpus, questions
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

var evalOutput = regexp.MustCompile(`^# 2 questions, 2\.0 supporting passages each on average\. recall@K: all = the share of questions with every supporting passage in the top K, any = with at least one
# ms/query = the mean time of one search; index_s = seconds (building the index from --corpus|loading --index)
recall@1 all=[01]\.\d{3} any=[01]\.\d{3}
recall@3 all=[01]\.\d{3} any=[01]\.\d{3}
recall@5 all=1\.000 any=1\.000
recall@10 all=1\.000 any=1\.000
ms/query=\d+\.\d{4}
index_s=\d+\.\d{3}
$`)

func TestSearchCommands(t *testing.T) {
	corpus, questions := searchFixture(t)
	index := filepath.Join(t.TempDir(), "ix.bm25")
	code, out, errs := runCmd("index", "--corpus", corpus, "--out", index)
	if code != 0 || !strings.HasPrefix(out, "indexed 4 passages: ") {
		t.Fatalf("index: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, args := range [][]string{
		{"search", "--corpus", corpus, "--eval", questions},
		{"search", "--index", index, "--eval", questions},
		{"search", "--index", index, "--corpus", corpus, "--eval", questions, "--k1", "0.9", "--b", "0.4"},
	} {
		code, out, errs := runCmd(args...)
		if code != 0 || !evalOutput.MatchString(out) {
			t.Errorf("%v: exit %d, stdout:\n%s\nstderr: %s", args, code, out, errs)
		}
	}
	code, out, _ = runCmd("search", "--corpus", corpus, "--query", "Maria Golovin opera", "--k", "1")
	if want := "Doc 1 (Title: \"Maria Golovin\") Maria Golovin is an opera by Gian Carlo Menotti.\n  id=p1 score="; code != 0 || !strings.HasPrefix(out, want) || strings.Count(out, "Doc ") != 1 {
		t.Errorf("search --query: exit %d, stdout %q", code, out)
	}

	failures := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"index without --out", []string{"index", "--corpus", corpus}, 2, "--corpus and --out are required"},
		{"search without source", []string{"search", "--eval", questions}, 2, "give --corpus or --index"},
		{"search without mode", []string{"search", "--corpus", corpus}, 2, "exactly one of --query and --eval"},
		{"search with both modes", []string{"search", "--corpus", corpus, "--query", "x", "--eval", questions}, 2, "exactly one"},
		{"search bad b", []string{"search", "--corpus", corpus, "--query", "x", "--b", "2"}, 2, "out of range"},
		{"search missing corpus", []string{"search", "--corpus", filepath.Join(t.TempDir(), "nope.jsonl"), "--query", "x"}, 1, "nope.jsonl"},
		{"index of another corpus", []string{"search", "--index", index, "--corpus", "mhqa", "--query", "x"}, 1, "does not match corpus mhqa"},
		{"serve without service", []string{"serve", "--corpus", corpus}, 2, `the only service is "search"`},
		{"serve bad limits", []string{"serve", "search", "--corpus", corpus, "--topk", "9", "--max-topk", "5"}, 2, "--topk at most --max-topk"},
	}
	for _, f := range failures {
		code, _, errs := runCmd(f.args...)
		if code != f.code || !strings.Contains(errs, f.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %q", f.name, code, errs, f.code, f.msg)
		}
	}
}

// lineWaiter is a log writer that hands each written line to a channel.
type lineWaiter struct {
	mu    sync.Mutex
	lines chan string
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines <- string(p)
	return len(p), nil
}

func TestServeSearchCommand(t *testing.T) {
	corpus, _ := searchFixture(t)
	var opt serveOptions
	fs := newFlagSet(commands["serve"], &bytes.Buffer{})
	serveFlags(&opt)(fs)
	if err := fs.Parse([]string{"--corpus", corpus, "--addr", "127.0.0.1:0", "--drain", "2s"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := &lineWaiter{lines: make(chan string, 4)}
	logger, err := newLogger(log, logText)
	if err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	done := make(chan error, 1)
	go func() { done <- runServeSearch(ctx, opt, logger) }()
	var started string
	select {
	case started = <-log.lines:
	case err := <-done:
		t.Fatalf("serve returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	url := regexp.MustCompile(`http://[^\s"]+/retrieve`).FindString(started)
	if !strings.Contains(started, `level=INFO msg="serving 4 passages`) || url == "" {
		t.Fatalf("start line %q", started)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"queries": ["Daron Hagen"], "topk": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Result [][]struct{ ID, Contents string }
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || len(answer.Result) != 1 || len(answer.Result[0]) != 1 || answer.Result[0][0].ID != "p2" {
		t.Errorf("retrieve answer %+v, %v", answer, err)
	}
	// One compute token per core, and one P more for the network and /healthz.
	if got := runtime.GOMAXPROCS(0); got != procs+1 {
		t.Errorf("serving with GOMAXPROCS %d, want %d (one per core and one for the network)", got, procs+1)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after cancel: %v", err)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after serve returned, want %d as before", got, procs)
	}
	if stopped := <-log.lines; !strings.Contains(stopped, `msg="search service stopped"`) {
		t.Errorf("stop line %q", stopped)
	}
}
