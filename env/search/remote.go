package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Remote is a Retriever backed by a Search-R1-compatible retrieval server (this package's
// NewHandler, or Search-R1's own e5/FAISS or BM25 server), queried one query per request with
// scores asked for. It is safe for concurrent use.
type Remote struct {
	URL    string       // the retrieve endpoint, e.g. "http://127.0.0.1:8000/retrieve"
	Client *http.Client // http.DefaultClient's transport with a 30 s timeout by default
	// MaxAnswerBytes bounds the server's answer; a longer one is an error, not read further.
	// <= 0 means DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
}

// DefaultMaxAnswerBytes is the largest retrieval answer a Remote reads: 64 MiB, far above
// top-k passages of any real corpus.
const DefaultMaxAnswerBytes = 64 << 20

// NewRemote returns a Remote for the retrieve endpoint url.
func NewRemote(url string) *Remote {
	return &Remote{URL: url, Client: &http.Client{Timeout: 30 * time.Second}}
}

// Check asks the service one query ("test", top 1) and returns its error: a command that will
// search through r calls it first, so an unreachable or wrong URL stops it at once instead of
// turning every tool call of a whole evaluation into an error observation.
func (r *Remote) Check(ctx context.Context) error {
	if _, err := r.Retrieve(ctx, "test", 1); err != nil {
		return fmt.Errorf("the retrieval service does not answer: %w", err)
	}
	return nil
}

// remoteItem accepts one result in any of the forms servers send: {"document": {...},
// "score": s} or the document alone, as {"id", "contents"} or {"id", "title", "text"}.
type remoteItem struct {
	Document *remoteDoc `json:"document"`
	Score    float64    `json:"score"`
	remoteDoc
}

type remoteDoc struct {
	ID       string  `json:"id"`
	Contents *string `json:"contents"`
	Title    string  `json:"title"`
	Text     string  `json:"text"`
}

func (d remoteDoc) passage() Passage {
	if d.Contents != nil {
		title, text := ParseContents(*d.Contents)
		return Passage{ID: d.ID, Title: title, Text: text}
	}
	return Passage{ID: d.ID, Title: d.Title, Text: d.Text}
}

// Retrieve implements Retriever: it POSTs {"queries": [query], "topk": k, "return_scores":
// true} and reads the first result list. A non-200 answer is an error carrying the server's
// message.
func (r *Remote) Retrieve(ctx context.Context, query string, k int) ([]Retrieved, error) {
	body, err := json.Marshal(RetrieveRequest{Queries: []string{query}, TopK: &k, ReturnScores: true})
	if err != nil {
		return nil, fmt.Errorf("remote search: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("remote search: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote search: %w", err)
	}
	defer resp.Body.Close()
	limit := r.MaxAnswerBytes
	if limit <= 0 {
		limit = DefaultMaxAnswerBytes
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("remote search %s: reading answer: %w", r.URL, err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("remote search %s: %s: answer over MaxAnswerBytes (%d bytes)", r.URL, resp.Status, limit)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorResponse
		msg := string(bytes.TrimSpace(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return nil, fmt.Errorf("remote search %s: %s: %s", r.URL, resp.Status, msg)
	}
	var answer struct {
		Result [][]remoteItem `json:"result"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, fmt.Errorf("remote search %s: malformed answer: %w", r.URL, err)
	}
	if len(answer.Result) != 1 {
		return nil, fmt.Errorf("remote search %s: %d result lists for 1 query", r.URL, len(answer.Result))
	}
	items := answer.Result[0]
	out := make([]Retrieved, 0, min(len(items), k))
	for _, it := range items[:min(len(items), k)] {
		doc := it.remoteDoc
		if it.Document != nil {
			doc = *it.Document
		}
		out = append(out, Retrieved{Passage: doc.passage(), Score: it.Score})
	}
	return out, nil
}
