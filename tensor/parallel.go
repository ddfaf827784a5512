package tensor

import (
	"runtime"
	"sync"
)

// workers is the number of goroutines large kernels split their work across.
var workers = runtime.GOMAXPROCS(0)

// Workers returns the number of goroutines large kernels use.
func Workers() int { return workers }

// SetWorkers sets the number of goroutines large kernels use (at least 1) and returns the
// previous value. It is not safe to call while kernels run.
func SetWorkers(n int) int {
	old := workers
	if n < 1 {
		n = 1
	}
	workers = n
	return old
}

// Parallel calls f(lo, hi) on disjoint chunks covering [0, n), using up to Workers()
// goroutines, and returns when all have finished. Chunks hold at least minChunk items, so small
// problems run on the calling goroutine alone.
func Parallel(n, minChunk int, f func(lo, hi int)) {
	if minChunk < 1 {
		minChunk = 1
	}
	w := workers
	if max := (n + minChunk - 1) / minChunk; w > max {
		w = max
	}
	if w <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}
