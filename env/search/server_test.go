package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func testHandler(t *testing.T) (http.Handler, *Index) {
	t.Helper()
	ix, err := Build(smallCorpus(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxBodyBytes: 400, MaxQueries: 3, MaxQueryBytes: 40, MaxTopK: 4, DefaultTopK: 2, MaxResults: 10, MaxInFlight: 1000}
	return NewHandler(ix, lim), ix
}

func do(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

func TestHandlerRetrieve(t *testing.T) {
	h, ix := testHandler(t)
	doc := func(d int) Document {
		p := ix.Passage(d)
		return Document{ID: p.ID, Contents: Contents(p)}
	}
	hits := func(q string, k int) []Hit { return ix.Search(q, k) }

	// With scores: one list per query, topk as asked.
	rec := do(h, "POST", "/retrieve", `{"queries": ["Maria Golovin", "Daron Hagen opera"], "topk": 3, "return_scores": true}`)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("scores: status %d, type %q, body %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var scored struct{ Result [][]ScoredDocument }
	if err := json.Unmarshal(rec.Body.Bytes(), &scored); err != nil {
		t.Fatal(err)
	}
	var want [][]ScoredDocument
	for _, q := range []string{"Maria Golovin", "Daron Hagen opera"} {
		var list []ScoredDocument
		for _, hit := range hits(q, 3) {
			list = append(list, ScoredDocument{Document: doc(hit.Doc), Score: float64(hit.Score)})
		}
		want = append(want, list)
	}
	if !reflect.DeepEqual(scored.Result, want) {
		t.Errorf("scores: result %+v, want %+v", scored.Result, want)
	}

	// Without scores: bare documents, the default topk, a query matching nothing gives [].
	rec = do(h, "POST", "/retrieve", `{"queries": ["Menotti", "zebra"]}`)
	if rec.Code != 200 {
		t.Fatalf("no scores: status %d, body %s", rec.Code, rec.Body)
	}
	var bare struct{ Result [][]Document }
	if err := json.Unmarshal(rec.Body.Bytes(), &bare); err != nil {
		t.Fatal(err)
	}
	wantBare := [][]Document{{}, {}}
	for _, hit := range hits("Menotti", 2) {
		wantBare[0] = append(wantBare[0], doc(hit.Doc))
	}
	if !reflect.DeepEqual(bare.Result, wantBare) || !strings.Contains(rec.Body.String(), `[]]}`) {
		t.Errorf("no scores: result %s, want %+v", rec.Body, wantBare)
	}

	rec = do(h, "GET", "/healthz", "")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Errorf("healthz: %d %s", rec.Code, rec.Body)
	}
}

func TestHandlerErrors(t *testing.T) {
	h, _ := testHandler(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		message                  string
	}{
		{"malformed JSON", "POST", "/retrieve", `{"queries": [`, 400, "malformed request"},
		{"not an object", "POST", "/retrieve", `["q"]`, 400, "malformed request"},
		{"wrong field type", "POST", "/retrieve", `{"queries": "just one"}`, 400, "malformed request"},
		{"unknown field", "POST", "/retrieve", `{"queries": ["q"], "top_k": 3}`, 400, `unknown field "top_k"`},
		{"trailing data", "POST", "/retrieve", `{"queries": ["q"]} {"queries": ["r"]}`, 400, "data after the JSON object"},
		{"non-JSON space after", "POST", "/retrieve", "{\"queries\": [\"q\"]}\u00a0", 400, "data after the JSON object"},
		{"empty body", "POST", "/retrieve", ``, 400, "malformed request"},
		{"no queries", "POST", "/retrieve", `{"topk": 3}`, 400, "non-empty list"},
		{"empty queries", "POST", "/retrieve", `{"queries": []}`, 400, "non-empty list"},
		{"too many queries", "POST", "/retrieve", `{"queries": ["a", "b", "c", "d"]}`, 400, "4 queries, at most 3"},
		{"blank query", "POST", "/retrieve", `{"queries": ["opera", " "]}`, 400, "queries[1] is empty"},
		{"query too long", "POST", "/retrieve", `{"queries": ["` + strings.Repeat("x", 41) + `"]}`, 400, "queries[0] is 41 bytes, at most 40"},
		{"topk zero", "POST", "/retrieve", `{"queries": ["q"], "topk": 0}`, 400, `"topk" 0 out of range [1, 4]`},
		{"topk negative", "POST", "/retrieve", `{"queries": ["q"], "topk": -2}`, 400, "out of range"},
		{"topk too large", "POST", "/retrieve", `{"queries": ["q"], "topk": 5}`, 400, "out of range"},
		{"topk not an integer", "POST", "/retrieve", `{"queries": ["q"], "topk": 2.5}`, 400, "malformed request"},
		{"invalid UTF-8", "POST", "/retrieve", "{\"queries\": [\"op\xffera\"]}", 400, "not valid UTF-8 (byte 16)"},
		{"too many passages", "POST", "/retrieve", `{"queries": ["a", "b", "c"], "topk": 4}`, 413, "3 queries x topk 4 = 12 passages, at most 10"},
		{"body too large", "POST", "/retrieve", `{"queries": ["` + strings.Repeat("x", 500) + `"]}`, 413, "over 400 bytes"},
		{"GET retrieve", "GET", "/retrieve", ``, 405, "takes POST"},
		{"POST healthz", "POST", "/healthz", ``, 405, "takes GET"},
		{"unknown path", "GET", "/search", ``, 404, "no such endpoint /search"},
	}
	for _, c := range cases {
		rec := do(h, c.method, c.path, c.body)
		var e errorResponse
		err := json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != c.status || err != nil || !strings.Contains(e.Error, c.message) {
			t.Errorf("%s: %d %s, want %d with an error containing %q", c.name, rec.Code, rec.Body, c.status, c.message)
		}
	}
}

// failingRetriever fails every query, for the 500 path.
type failingRetriever struct{}

func (failingRetriever) Retrieve(context.Context, string, int) ([]Retrieved, error) {
	return nil, errors.New("backend down")
}

func TestHandlerRetrieverFailure(t *testing.T) {
	h := NewHandler(failingRetriever{}, DefaultLimits())
	rec := do(h, "POST", "/retrieve", `{"queries": ["q"]}`)
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "backend down") {
		t.Errorf("failing retriever: %d %s", rec.Code, rec.Body)
	}
}

func TestNewHandlerPanicsOnBadLimits(t *testing.T) {
	bad := DefaultLimits()
	bad.DefaultTopK = bad.MaxTopK + 1
	defer func() {
		if recover() == nil {
			t.Error("NewHandler with DefaultTopK > MaxTopK did not panic")
		}
	}()
	NewHandler(failingRetriever{}, bad)
}

// TestRemoteSearch runs the search tool against this package's service over HTTP and checks
// it answers exactly like the local tool.
func TestRemoteSearch(t *testing.T) {
	h, ix := testHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	remote := NewRemoteSearch(srv.URL+"/retrieve", 3)
	local := NewTool(ix, 3)
	for _, q := range []string{"Maria Golovin", "American composer opera", "zebra"} {
		args := map[string]any{"query": q}
		rText, rIDs, err := remote.CallPassages(context.Background(), args)
		if err != nil {
			t.Fatalf("query %q: %v", q, err)
		}
		lText, lIDs, _ := local.CallPassages(context.Background(), args)
		if rText != lText || !reflect.DeepEqual(rIDs, lIDs) {
			t.Errorf("query %q: remote %q %v, local %q %v", q, rText, rIDs, lText, lIDs)
		}
	}
	got, err := remote.Retriever.Retrieve(context.Background(), "Maria Golovin", 1)
	if err != nil || len(got) != 1 || got[0].Score != float64(ix.Search("Maria Golovin", 1)[0].Score) {
		t.Errorf("remote scores: %+v %v", got, err)
	}
	// The server's refusal reaches the caller with its message.
	tooMany := NewRemoteSearch(srv.URL+"/retrieve", 9)
	if _, _, err := tooMany.CallPassages(context.Background(), map[string]any{"query": "opera"}); err == nil ||
		!strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "out of range [1, 4]") {
		t.Errorf("topk over the server's limit: error %v", err)
	}
}

