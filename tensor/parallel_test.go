package tensor

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestShards checks tensor.Shards: every shard runs once, on two goroutines at once when there
// are two workers; kernels inside see one available worker while both run a shard, and two
// once the other shard of two has finished; nested calls run in order on the calling
// goroutine; a shard's panic reaches the caller after the others have finished.
func TestShards(t *testing.T) {
	defer SetWorkers(SetWorkers(2))
	var ran [5]atomic.Int32
	Shards(5, func(s int) {
		ran[s].Add(1)
		order := []int{}
		Shards(3, func(s int) { order = append(order, s) }) // nested: in order, here
		if len(order) != 3 || order[0] != 0 || order[2] != 2 {
			t.Errorf("nested Shards ran %v, want [0 1 2]", order)
		}
	})
	for s := range ran {
		if n := ran[s].Load(); n != 1 {
			t.Errorf("shard %d ran %d times", s, n)
		}
	}
	if Available() != 2 {
		t.Errorf("after Shards, %d workers available, want 2", Available())
	}

	// Shard 0 sees one worker while shard 1 runs and two once it has returned.
	var started, released atomic.Int32
	var during, after int
	Shards(2, func(s int) {
		if s == 1 {
			started.Add(1)
			for released.Load() == 0 {
			}
			return
		}
		for started.Load() == 0 {
		}
		during = Available()
		released.Add(1)
		for deadline := time.Now().Add(5 * time.Second); Available() == 1 && time.Now().Before(deadline); {
		}
		after = Available()
	})
	if during != 1 || after != 2 {
		t.Errorf("inside a shard, %d workers available while the other runs and %d after, want 1 and 2", during, after)
	}

	// Two shards that each wait for the other finish only if they run at once.
	var arrived atomic.Int32
	Shards(2, func(int) {
		arrived.Add(1)
		for arrived.Load() < 2 {
		}
	})

	var finished atomic.Int32
	func() {
		defer func() {
			if r := recover(); r != "shard 1" {
				t.Errorf("recovered %v, want the panic of shard 1", r)
			}
			if finished.Load() != 2 {
				t.Errorf("%d shards finished before the panic reached the caller, want 2", finished.Load())
			}
		}()
		Shards(3, func(s int) {
			if s == 1 {
				panic("shard 1")
			}
			finished.Add(1)
		})
	}()
	if Available() != 2 {
		t.Errorf("after a panicking Shards, %d workers available, want 2", Available())
	}
}
