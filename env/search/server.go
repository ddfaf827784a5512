package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The retrieval API of Search-R1's retrieval server (search_r1/search/retrieval_server.py),
// which RemoteSearch speaks and NewHandler serves:
//
//	POST /retrieve  {"queries": ["q1", ...], "topk": 5, "return_scores": true}
//	-> 200 {"result": [[{"document": {"id": "...", "contents": "\"Title\"\ntext"}, "score": 7.1}, ...], ...]}
//
// one list per query, best first; with "return_scores" false or absent each list holds the
// documents alone: [[{"id", "contents"}, ...], ...].

// RetrieveRequest is the body of POST /retrieve.
type RetrieveRequest struct {
	Queries      []string `json:"queries"`        // the queries, answered in order
	TopK         *int     `json:"topk,omitempty"` // nil: the server's default
	ReturnScores bool     `json:"return_scores"`  // answer with ScoredDocuments, not Documents
}

// Document is a passage as the retrieval API carries it; Contents is "\"<title>\"\n<text>".
type Document struct {
	ID       string `json:"id"`       // the passage's id
	Contents string `json:"contents"` // the quoted title, a newline, the text
}

// ScoredDocument is one result when scores are asked for.
type ScoredDocument struct {
	Document Document `json:"document"` // the passage
	Score    float64  `json:"score"`    // the retriever's score for the query
}

// errorResponse is the body of every non-200 answer.
type errorResponse struct {
	Error string `json:"error"`
}

// Limits bound what one request, and all requests at once, may ask of the server.
type Limits struct {
	MaxBodyBytes  int64 // request body size
	MaxQueries    int   // queries per request
	MaxQueryBytes int   // bytes per query
	MaxTopK       int   // largest topk
	DefaultTopK   int   // topk when the request gives none
	// MaxResults bounds queries x topk, the passages one answer may hold: the answer is
	// written as it is encoded, but the retrieved passages of a request are held until then.
	MaxResults int
	// MaxInFlight bounds the /retrieve requests being answered at once; one more is refused
	// with 429 at once (and Retry-After), so memory stays bounded however many clients come.
	MaxInFlight int
	// Compute is how many requests are decoded, queries searched or answers encoded at once;
	// 0 means GOMAXPROCS. Below GOMAXPROCS, a P is always left to the network and /healthz:
	// with every P searching, the runtime looks for network events only every 10 ms (sysmon)
	// and queues them behind the searches. `agentr1 serve search` runs GOMAXPROCS = Compute + 1
	// for this, with Compute one per core.
	Compute int
}

// computeSlots is Compute, or GOMAXPROCS when it is 0.
func (l Limits) computeSlots() int {
	if l.Compute > 0 {
		return l.Compute
	}
	return runtime.GOMAXPROCS(0)
}

// DefaultLimits are the limits `agentr1 serve search` starts with: 1 MiB bodies, 512 queries
// of at most 4 KiB, topk up to 100, default 5, at most 8,192 passages an answer and 64
// requests in flight. 64 worst-case requests in flight stay under 1 GB resident (FUZZING.md).
func DefaultLimits() Limits {
	return Limits{MaxBodyBytes: 1 << 20, MaxQueries: 512, MaxQueryBytes: 4096, MaxTopK: 100,
		DefaultTopK: DefaultTopK, MaxResults: 8192, MaxInFlight: 64}
}

// NewHandler returns the HTTP handler of the retrieval service: POST /retrieve answers with
// r's results, GET /healthz with {"status": "ok"}. Malformed JSON, a body that is not UTF-8
// (JSON text must be, RFC 8259 section 8.1), unknown fields, an empty or oversized query list,
// an empty or oversized query and an out-of-range topk are answered 400, a body over
// MaxBodyBytes or queries x topk over MaxResults 413, a request past MaxInFlight 429, a
// retriever failure 500, all with {"error": "..."}. It panics if Limits.Validate fails.
func NewHandler(r Retriever, limits Limits) http.Handler {
	if err := limits.Validate(); err != nil {
		panic(fmt.Sprintf("search: NewHandler: %v", err))
	}
	s := &service{retriever: r, limits: limits,
		slots: make(chan struct{}, limits.MaxInFlight), cores: make(chan struct{}, limits.computeSlots())}
	mux := http.NewServeMux()
	mux.HandleFunc("/retrieve", s.retrieve)
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint %s (have POST /retrieve, GET /healthz)", req.URL.Path)
	})
	return mux
}

