// Command worstclients measures a running retrieval service (agentr1 serve search) from a
// separate process, as real clients are: N clients each send requests again and again for a
// while, reading every answer to the end, while a prober asks GET /healthz every 100 ms. It
// prints the answers by status, their rate and latencies, the requests still unanswered when
// the time is up (cut then), and the /healthz latencies; the service's own peak memory is its
// VmHWM (/proc/PID/status), which the caller reads.
//
// With -mix worst (the default) every request is the costliest valid one: 512 queries of about
// 2 KB (a body just under the default 1 MiB cap) with topk 16 (512 x 16 = the default
// MaxResults). With -mix ordinary each is what an agent's search tool sends: 1 to 4 short
// queries, topk 5 or absent, with and without scores.
//
//	go run ./cmd/agentr1 serve search --corpus mhqa --addr 127.0.0.1:18000 &
//	go run ./scripts/worstclients -url http://127.0.0.1:18000 -clients 64 -for 60s
//	go run ./scripts/worstclients -url http://127.0.0.1:18000 -clients 64 -for 60s -mix ordinary
//	grep VmHWM /proc/$(pgrep -f 'agentr1 serve search')/status
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// words are the queries' phrases; each matches many passages of the embedded corpus.
var words = []string{"american film director", "opera composer", "football club", "river in europe",
	"album released by the band", "television series", "university founded", "capital city of the country"}

// worstBody is the costliest valid request under the default limits.
func worstBody() []byte {
	queries := make([]string, 512)
	for i := range queries {
		w := words[i%len(words)]
		queries[i] = strings.Repeat(w+" ", 2000/(len(w)+1))
	}
	body, _ := json.Marshal(map[string]any{"queries": queries, "topk": 16, "return_scores": true})
	return body
}

// ordinaryBodies are the requests of the ordinary mix, sent in turn.
func ordinaryBodies() [][]byte {
	var bodies [][]byte
	for i := range 96 {
		var queries []string
		for j := range 1 + i%4 {
			queries = append(queries, words[(i*5+j*3)%len(words)])
		}
		req := map[string]any{"queries": queries, "return_scores": i%2 == 0}
		if i%3 != 0 {
			req["topk"] = 5
		}
		body, _ := json.Marshal(req)
		bodies = append(bodies, body)
	}
	return bodies
}

func main() {
	url := flag.String("url", "http://127.0.0.1:18000", "the service's base URL")
	clients := flag.Int("clients", 64, "concurrent clients")
	run := flag.Duration("for", 60*time.Second, "how long the clients send")
	mix := flag.String("mix", "worst", "the requests: worst (the costliest valid request) or ordinary (1 to 4 short queries)")
	probe := flag.Bool("probe", true, "probe /healthz every 100 ms (with -clients 0, probe only: a prober in a process of its own, at its own priority)")
	flag.Parse()
	var bodies [][]byte
	switch *mix {
	case "worst":
		bodies = [][]byte{worstBody()}
	case "ordinary":
		bodies = ordinaryBodies()
	default:
		fmt.Fprintf(os.Stderr, "worstclients: -mix %q: want worst or ordinary\n", *mix)
		os.Exit(2)
	}
	client := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: *clients + 1}}

	var mu sync.Mutex
	statuses := map[int]int{}
	var health, latency []time.Duration // /healthz probes; answered (200) requests
	var answerBytes int64
	var unfinished int // requests still unanswered at the end, cut by the client
	deadline := time.Now().Add(*run)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	if *probe {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				t0 := time.Now()
				resp, err := client.Get(*url + "/healthz")
				if err != nil {
					fmt.Fprintln(os.Stderr, "healthz:", err)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				health = append(health, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for c := range *clients {
		wg.Go(func() {
			for i := c; time.Now().Before(deadline); i += *clients {
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(ctx, "POST", *url+"/retrieve", bytes.NewReader(bodies[i%len(bodies)]))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				var n int64
				if err == nil {
					n, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil && ctx.Err() != nil {
					mu.Lock()
					unfinished++
					mu.Unlock()
					return
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "retrieve:", err)
					return
				}
				took := time.Since(t0)
				mu.Lock()
				statuses[resp.StatusCode]++
				if resp.StatusCode == http.StatusOK {
					answerBytes += n
					latency = append(latency, took)
				}
				mu.Unlock()
				if resp.StatusCode == http.StatusTooManyRequests {
					time.Sleep(time.Second) // Retry-After
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	fmt.Printf("%d %s clients for %v: statuses %v, %.1f answers/s, %.0f MB of answers; %d unanswered at the end\n",
		*clients, *mix, elapsed.Round(time.Millisecond), statuses, float64(statuses[200])/elapsed.Seconds(), float64(answerBytes)/1e6, unfinished)
	report("answers", latency)
	report("/healthz", health)
}

// report prints the count, median, 99th percentile and maximum of durations.
func report(what string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	fmt.Printf("%s: %d, p50 %v, p99 %v, max %v\n", what, len(d), q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), d[len(d)-1].Round(time.Microsecond))
}
