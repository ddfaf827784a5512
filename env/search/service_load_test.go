package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The load test runs the retrieval service as `agentr1 serve search` does (NewHandler served
// by ListenAndServe) on 127.0.0.1, over the first loadPassages passages of the embedded corpus,
// and drives it from 64 concurrent clients with a fixed mix of valid and malformed requests.
// By default it sends 2,000 requests (about a second); AGENTR1_LOADTEST=1 makes it send
// 50,000 within at most 60 s.

const (
	loadClients  = 64
	loadPassages = 4000
)

// loadLimits are the service limits under test: small enough that every refusal is cheap to
// provoke.
var loadLimits = Limits{MaxBodyBytes: 64 << 10, MaxQueries: 16, MaxQueryBytes: 512, MaxTopK: 10, DefaultTopK: 5, MaxResults: 1000, MaxInFlight: 1000}

// loadQueries are the queries valid requests draw from; each matches at least MaxTopK passages
// of the load corpus (loadIndex checks this), so a valid answer holds exactly topk passages.
var loadQueries = []string{
	"american film director", "opera composer", "football club", "river in europe",
	"who was born first", "album released by the band", "television series", "university founded",
	"capital city of the country", "novel written by", "actor starring in the film", "song recorded",
	"world war battle", "magazine published", "village in the district", "politician of the party",
}

// loadIndex builds the load corpus's index once for the tests, the fuzz target and the
// benchmark, with every query's expected top MaxTopK ids.
var loadIndex = sync.OnceValues(func() (*loadFixture, error) {
	passages, err := LoadCorpus(EmbeddedCorpus)
	if err != nil {
		return nil, err
	}
	ix, err := Build(passages[:min(loadPassages, len(passages))], DefaultOptions())
	if err != nil {
		return nil, err
	}
	fx := &loadFixture{ix: ix, want: map[string][][]string{}}
	for _, q := range loadQueries {
		byK := make([][]string, loadLimits.MaxTopK+1)
		for k := 1; k <= loadLimits.MaxTopK; k++ {
			for _, h := range ix.Search(q, k) {
				byK[k] = append(byK[k], ix.Passage(h.Doc).ID)
			}
			if len(byK[k]) != k {
				return nil, fmt.Errorf("load query %q matches %d passages, want at least %d", q, len(byK[k]), k)
			}
		}
		fx.want[q] = byK
	}
	return fx, nil
})

// loadFixture is the index under load and the answers it must give.
type loadFixture struct {
	ix   *Index
	want map[string][][]string // query -> topk -> passage ids, best first
}

// loadRequest is one request of the mix, with what the service must answer.
type loadRequest struct {
	kind    string // "valid" or the way it is malformed
	method  string
	body    []byte
	status  int      // expected status
	queries []string // valid requests: the queries
	topK    int      // valid requests: the topk in effect
	scores  bool     // valid requests: return_scores
}

// oversizedBody is a well-formed request body just over loadLimits.MaxBodyBytes, shared by
// every oversized request.
var oversizedBody = sync.OnceValue(func() []byte {
	return fmt.Appendf(nil, `{"queries": [%q]}`, strings.Repeat("opera ", int(loadLimits.MaxBodyBytes)/6+100))
})

// makeLoadRequest returns request i of the mix: six valid requests in every ten (1 to 4
// queries, topk absent or 1..10, with and without scores), then bad JSON, topk out of range,
// too many queries, and, in turn, an oversized body (413), the wrong method (405), an unknown
// field, a blank query and a query over MaxQueryBytes (400).
func makeLoadRequest(i int) loadRequest {
	q := func(j int) string { return loadQueries[(i*7+j*3)%len(loadQueries)] }
	switch i % 10 {
	case 6:
		return loadRequest{kind: "bad JSON", method: "POST", body: []byte(`{"queries": ["opera", `), status: 400}
	case 7:
		topK := []int{0, -3, loadLimits.MaxTopK + 1}[i/10%3]
		return loadRequest{kind: "topk out of range", method: "POST", status: 400,
			body: fmt.Appendf(nil, `{"queries": [%q], "topk": %d}`, q(0), topK)}
	case 8:
		qs := make([]string, loadLimits.MaxQueries+1)
		for j := range qs {
			qs[j] = q(j)
		}
		body, _ := json.Marshal(map[string]any{"queries": qs})
		return loadRequest{kind: "too many queries", method: "POST", body: body, status: 400}
	case 9:
		switch i / 10 % 5 {
		case 0:
			return loadRequest{kind: "oversized body", method: "POST", status: http.StatusRequestEntityTooLarge, body: oversizedBody()}
		case 1:
			return loadRequest{kind: "wrong method", method: "GET", status: http.StatusMethodNotAllowed}
		case 2:
			return loadRequest{kind: "unknown field", method: "POST", status: 400,
				body: fmt.Appendf(nil, `{"queries": [%q], "top_k": 3}`, q(0))}
		case 3:
			return loadRequest{kind: "blank query", method: "POST", status: 400,
				body: fmt.Appendf(nil, `{"queries": [%q, " \t"]}`, q(0))}
		default:
			return loadRequest{kind: "query too long", method: "POST", status: 400,
				body: fmt.Appendf(nil, `{"queries": [%q]}`, strings.Repeat("x", loadLimits.MaxQueryBytes+1))}
		}
	}
	r := loadRequest{kind: "valid", method: "POST", status: 200, scores: i%2 == 0, topK: loadLimits.DefaultTopK}
	for j := range 1 + i%4 {
		r.queries = append(r.queries, q(j))
	}
	req := map[string]any{"queries": r.queries, "return_scores": r.scores}
	if i%3 != 0 {
		r.topK = 1 + i%loadLimits.MaxTopK
		req["topk"] = r.topK
	}
	r.body, _ = json.Marshal(req)
	return r
}

// checkAnswer returns why a response does not fit the request, or "".
func (fx *loadFixture) checkAnswer(r loadRequest, status int, body []byte) string {
	if status != r.status {
		return fmt.Sprintf("status %d, want %d (body %.200s)", status, r.status, body)
	}
	if r.status != 200 {
		var e errorResponse
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
			return fmt.Sprintf("error answer %.200q is not {\"error\": ...}", body)
		}
		return ""
	}
	var ans struct{ Result [][]json.RawMessage }
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Sprintf("answer %.200q: %v", body, err)
	}
	if len(ans.Result) != len(r.queries) {
		return fmt.Sprintf("%d result lists for %d queries", len(ans.Result), len(r.queries))
	}
	for qi, list := range ans.Result {
		want := fx.want[r.queries[qi]][r.topK]
		var got []string
		for _, raw := range list {
			var d struct {
				Document *Document
				Score    *float64
				ID       string
			}
			if err := json.Unmarshal(raw, &d); err != nil {
				return fmt.Sprintf("query %d: document %s: %v", qi, raw, err)
			}
			if r.scores != (d.Document != nil && d.Score != nil) {
				return fmt.Sprintf("query %d: document %s with return_scores %v", qi, raw, r.scores)
			}
			if d.Document != nil {
				d.ID = d.Document.ID
			}
			got = append(got, d.ID)
		}
		if !slices.Equal(got, want) {
			return fmt.Sprintf("query %q topk %d: ids %v, want %v", r.queries[qi], r.topK, got, want)
		}
	}
	return ""
}