// Validate reports a limit that is not positive, or a DefaultTopK over MaxTopK.
func (l Limits) Validate() error {
	if l.MaxBodyBytes <= 0 || l.MaxQueries <= 0 || l.MaxQueryBytes <= 0 || l.MaxTopK <= 0 ||
		l.DefaultTopK <= 0 || l.MaxResults <= 0 || l.MaxInFlight <= 0 || l.Compute < 0 {
		return fmt.Errorf("invalid limits %+v: every limit must be positive", l)
	}
	if l.DefaultTopK > l.MaxTopK {
		return fmt.Errorf("invalid limits: default topk %d over the largest topk %d", l.DefaultTopK, l.MaxTopK)
	}
	return nil
}

type service struct {
	retriever Retriever
	limits    Limits
	slots     chan struct{} // one token per /retrieve request in flight
	// cores holds one token per query being searched or list being encoded, at most
	// Limits.Compute: requests in flight take turns a query at a time instead of all competing
	// for the cores, so a /healthz between them waits for one query, not for all of them.
	cores chan struct{}
}

// compute runs fn holding one of the cores' tokens.
func (s *service) compute(fn func()) {
	s.cores <- struct{}{}
	defer func() { <-s.cores }()
	fn()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) // a failed write means the client left; nothing to tell it
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, errorResponse{Error: fmt.Sprintf(format, args...)})
}

func (s *service) healthz(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "healthz takes GET, not %s", req.Method)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *service) retrieve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "retrieve takes POST, not %s", req.Method)
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "%d requests in flight, the most this server answers at once; retry", s.limits.MaxInFlight)
		return
	}
	body, err := readBody(w, req, s.limits.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "request body over %d bytes", s.limits.MaxBodyBytes)
			return
		}
		writeError(w, http.StatusBadRequest, "reading request body: %v", err)
		return
	}
	// Decoding a body of up to 1 MiB is work for a core like a search, so it holds a token too.
	var r RetrieveRequest
	var topK int
	s.compute(func() { r, topK, err = s.parse(body) })
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if n := len(r.Queries) * topK; n > s.limits.MaxResults {
		writeError(w, http.StatusRequestEntityTooLarge, "%d queries x topk %d = %d passages, at most %d per request; split the request",
			len(r.Queries), topK, n, s.limits.MaxResults)
		return
	}
	// Retrieve everything first, so a failure is still a 500 and not a cut answer; the
	// retrieved passages share the index's strings, so this holds little.
	found := make([][]Retrieved, len(r.Queries))
	for i, q := range r.Queries {
		s.compute(func() { found[i], err = s.retriever.Retrieve(req.Context(), q, topK) })
		if err != nil {
			writeError(w, http.StatusInternalServerError, "queries[%d]: %v", i, err)
			return
		}
		for _, f := range found[i] {
			if math.IsNaN(f.Score) || math.IsInf(f.Score, 0) { // JSON has no number for it
				writeError(w, http.StatusInternalServerError, "queries[%d]: the retriever scored passage %q %v", i, f.ID, f.Score)
				return
			}
		}
	}
	s.writeResults(w, found, r.ReturnScores)
}

// writeResults writes the 200 answer {"result": [[...], ...]} one query's list at a time, the
// same bytes as encoding the whole answer at once with encoding/json, so a large answer is
// never whole in memory; the lists are encoded into one reused buffer (json.go).
func (s *service) writeResults(w http.ResponseWriter, found [][]Retrieved, scores bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, `{"result":[`)
	var list []byte
	for i, fs := range found {
		s.compute(func() {
			list = list[:0]
			if i > 0 {
				list = append(list, ',')
			}
			list = append(list, '[')
			for j, f := range fs {
				if j > 0 {
					list = append(list, ',')
				}
				list = appendResult(list, f, scores)
			}
			list = append(list, ']')
		})
		if _, err := w.Write(list); err != nil {
			return // the client left; nothing to tell it
		}
	}
	io.WriteString(w, "]}\n")
}

