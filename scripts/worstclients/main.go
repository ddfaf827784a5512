// Command worstclients measures a running retrieval service (agentr1 serve search) under its
// costliest valid requests, from a separate process as real clients are: N clients each send,
// again and again for a while, a request of 512 queries of about 2 KB (a body just under the
// default 1 MiB cap) with topk 16 (512 x 16 = the default MaxResults), reading every answer to
// the end, while a prober asks GET /healthz every 100 ms. It prints the answers, the refusals by
// status, and the /healthz latencies; the service's own peak memory is its VmHWM
// (/proc/PID/status), which the caller reads.
//
//	go run ./cmd/agentr1 serve search --addr 127.0.0.1:18000 &
//	go run ./scripts/worstclients -url http://127.0.0.1:18000 -clients 64 -for 60s
//	grep VmHWM /proc/$(pgrep -f 'agentr1 serve search')/status
package main

import (
	"bytes"
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

func main() {
	url := flag.String("url", "http://127.0.0.1:18000", "the service's base URL")
	clients := flag.Int("clients", 64, "concurrent clients")
	run := flag.Duration("for", 60*time.Second, "how long the clients send")
	flag.Parse()

	words := []string{"american film director", "opera composer", "football club", "river in europe",
		"album released by the band", "television series", "university founded", "capital city of the country"}
	queries := make([]string, 512)
	for i := range queries {
		w := words[i%len(words)]
		queries[i] = strings.Repeat(w+" ", 2000/(len(w)+1))
	}
	topK := 16
	body, _ := json.Marshal(map[string]any{"queries": queries, "topk": topK, "return_scores": true})
	client := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: *clients + 1}}

	var mu sync.Mutex
	statuses := map[int]int{}
	var health []time.Duration
	var answerBytes int64
	deadline := time.Now().Add(*run)
	done := make(chan struct{})
	go func() { // the prober
		for {
			select {
			case <-done:
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
	}()
	var wg sync.WaitGroup
	start := time.Now()
	for range *clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				resp, err := client.Post(*url+"/retrieve", "application/json", bytes.NewReader(body))
				if err != nil {
					fmt.Fprintln(os.Stderr, "retrieve:", err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				answerBytes += n
				mu.Unlock()
				if resp.StatusCode == http.StatusTooManyRequests {
					time.Sleep(time.Second) // Retry-After
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(done)
	slices.Sort(health)
	q := func(p float64) time.Duration { return health[min(len(health)-1, int(p*float64(len(health))))] }
	fmt.Printf("%d clients for %v: statuses %v, %.1f answers/s, %.0f MB of answers\n",
		*clients, elapsed.Round(time.Millisecond), statuses, float64(statuses[200])/elapsed.Seconds(), float64(answerBytes)/1e6)
	if len(health) > 0 {
		fmt.Printf("/healthz: %d probes, p50 %v, p99 %v, max %v\n", len(health), q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), health[len(health)-1].Round(time.Microsecond))
	}
}
