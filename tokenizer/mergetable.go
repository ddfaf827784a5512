package tokenizer

import "math/bits"

// mergeTable maps mergeKey(left, right) to mergeValue(rank, merged id): an open-addressing hash
// table with linear probing, keys and values side by side so that a look-up usually touches
// one cache line. It is what the merge loop spends its time in when a word is not cached, and
// is about twice as fast there as a Go map.
type mergeTable struct {
	slots []mergeSlot // (2^k) at most half full
	shift uint        // 64 - k: the top k bits of the hash pick the slot
}

type mergeSlot struct{ key, value uint64 }

// emptyKey marks a free slot; no pair of ids below 2^31 packs to it.
const emptyKey = ^uint64(0)

func newMergeTable(n int) mergeTable {
	k := bits.Len(uint(2*n + 1))
	slots := make([]mergeSlot, 1<<k)
	for i := range slots {
		slots[i].key = emptyKey
	}
	return mergeTable{slots: slots, shift: uint(64 - k)}
}

// slot returns the first slot to probe for key (Fibonacci hashing, Knuth TAOCP 6.4).
func (m *mergeTable) slot(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> m.shift }

// put sets the value of key, replacing an earlier one.
func (m *mergeTable) put(key, value uint64) {
	mask := uint64(len(m.slots) - 1)
	for i := m.slot(key); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.key == emptyKey || s.key == key {
			s.key, s.value = key, value
			return
		}
	}
}

// get returns the value of key and whether it is present.
func (m *mergeTable) get(key uint64) (uint64, bool) {
	mask := uint64(len(m.slots) - 1)
	for i := m.slot(key); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.key == key {
			return s.value, true
		}
		if s.key == emptyKey {
			return 0, false
		}
	}
}