// readBody reads a request body of at most limit bytes into a buffer sized by its
// Content-Length, instead of growing one by doubling (which allocates twice the body).
func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	size := min(max(req.ContentLength, 0), limit) + bytes.MinRead // ReadFrom wants MinRead spare
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, limit))
	return buf.Bytes(), err
}

// invalidUTF8At returns the offset of the first byte of b that does not begin a valid UTF-8
// sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// parse decodes and checks a request body and returns the request and the topk to use.
func (s *service) parse(body []byte) (RetrieveRequest, int, error) {
	var r RetrieveRequest
	if !utf8.Valid(body) {
		// encoding/json would quietly replace the bad bytes with U+FFFD and search for that.
		return r, 0, fmt.Errorf("request body is not valid UTF-8 (byte %d)", invalidUTF8At(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, 0, fmt.Errorf("malformed request: %v", err)
	}
	if len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) > 0 { // JSON whitespace only
		return r, 0, fmt.Errorf("malformed request: data after the JSON object")
	}
	topK, err := s.check(&r)
	return r, topK, err
}

// check validates a request against the limits and returns the topk to use.
func (s *service) check(r *RetrieveRequest) (int, error) {
	lim := s.limits
	switch {
	case len(r.Queries) == 0:
		return 0, fmt.Errorf("\"queries\" must be a non-empty list of strings")
	case len(r.Queries) > lim.MaxQueries:
		return 0, fmt.Errorf("%d queries, at most %d per request", len(r.Queries), lim.MaxQueries)
	}
	for i, q := range r.Queries {
		if strings.TrimSpace(q) == "" {
			return 0, fmt.Errorf("queries[%d] is empty", i)
		}
		if len(q) > lim.MaxQueryBytes {
			return 0, fmt.Errorf("queries[%d] is %d bytes, at most %d", i, len(q), lim.MaxQueryBytes)
		}
	}
	if r.TopK == nil {
		return lim.DefaultTopK, nil
	}
	if *r.TopK < 1 || *r.TopK > lim.MaxTopK {
		return 0, fmt.Errorf("\"topk\" %d out of range [1, %d]", *r.TopK, lim.MaxTopK)
	}
	return *r.TopK, nil
}

// ListenAndServe serves h on addr until ctx is cancelled, then shuts down gracefully: it stops
// accepting connections and waits up to drain for in-flight requests to finish. ready, if not
// nil, is called with the bound address once the listener is open (useful with port 0).
//
// Connections that were opened but have not yet sent a request are closed at once on
// shutdown: http.Server.Shutdown would otherwise wait up to 5 s for each of them (HTTP clients
// often open spare connections they never use).
func ListenAndServe(ctx context.Context, addr string, h http.Handler, drain time.Duration, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve search: %w", err)
	}
	var fresh connSet // connections in http.StateNew
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ConnState:         fresh.track,
	}
	if ready != nil {
		ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve search: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	// Close the request-less connections before Shutdown first looks, and again until it is
	// done, so one accepted just before the listener closed is caught too.
	fresh.closeAll()
	time.Sleep(time.Millisecond) // let their serving goroutines see the close
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(shutCtx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		fresh.closeAll()
		select {
		case err := <-shut:
			if err != nil {
				return fmt.Errorf("serve search: shutdown: %w", err)
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve search: %w", err)
			}
			return nil
		case <-tick.C:
		}
	}
}

// connSet tracks the server's connections that have not started a request.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// track is an http.Server ConnState hook.
func (s *connSet) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state != http.StateNew {
		delete(s.conns, c)
		return
	}
	if s.conns == nil {
		s.conns = make(map[net.Conn]bool)
	}
	s.conns[c] = true
}

// closeAll closes every tracked connection; a failed close means it is already gone.
func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
}