// TestRemoteAnswerForms checks that Remote reads every result form Search-R1-style servers send
// and rejects malformed answers.
func TestRemoteAnswerForms(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		status int
		want   []Retrieved
		err    string
	}{
		{"scored contents", `{"result": [[{"document": {"id": "7", "contents": "\"T\"\nbody"}, "score": 1.5}]]}`, 200,
			[]Retrieved{{Passage: Passage{ID: "7", Title: "T", Text: "body"}, Score: 1.5}}, ""},
		{"bare contents", `{"result": [[{"id": "7", "contents": "\"T\"\nbody"}, {"id": "8", "contents": "x"}]]}`, 200,
			[]Retrieved{{Passage: Passage{ID: "7", Title: "T", Text: "body"}}, {Passage: Passage{ID: "8", Text: "x"}}}, ""},
		{"title and text", `{"result": [[{"document": {"id": "7", "title": "T", "text": "body"}, "score": 2}]]}`, 200,
			[]Retrieved{{Passage: Passage{ID: "7", Title: "T", Text: "body"}, Score: 2}}, ""},
		{"more than asked is cut", `{"result": [[{"id": "1", "contents": "a"}, {"id": "2", "contents": "b"}, {"id": "3", "contents": "c"}]]}`, 200,
			[]Retrieved{{Passage: Passage{ID: "1", Text: "a"}}, {Passage: Passage{ID: "2", Text: "b"}}}, ""},
		{"not JSON", `<html>`, 200, nil, "malformed answer"},
		{"two lists", `{"result": [[], []]}`, 200, nil, "2 result lists for 1 query"},
		{"server error text", `internal failure`, 500, nil, "500 Internal Server Error: internal failure"},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req RetrieveRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Queries) != 1 || req.TopK == nil || *req.TopK != 2 || !req.ReturnScores {
				http.Error(w, fmt.Sprintf("bad request from Remote: %+v %v", req, err), 400)
				return
			}
			w.WriteHeader(c.status)
			io.WriteString(w, c.answer)
		}))
		got, err := NewRemote(srv.URL).Retrieve(context.Background(), "q", 2)
		srv.Close()
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	if _, err := NewRemote("http://127.0.0.1:1/retrieve").Retrieve(context.Background(), "q", 2); err == nil {
		t.Error("Remote to a closed port succeeded")
	}

	// An answer over MaxAnswerBytes is refused naming the limit; one of exactly that size is read.
	answer := `{"result": [[{"id": "7", "contents": "` + strings.Repeat("x", 100) + `"}]]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, answer) }))
	defer srv.Close()
	for _, limit := range []int64{int64(len(answer)) - 1, int64(len(answer))} {
		remote := NewRemote(srv.URL)
		remote.MaxAnswerBytes = limit
		got, err := remote.Retrieve(context.Background(), "q", 2)
		want := fmt.Sprintf("answer over MaxAnswerBytes (%d bytes)", limit)
		if limit < int64(len(answer)) && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("answer of %d bytes, limit %d: error %v, want one containing %q", len(answer), limit, err, want)
		}
		if limit == int64(len(answer)) && (err != nil || len(got) != 1) {
			t.Errorf("answer of exactly the limit %d: %v, %v", limit, got, err)
		}
	}
}

// gateRetriever blocks each query until released, to hold a request in flight.
type gateRetriever struct {
	started chan struct{}
	release chan struct{}
}

func (s gateRetriever) Retrieve(ctx context.Context, q string, k int) ([]Retrieved, error) {
	s.started <- struct{}{}
	<-s.release
	return []Retrieved{{Passage: Passage{ID: "x", Title: "T", Text: q}}}, nil
}

// TestListenAndServeDrains cancels the server's context while a request is in flight and
// checks that the request still completes and ListenAndServe returns cleanly afterwards.
func TestListenAndServeDrains(t *testing.T) {
	gate := gateRetriever{started: make(chan struct{}), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	addrCh := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- ListenAndServe(ctx, "127.0.0.1:0", NewHandler(gate, DefaultLimits()), 5*time.Second, func(a net.Addr) { addrCh <- a })
	}()
	url := "http://" + (<-addrCh).String() + "/retrieve"

	var wg sync.WaitGroup
	var got []Retrieved
	var reqErr error
	wg.Go(func() { got, reqErr = NewRemote(url).Retrieve(context.Background(), "in flight", 1) })
	<-gate.started
	cancel()
	select {
	case err := <-served:
		t.Fatalf("ListenAndServe returned %v before the in-flight request finished", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(gate.release)
	wg.Wait()
	if reqErr != nil || len(got) != 1 || got[0].Text != "in flight" {
		t.Errorf("in-flight request: %+v %v", got, reqErr)
	}
	if err := <-served; err != nil {
		t.Errorf("ListenAndServe: %v", err)
	}
	if _, err := NewRemote(url).Retrieve(context.Background(), "after", 1); err == nil {
		t.Error("the server still answers after shutdown")
	}
	if err := ListenAndServe(context.Background(), "256.0.0.1:bad", NewHandler(gate, DefaultLimits()), time.Second, nil); err == nil {
		t.Error("ListenAndServe on a bad address succeeded")
	}
}

// blockingRetriever holds every Retrieve until release is closed, counting the calls begun.
type blockingRetriever struct {
	begun   chan struct{}
	release chan struct{}
}

func (b *blockingRetriever) Retrieve(ctx context.Context, q string, k int) ([]Retrieved, error) {
	b.begun <- struct{}{}
	<-b.release
	return nil, nil
}

// TestHandlerInFlight: past MaxInFlight requests being answered, the next is refused at once
// with 429, Retry-After and a JSON error, /healthz still answers, and once a slot frees the
// next request is served.
func TestHandlerInFlight(t *testing.T) {
	r := &blockingRetriever{begun: make(chan struct{}, 8), release: make(chan struct{})}
	lim := Limits{MaxBodyBytes: 400, MaxQueries: 3, MaxQueryBytes: 40, MaxTopK: 4, DefaultTopK: 2, MaxResults: 10, MaxInFlight: 2}
	h := NewHandler(r, lim)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = do(h, "POST", "/retrieve", `{"queries": ["opera"]}`).Code
		}()
	}
	<-r.begun
	<-r.begun // both slots are taken
	rec := do(h, "POST", "/retrieve", `{"queries": ["opera"]}`)
	var e errorResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != 429 || err != nil ||
		rec.Header().Get("Retry-After") != "1" || !strings.Contains(e.Error, "2 requests in flight") {
		t.Errorf("third request: %d %q %s, want 429 with Retry-After 1 and a JSON error", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := do(h, "GET", "/healthz", ""); rec.Code != 200 {
		t.Errorf("healthz while full: %d", rec.Code)
	}
	close(r.release)
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Errorf("the two requests in flight: %v, want 200 200", codes)
	}
	if rec := do(h, "POST", "/retrieve", `{"queries": ["opera"]}`); rec.Code != 200 {
		t.Errorf("after the slots freed: %d %s", rec.Code, rec.Body)
	}
}

// TestHandlerStreamsAnswer: the answer written one query at a time is byte for byte what
// encoding the whole answer at once gives, and a worst-case request under the default limits
// (512 queries, 16 passages each = 8,192, the most allowed) is never whole in memory.
func TestHandlerStreamsAnswer(t *testing.T) {
	fx, err := loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	h := NewHandler(fx.ix, lim)
	queries := make([]string, lim.MaxQueries)
	for i := range queries {
		queries[i] = loadQueries[i%len(loadQueries)] + strings.Repeat(" opera", 40)
	}
	topK := lim.MaxResults / lim.MaxQueries
	for _, scores := range []bool{true, false} {
		body, _ := json.Marshal(RetrieveRequest{Queries: queries, TopK: &topK, ReturnScores: scores})
		rec := do(h, "POST", "/retrieve", string(body))
		if rec.Code != 200 {
			t.Fatalf("scores=%v: %d %.200s", scores, rec.Code, rec.Body)
		}
		results := make([][]any, len(queries))
		for i, q := range queries {
			found, _ := fx.ix.Retrieve(context.Background(), q, topK)
			results[i] = []any{}
			for _, f := range found {
				doc := Document{ID: f.ID, Contents: Contents(f.Passage)}
				if scores {
					results[i] = append(results[i], ScoredDocument{Document: doc, Score: f.Score})
				} else {
					results[i] = append(results[i], doc)
				}
			}
		}
		var want strings.Builder
		json.NewEncoder(&want).Encode(map[string]any{"result": results})
		if rec.Body.String() != want.String() {
			t.Errorf("scores=%v: the streamed answer (%d bytes) differs from the whole one (%d bytes)", scores, rec.Body.Len(), want.Len())
		}
	}

	// Written in pieces, a query's list at a time (json.Encoder writes the whole answer in
	// one Write, built whole in memory first): the largest Write is one list, not the answer.
	body, _ := json.Marshal(RetrieveRequest{Queries: queries, TopK: &topK, ReturnScores: true})
	w := discardWriter{header: http.Header{}}
	h.ServeHTTP(&w, httptest.NewRequest("POST", "/retrieve", strings.NewReader(string(body))))
	if w.status != 200 || w.n < 4<<20 {
		t.Fatalf("worst-case request: status %d, %d bytes written", w.status, w.n)
	}
	if w.largest > 64<<10 {
		t.Errorf("worst-case request: %d KB of answer written with a largest Write of %d KB, want one query's list (under 64 KB)", w.n>>10, w.largest>>10)
	}
}

// discardWriter is an http.ResponseWriter that counts and drops what is written.
type discardWriter struct {
	header  http.Header
	status  int
	n       int // bytes written
	largest int // the largest single Write
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(s int)   { w.status = s }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	w.n += len(b)
	w.largest = max(w.largest, len(b))
	return len(b), nil
}

// BenchmarkHandlerWorstCase answers the costliest valid request under the default limits (512
// queries of about 2 KB, topk 16) into a writer that drops the answer, and reports the bytes
// allocated per request: what the garbage collector must reclaim while 64 of them are in
// flight.
func BenchmarkHandlerWorstCase(b *testing.B) {
	fx, err := loadIndex()
	if err != nil {
		b.Fatal(err)
	}
	lim := DefaultLimits()
	h := NewHandler(fx.ix, lim)
	body := worstCaseBody(lim)
	b.ReportAllocs()
	for b.Loop() {
		w := discardWriter{header: http.Header{}}
		h.ServeHTTP(&w, httptest.NewRequest("POST", "/retrieve", bytes.NewReader(body)))
		if w.status != 200 {
			b.Fatalf("status %d", w.status)
		}
	}
}
