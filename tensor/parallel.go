package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// Parallel calls f(lo, hi) on disjoint chunks covering [0, n), using up to Available()
// goroutines (Workers(), or one inside Shards), and returns when all have finished. Chunks hold
// at least minChunk items, so small problems run on the calling goroutine alone. The chunks
// depend only on n, minChunk and Available(), never on which goroutine runs which, so a
// computation whose chunks write disjoint outputs gives the same result on every run.
//
// The calling goroutine works on the chunks itself, helped by long-lived pool goroutines that
// are idle: a Parallel inside a chunk of another (nested) never waits for a helper that is busy,
// and a decoding step's dozens of small parallel regions start no goroutines.
func Parallel(n, minChunk int, f func(lo, hi int)) { parallel(n, minChunk, Available(), f) }

// parallel is Parallel on up to w goroutines.
func parallel(n, minChunk, w int, f func(lo, hi int)) {
	if minChunk < 1 {
		minChunk = 1
	}
	if max := (n + minChunk - 1) / minChunk; w > max {
		w = max
	}
	if w <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	chunk := (n + w - 1) / w
	job := &parallelJob{f: f, n: n, chunk: chunk, chunks: (n + chunk - 1) / chunk}
	job.cond.L = &job.mu
	pool.offer(job, job.chunks-1)
	job.run()
	job.mu.Lock()
	for !job.over {
		job.cond.Wait()
	}
	job.mu.Unlock()
}

// serial reports whether Parallel(n, minChunk, f) would call f(0, n) on the calling goroutine
// alone. Kernels that run tiny problems in hot loops (a decoding step's rows) test it first and
// then call their row function directly: a closure passed to Parallel escapes to the heap, so
// building one costs an allocation even when Parallel ends up not starting any helper.
func serial(n, minChunk int) bool { return Available() <= 1 || n <= max(minChunk, 1) }

// sharded counts the Shards calls running, and shardGoroutines the goroutines running their
// shards. While every worker runs a shard, each has a core to itself, and every kernel
// (whichever goroutine calls it) runs on its calling goroutine alone: splitting it again would
// only make the shards take turns. A worker whose shards are done is free again, and the
// kernels of the shards still running may split across it.
var sharded, shardGoroutines atomic.Int32

// Available returns the number of goroutines a kernel may split its work across now:
// Workers(), or inside Shards one plus the workers no shard occupies (1 while every worker
// runs a shard, 2 for the last shard of two on two workers once the other has finished).
// Results do not depend on it: kernels split their work into parts whose outputs are
// disjoint (Parallel, Gemm), so only the time changes.
func Available() int {
	if sharded.Load() > 0 {
		return max(1, workers-int(shardGoroutines.Load())+1)
	}
	return workers
}

// Shards calls f(0), ..., f(n-1) at once, each on its own goroutine (the caller and pool
// helpers), and returns when all have finished: data parallelism, for work that splits into
// n independent pieces of about the same size, such as a training batch cut into groups of rows
// (model.Workspace.Shards). While the shards run, the kernels they call are single-threaded,
// so no time goes to splitting small products and waking helpers, and each shard keeps its
// operands in its own core's cache; when a goroutine's shards are done, the kernels of the
// others may use its core (Available), so a shard slowed down (by another process on its
// core, say) is helped instead of waited for. With n > Workers() several shards share a
// goroutine; inside another Shards call, or with one worker, f runs on the calling goroutine
// for each s in order. A panic in a shard is raised again on the calling goroutine once every shard has
// returned (the first, by shard order).
func Shards(n int, f func(s int)) {
	if n <= 0 {
		return
	}
	if sharded.Load() > 0 || workers <= 1 || n == 1 {
		for s := range n {
			f(s)
		}
		return
	}
	sharded.Add(1)
	panics := make([]any, n)
	parallel(n, 1, workers, func(lo, hi int) {
		shardGoroutines.Add(1)
		defer shardGoroutines.Add(-1)
		for s := lo; s < hi; s++ {
			func() {
				defer func() { panics[s] = recover() }()
				f(s)
			}()
		}
	})
	sharded.Add(-1)
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

// parallelJob is one Parallel call: its chunks are claimed from next by the caller and by any
// pool goroutine that picks the job up, and the one that finishes the last chunk sets over.
type parallelJob struct {
	f        func(lo, hi int)
	n, chunk int
	chunks   int
	next     atomic.Int64 // next chunk to claim
	finished atomic.Int64 // chunks completed

	mu   sync.Mutex
	cond sync.Cond // broadcast when over is set
	over bool      // every chunk has finished
}

// run claims and runs chunks of j until none is left.
func (j *parallelJob) run() {
	for {
		c := int(j.next.Add(1) - 1)
		if c >= j.chunks {
			return
		}
		lo := c * j.chunk
		j.f(lo, min(lo+j.chunk, j.n))
		if j.finished.Add(1) == int64(j.chunks) {
			j.mu.Lock()
			j.over = true
			j.cond.Broadcast()
			j.mu.Unlock()
		}
	}
}

// workerPool holds the helper goroutines of Parallel, started on first use and kept for the
// life of the process, one fewer than the largest worker count asked for. Idle helpers park
// on the jobs channel (a version that spun for 50 us between jobs, as OpenBLAS's threads do,
// decoded 20-30% slower on the shared two-core machine: the spinning helper took CPU from the
// caller and from the other processes).
type workerPool struct {
	mu      sync.Mutex
	started int
	jobs    chan *parallelJob // offered jobs; a helper takes one whenever it is idle
}

var pool = workerPool{jobs: make(chan *parallelJob, 64)}

// offer makes job available to up to helpers pool goroutines without blocking: a job left in
// the queue after its chunks are all taken costs its eventual taker nothing but a look.
func (p *workerPool) offer(job *parallelJob, helpers int) {
	p.mu.Lock()
	for p.started < helpers {
		p.started++
		go p.help()
	}
	p.mu.Unlock()
	for range helpers {
		select {
		case p.jobs <- job:
		default:
			return
		}
	}
}

// help is the body of a pool goroutine: take offered jobs and work on them.
func (p *workerPool) help() {
	for job := range p.jobs {
		job.run()
	}
}
