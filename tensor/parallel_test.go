package tensor

import (
	"sync/atomic"
	"testing"
)

// TestShards checks tensor.Shards: every shard runs once, on two goroutines at once when there
// are two workers; kernels inside see one available worker and nested calls run in order on
// the calling goroutine; a shard's panic reaches the caller after the others have finished.
func TestShards(t *testing.T) {
	defer SetWorkers(SetWorkers(2))
	var ran [5]atomic.Int32
	var inside atomic.Int32
	Shards(5, func(s int) {
		ran[s].Add(1)
		if Available() != 1 {
			inside.Add(1)
		}
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
	if inside.Load() != 0 {
		t.Errorf("%d shards saw more than one available worker", inside.Load())
	}
	if Available() != 2 {
		t.Errorf("after Shards, %d workers available, want 2", Available())
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