// startLoadService serves h like `agentr1 serve search` on a loopback port and returns its URL,
// the function that stops it, and the channel ListenAndServe's result arrives on.
func startLoadService(t testing.TB, h http.Handler, drain time.Duration) (url string, stop context.CancelFunc, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	result := make(chan error, 1)
	go func() { result <- ListenAndServe(ctx, "127.0.0.1:0", h, drain, func(a net.Addr) { addr <- a }) }()
	select {
	case a := <-addr:
		return "http://" + a.String(), cancel, result
	case err := <-result:
		cancel()
		t.Fatalf("service did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("service did not start within 10 s")
	}
	return "", nil, nil
}

// newLoadClient returns an HTTP client that keeps a connection per concurrent client.
func newLoadClient() *http.Client {
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: loadClients, MaxIdleConnsPerHost: loadClients},
	}
}

// loadSend sends r and returns the status and body.
func loadSend(client *http.Client, url string, r loadRequest) (int, []byte, error) {
	req, err := http.NewRequest(r.method, url+"/retrieve", bytes.NewReader(r.body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// loadPercentile returns the p-th percentile (0 < p <= 100, nearest rank) of sorted durations.
func loadPercentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// loadHeapInUse returns HeapInuse after a collection.
func loadHeapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestServiceUnderLoad drives the service with 64 concurrent clients and checks every answer:
// each valid request gets 200 with exactly the index's top-k ids per query, each malformed one
// its 400 (405, 413) with an error body. It reports requests/s and p50/p99 latency, checks the
// heap after the run is within 32 MiB of before, that no goroutine is left behind, and that
// the service shuts down cleanly. AGENTR1_LOADTEST=1 runs 50,000 requests instead of 2,000.
func TestServiceUnderLoad(t *testing.T) {
	total, limit := 2000, 20*time.Second
	if os.Getenv("AGENTR1_LOADTEST") == "1" {
		total, limit = 50000, 60*time.Second
	}
	fx, err := loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()
	heapBefore := loadHeapInUse()

	url, stop, done := startLoadService(t, NewHandler(fx.ix, loadLimits), 5*time.Second)
	client := newLoadClient()
	kinds := make([]string, total)          // (total,) the kind of request i
	latency := make([]time.Duration, total) // (total,) 0: not sent
	problems := make([]string, total)       // (total,) "" : answered as required
	var next atomic.Int64
	var peakHeap atomic.Uint64
	deadline := time.Now().Add(limit)
	sampling := make(chan struct{})
	go func() { // sample the heap while the load runs
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampling:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peakHeap.Load() {
					peakHeap.Store(m.HeapInuse)
				}
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for range loadClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= total || time.Now().After(deadline) {
					return
				}
				r := makeLoadRequest(i)
				kinds[i] = r.kind
				t0 := time.Now()
				status, body, err := loadSend(client, url, r)
				latency[i] = max(time.Since(t0), time.Nanosecond)
				if err != nil {
					problems[i] = err.Error()
					continue
				}
				problems[i] = fx.checkAnswer(r, status, body)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(sampling)

	sent := map[string]int{}
	var lat []time.Duration
	failed := 0
	for i, kind := range kinds {
		if latency[i] == 0 {
			continue
		}
		sent[kind]++
		lat = append(lat, latency[i])
		if problems[i] != "" {
			if failed++; failed <= 10 {
				t.Errorf("request %d (%s): %s", i, kind, problems[i])
			}
		}
	}
	if failed > 10 {
		t.Errorf("... %d requests answered wrongly in all", failed)
	}
	if len(lat) < total {
		t.Errorf("only %d of %d requests sent within %v", len(lat), total, limit)
	}
	slices.Sort(lat)
	t.Logf("%d requests from %d clients in %v: %.0f requests/s, latency p50 %v p99 %v max %v",
		len(lat), loadClients, elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(),
		loadPercentile(lat, 50), loadPercentile(lat, 99), lat[len(lat)-1])
	t.Logf("mix: %v", sent)

	// Stop while the clients still hold their connections, idle ones and ones their transport
	// dialed but never used (which net/http's Shutdown alone counts as active for 5 s):
	// nothing is in flight, so the drain must be quick. TestServiceShutdownDrains covers
	// shutdown with requests in flight.
	t1 := time.Now()
	stop()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if d := time.Since(t1); d > 2*time.Second {
		t.Errorf("shutdown with no request in flight took %v", d)
	}
	t.Logf("shutdown with the clients still connected took %v", time.Since(t1).Round(time.Microsecond))
	client.CloseIdleConnections()
	heapAfter := loadHeapInUse()
	t.Logf("heap in use: %.1f MiB before, peak %.1f MiB, %.1f MiB after", loadMiB(heapBefore), loadMiB(peakHeap.Load()), loadMiB(heapAfter))
	if heapAfter > heapBefore+32<<20 {
		t.Errorf("heap grew from %.1f MiB to %.1f MiB over the run", loadMiB(heapBefore), loadMiB(heapAfter))
	}
	if peakHeap.Load() > heapBefore+256<<20 {
		t.Errorf("heap peaked at %.1f MiB (%.1f MiB before)", loadMiB(peakHeap.Load()), loadMiB(heapBefore))
	}
	for wait := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines+2; {
		if time.Now().After(wait) {
			t.Errorf("%d goroutines after shutdown, %d before the service started", runtime.NumGoroutine(), goroutines)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loadMiB converts bytes to MiB.
func loadMiB(b uint64) float64 { return float64(b) / (1 << 20) }

// delayedRetriever delays every query, so that requests are in flight when shutdown starts.
type delayedRetriever struct {
	Retriever
	delay   time.Duration
	entered chan struct{} // receives once per query started
}

func (s delayedRetriever) Retrieve(ctx context.Context, q string, k int) ([]Retrieved, error) {
	s.entered <- struct{}{}
	time.Sleep(s.delay)
	return s.Retriever.Retrieve(ctx, q, k)
}

// TestServiceShutdownDrains starts slow requests, stops the service while they are inside the
// retriever, and checks that every one still completes with 200 and its full answer, that
// ListenAndServe returns cleanly, and that the closed service refuses new connections. A
// drain time shorter than the requests makes ListenAndServe report the unfinished shutdown.
func TestServiceShutdownDrains(t *testing.T) {
	fx, err := loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		drain   time.Duration
		wantErr string // "" : clean shutdown
	}{
		{"drain longer than the requests", 5 * time.Second, ""},
		{"drain shorter than the requests", 50 * time.Millisecond, "shutdown"},
	}
	const inFlight = 8
	for _, c := range cases {
		slow := delayedRetriever{Retriever: fx.ix, delay: 400 * time.Millisecond, entered: make(chan struct{}, inFlight)}
		url, stop, done := startLoadService(t, NewHandler(slow, loadLimits), c.drain)
		client := newLoadClient()
		type answer struct {
			status int
			body   []byte
			err    error
		}
		answers := make(chan answer, inFlight)
		r := makeLoadRequest(1) // valid, one query with topk
		for range inFlight {
			go func() {
				status, body, err := loadSend(client, url, r)
				answers <- answer{status, body, err}
			}()
		}
		for range inFlight {
			<-slow.entered
		}
		stop()
		for range inFlight {
			a := <-answers
			if a.err != nil {
				t.Errorf("%s: in-flight request failed: %v", c.name, a.err)
				continue
			}
			if msg := fx.checkAnswer(r, a.status, a.body); msg != "" {
				t.Errorf("%s: in-flight request: %s", c.name, msg)
			}
		}
		err := <-done
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: ListenAndServe: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: ListenAndServe returned %v, want an error containing %q", c.name, err, c.wantErr)
		}
		client.CloseIdleConnections()
		if _, _, err := loadSend(newLoadClient(), url, r); err == nil {
			t.Errorf("%s: the stopped service still answers", c.name)
		}
	}
}

// BenchmarkService sends rounds of 64 concurrent valid requests (1 to 4 queries each) to the
// service on 127.0.0.1 and reports requests/s and the p50 and p99 latency in milliseconds.
func BenchmarkService(b *testing.B) {
	fx, err := loadIndex()
	if err != nil {
		b.Fatal(err)
	}
	url, stop, done := startLoadService(b, NewHandler(fx.ix, loadLimits), 5*time.Second)
	client := newLoadClient()
	b.Run(fmt.Sprintf("clients=%d", loadClients), func(b *testing.B) {
		var lat []time.Duration
		var mu sync.Mutex
		rounds := 0
		for b.Loop() {
			var wg sync.WaitGroup
			for c := range loadClients {
				r := makeLoadRequest(10*(rounds*loadClients+c) + c%6) // always a valid kind
				wg.Go(func() {
					t0 := time.Now()
					status, _, err := loadSend(client, url, r)
					d := time.Since(t0)
					if err != nil || status != 200 {
						b.Errorf("status %d, error %v", status, err)
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				})
			}
			wg.Wait()
			rounds++
		}
		slices.Sort(lat)
		b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "req/s")
		b.ReportMetric(float64(loadPercentile(lat, 50))/1e6, "p50-ms")
		b.ReportMetric(float64(loadPercentile(lat, 99))/1e6, "p99-ms")
	})
	stop()
	if err := <-done; err != nil {
		b.Errorf("shutdown: %v", err)
	}
}

// TestServiceWorstCaseClients drives the service under its default limits from 64 clients that
// each send, again and again, the costliest valid request: 512 queries of about 2 KB (a body
// near the 1 MiB cap) with the largest topk MaxResults allows, reading every answer to the end
// as a network client would. It checks that every answer is 200 or 429 (never 5xx), that the
// heap in use stays under 1 GiB, and that /healthz answers throughout; it logs requests/s,
// the heap's peak and /healthz's slowest answer. By default 8 clients send for 3 s, to keep
// go test quick; AGENTR1_LOADTEST=1 runs all 64 for 60 s and also logs the process's peak
// resident memory (server and clients together).
func TestServiceWorstCaseClients(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test; runs without -short")
	}
	clients, run := 8, 3*time.Second
	if os.Getenv("AGENTR1_LOADTEST") == "1" {
		clients, run = loadClients, 60*time.Second
	}
	fx, err := loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	body := worstCaseBody(lim)
	if int64(len(body)) > lim.MaxBodyBytes || int64(len(body)) < lim.MaxBodyBytes*9/10 {
		t.Fatalf("the worst-case body is %d bytes, want just under %d", len(body), lim.MaxBodyBytes)
	}

	url, stop, done := startLoadService(t, NewHandler(fx.ix, lim), 30*time.Second)
	client := newLoadClient()
	client.Timeout = 5 * time.Minute // a worst-case answer on a loaded machine
	var peakHeap, slowestHealth atomic.Int64
	sampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() { // the heap and /healthz while the load runs
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampling:
				return
			case <-tick.C:
				peakHeap.Store(max(peakHeap.Load(), int64(loadHeapInUse())))
				t0 := time.Now()
				resp, err := client.Get(url + "/healthz")
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("/healthz under load: %v %v", resp, err)
					continue
				}
				resp.Body.Close()
				slowestHealth.Store(max(slowestHealth.Load(), int64(time.Since(t0))))
			}
		}
	})
	var ok, refused, answerBytes atomic.Int64
	deadline := time.Now().Add(run)
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				resp, err := client.Post(url+"/retrieve", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("worst-case request: %v", err)
					return
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					t.Errorf("reading a worst-case answer: %v", err)
					return
				case resp.StatusCode == 200:
					ok.Add(1)
					answerBytes.Add(n)
				case resp.StatusCode == 429:
					refused.Add(1)
					time.Sleep(100 * time.Millisecond) // as Retry-After asks, shortened
				default:
					t.Errorf("worst-case request: status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(sampling)
	sampler.Wait()
	stop()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if ok.Load() == 0 {
		t.Errorf("no worst-case request was answered in %v", run)
	}
	t.Logf("%d clients, %v: %d answered (%.1f/s, %.0f MB of answers), %d refused with 429; heap peak %.0f MiB; slowest /healthz %v",
		clients, elapsed.Round(time.Millisecond), ok.Load(), float64(ok.Load())/elapsed.Seconds(), float64(answerBytes.Load())/1e6,
		refused.Load(), loadMiB(uint64(peakHeap.Load())), time.Duration(slowestHealth.Load()).Round(time.Millisecond))
	if peakHeap.Load() > 1<<30 {
		t.Errorf("heap in use peaked at %.0f MiB, want under 1 GiB", loadMiB(uint64(peakHeap.Load())))
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil && os.Getenv("AGENTR1_LOADTEST") == "1" {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				t.Logf("peak resident memory of the test process (server and clients): %s", strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
			}
		}
	}
}

// worstCaseBody is the costliest valid /retrieve request under lim: as many queries as allowed,
// each as long as the body cap leaves room for, asking for as many passages as allowed.
func worstCaseBody(lim Limits) []byte {
	queries := make([]string, lim.MaxQueries)
	for i := range queries {
		q := loadQueries[i%len(loadQueries)]
		queries[i] = strings.Repeat(q+" ", int(lim.MaxBodyBytes/int64(lim.MaxQueries)-40)/(len(q)+1))
	}
	topK := lim.MaxResults / lim.MaxQueries
	body, _ := json.Marshal(RetrieveRequest{Queries: queries, TopK: &topK, ReturnScores: true})
	return body
}
