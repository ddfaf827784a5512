package search

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzLimits are small so that every limit is within the fuzzer's reach.
var fuzzLimits = Limits{MaxBodyBytes: 2048, MaxQueries: 4, MaxQueryBytes: 64, MaxTopK: 10, DefaultTopK: 3, MaxResults: 1000, MaxInFlight: 1000}

// acceptable is the retrieval API's contract for a request body (server.go), restated: valid
// UTF-8, one JSON object with only the fields "queries", "topk" and "return_scores" and
// nothing after it, 1 to MaxQueries queries, none blank or over MaxQueryBytes, topk absent or
// in [1, MaxTopK]. It returns the request and the topk in effect.
func acceptable(body []byte, lim Limits) (RetrieveRequest, int, bool) {
	var r RetrieveRequest
	if !utf8.Valid(body) {
		return r, 0, false // JSON text is UTF-8 (RFC 8259 section 8.1)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&r) != nil {
		return r, 0, false
	}
	if len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) > 0 {
		return r, 0, false // anything but JSON whitespace after the object
	}
	if len(r.Queries) == 0 || len(r.Queries) > lim.MaxQueries {
		return r, 0, false
	}
	for _, q := range r.Queries {
		if strings.TrimSpace(q) == "" || len(q) > lim.MaxQueryBytes {
			return r, 0, false
		}
	}
	if r.TopK == nil {
		return r, lim.DefaultTopK, true
	}
	return r, *r.TopK, *r.TopK >= 1 && *r.TopK <= lim.MaxTopK
}

// FuzzRetrieveRequest posts arbitrary bodies to the retrieval handler. The status must be 200,
// 400 or 413 (never 500, never a panic); 413 exactly when the body is over MaxBodyBytes; 200
// exactly for the bodies the API accepts (acceptable); every refusal carries {"error": ...};
// and a 200 answer holds one list per query, each the index's top-k ids in order, with scores
// when asked for. Run longer with `go test -run '^$' -fuzz '^FuzzRetrieveRequest$' ./env/search/`.
func FuzzRetrieveRequest(f *testing.F) {
	f.Add([]byte(`{"queries": ["opera composer", "football club"], "topk": 3, "return_scores": true}`))
	f.Add([]byte(`{"queries": ["film"]}`))
	f.Add([]byte(`{"Queries": ["film"], "TOPK": 10}`))
	f.Add([]byte(`{"queries": ["a", "b", "c", "d", "e"]}`))
	f.Add([]byte(`{"queries": ["x"], "topk": 0} `))
	f.Add([]byte(`{"queries": ["x"], "topk": 1e2}`))
	f.Add([]byte(`{"queries": [" \u00a0"], "return_scores": null}`))
	f.Add([]byte(`{"queries": ["x"]}{}`))
	f.Add([]byte("{\"queries\": [\"opera\"]}\u00a0")) // Unicode space after the object is not JSON whitespace
	f.Add([]byte(`{"queries": ["x"], "queries": null}`))
	f.Add([]byte("{\"queries\": [\"op\xe9ra\"]}")) // Latin-1, not UTF-8
	f.Add([]byte(`{"queries": ["` + strings.Repeat("opera ", 400) + `"]}`))
	f.Add([]byte("\xef\xbb\xbf{\"queries\": [\"\xff\"]}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		fx, err := loadIndex()
		if err != nil {
			t.Fatal(err)
		}
		h := NewHandler(fx.ix, fuzzLimits)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/retrieve", bytes.NewReader(body)))
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("status %d with Content-Type %q", rec.Code, ct)
		}
		if int64(len(body)) > fuzzLimits.MaxBodyBytes {
			if rec.Code != 413 {
				t.Fatalf("%d-byte body: status %d, want 413", len(body), rec.Code)
			}
			return
		}
		req, topK, ok := acceptable(body, fuzzLimits)
		if rec.Code != 200 {
			var e errorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("status %d with body %q", rec.Code, rec.Body)
			}
			if rec.Code != 400 || ok {
				t.Fatalf("body %q: status %d (%s), acceptable %v", body, rec.Code, e.Error, ok)
			}
			return
		}
		if !ok {
			t.Fatalf("body %q: status 200 for a request the API refuses", body)
		}
		var ans struct{ Result [][]json.RawMessage }
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || len(ans.Result) != len(req.Queries) {
			t.Fatalf("body %q: answer %s (%v), want %d lists", body, rec.Body, err, len(req.Queries))
		}
		for qi, list := range ans.Result {
			var want, got []string
			for _, hit := range fx.ix.Search(req.Queries[qi], topK) {
				want = append(want, fx.ix.Passage(hit.Doc).ID)
			}
			for _, raw := range list {
				var d struct {
					Document *Document
					Score    *float64
					ID       string
				}
				if err := json.Unmarshal(raw, &d); err != nil || req.ReturnScores != (d.Document != nil && d.Score != nil) {
					t.Fatalf("query %d: document %s (%v) with return_scores %v", qi, raw, err, req.ReturnScores)
				}
				if d.Document != nil {
					d.ID = d.Document.ID
				}
				got = append(got, d.ID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("query %q topk %d: ids %v, want %v", req.Queries[qi], topK, got, want)
			}
		}
	})
}
