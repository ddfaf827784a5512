package tokenizer

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// EncodeBatch encodes texts on all cores (GOMAXPROCS goroutines, each with its own encoder and
// word cache) and returns their ids in order: out[i] is Encode(texts[i]).
func (t *Tokenizer) EncodeBatch(texts []string) [][]int {
	out := make([][]int, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	if workers <= 1 {
		e := t.getEncoder()
		for i, s := range texts {
			out[i] = e.appendEncode(make([]int, 0, len(s)/3+1), s)
		}
		t.pool.Put(e)
		return out
	}
	// Texts are handed out in chunks from a shared counter, so a few long texts do not leave
	// the other workers idle.
	const chunk = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := t.getEncoder()
			defer t.pool.Put(e)
			for {
				start := int(next.Add(chunk)) - chunk
				if start >= len(texts) {
					return
				}
				for i := start; i < min(start+chunk, len(texts)); i++ {
					out[i] = e.appendEncode(make([]int, 0, len(texts[i])/3+1), texts[i])
				}
			}
		}()
	}
	wg.Wait()
	return out
}
