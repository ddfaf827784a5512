package tokenizer

import (
	"math"
)

// Byte-level BPE merging (Sennrich et al. 2016; GPT-2 encoder.py; Hugging Face
// tokenizers/src/models/bpe/word.rs): a pre-token starts as one symbol per byte, and the
// adjacent pair with the lowest merge rank is replaced by its merged token, the leftmost one
// when the same rank occurs twice, until no adjacent pair has a rank.

// noRank marks a pair with no merge.
const noRank = math.MaxUint32

// mergeKey packs a pair of token ids into the key of Tokenizer.merges.
func mergeKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

// mergeValue packs a merge's rank and the id of the merged token.
func mergeValue(rank uint32, merged int32) uint64 { return uint64(rank)<<32 | uint64(uint32(merged)) }

// rankOf returns the rank and merged id of the pair (left, right), or noRank.
func (t *Tokenizer) rankOf(left, right int32) (rank uint32, merged int32) {
	v, ok := t.merges.get(mergeKey(left, right))
	if !ok {
		return noRank, -1
	}
	return uint32(v >> 32), int32(uint32(v))
}

// longWord is the pre-token length in bytes from which mergeWord switches from rescanning the
// pair ranks (quadratic, fastest for words) to a priority queue (n log n, for long runs of
// letters or symbols without spaces).
const longWord = 96

// encoder holds the scratch buffers and the word cache of one goroutine's encoding. Tokenizer
// keeps a pool of them; an encoder is never shared between goroutines.
type encoder struct {
	t      *Tokenizer
	syms   []int32  // (n) symbol ids of the word being merged
	ranks  []uint32 // (n) ranks[k] = rank of (syms[k], syms[k+1]); noRank when none or last
	merged []int32  // (n) merged[k] = id the pair (syms[k], syms[k+1]) merges into

	// Priority-queue merging of long words: a doubly linked list over positions.
	prev, next []int32  // (n) neighbours of each position; -1 at the ends
	heap       []uint64 // rank<<32 | position, a binary min-heap

	cache map[string]cacheSpan // pre-token bytes -> its ids in arena
	arena []int32              // ids of the cached pre-tokens, back to back
}

// cacheSpan locates one cached pre-token's ids in encoder.arena.
type cacheSpan struct{ off, n uint32 }

// Bounds of the word cache: past maxCacheEntries words or maxCacheIDs ids it starts over, and
// pre-tokens longer than maxCachedWord bytes (rarely repeated) are not cached.
const (
	maxCacheEntries = 1 << 17
	maxCacheIDs     = 1 << 21
	maxCachedWord   = 256
)

func newEncoder(t *Tokenizer) *encoder {
	return &encoder{t: t, cache: make(map[string]cacheSpan, 1024)}
}

// appendWord appends the ids of one pre-token (raw UTF-8 bytes, or any bytes) to ids.
func (e *encoder) appendWord(ids []int, word string) []int {
	if len(word) == 1 { // one byte, nothing to merge: " ", ",", a digit
		if id := e.t.byteID[word[0]]; id >= 0 {
			return append(ids, int(id))
		}
		return ids
	}
	if sp, ok := e.cache[word]; ok {
		for _, id := range e.arena[sp.off : sp.off+sp.n] {
			ids = append(ids, int(id))
		}
		return ids
	}
	syms := e.mergeWord(word)
	if len(word) > maxCachedWord {
		for _, id := range syms {
			ids = append(ids, int(id))
		}
		return ids
	}
	if len(e.cache) >= maxCacheEntries || len(e.arena)+len(syms) > maxCacheIDs {
		clear(e.cache)
		e.arena = e.arena[:0]
	}
	e.cache[word] = cacheSpan{off: uint32(len(e.arena)), n: uint32(len(syms))}
	e.arena = append(e.arena, syms...)
	for _, id := range syms {
		ids = append(ids, int(id))
	}
	return ids
}

// mergeWord returns the BPE ids of word, in a buffer owned by e. When the tokenizer ignores
// merges for whole-vocabulary words (tokenizer.json "ignore_merges": true), a word that is a
// token is that token.
func (e *encoder) mergeWord(word string) []int32 {
	t := e.t
	if t.ignoreMerges {
		if id, ok := t.rawVocab[word]; ok {
			e.syms = append(e.syms[:0], id)
			return e.syms
		}
	}
	syms := e.syms[:0]
	for i := 0; i < len(word); i++ {
		// A byte with no token of its own is dropped, as Hugging Face's BPE drops a character
		// missing from the vocabulary when there is no unk_token. Byte-level vocabularies have
		// all 256.
		if id := t.byteID[word[i]]; id >= 0 {
			syms = append(syms, id)
		}
	}
	e.syms = syms
	if len(syms) < 2 {
		return syms
	}
	if len(syms) >= longWord {
		return e.mergeQueue()
	}
	return e.mergeScan()
}

// mergeScan merges e.syms by rescanning the pair ranks for the lowest: O(n^2) comparisons of
// integers but only O(n) merge-table look-ups, since after a merge only the two pairs touching
// the new symbol change.
func (e *encoder) mergeScan() []int32 {
	t := e.t
	syms := e.syms
	n := len(syms)
	ranks := growU32(&e.ranks, n)
	merged := growI32(&e.merged, n)
	for k := 0; k < n-1; k++ {
		ranks[k], merged[k] = t.rankOf(syms[k], syms[k+1])
	}
	ranks[n-1] = noRank
	for n > 1 {
		best, pos := uint32(noRank), -1
		for k, r := range ranks[:n-1] {
			if r < best {
				best, pos = r, k
			}
		}
		if pos < 0 {
			break
		}
		// Replace syms[pos], syms[pos+1] by the merged token and shift the tail left.
		syms[pos] = merged[pos]
		copy(syms[pos+1:n-1], syms[pos+2:n])
		copy(ranks[pos+1:n-1], ranks[pos+2:n])
		copy(merged[pos+1:n-1], merged[pos+2:n])
		n--
		ranks[n-1] = noRank
		if pos+1 < n {
			ranks[pos], merged[pos] = t.rankOf(syms[pos], syms[pos+1])
		} else {
			ranks[pos] = noRank
		}
		if pos > 0 {
			ranks[pos-1], merged[pos-1] = t.rankOf(syms[pos-1], syms[pos])
		}
	}
	e.syms = syms[:n]
	return e.syms
}

// mergeQueue merges e.syms with a priority queue of (rank, position) over a linked list of
// symbols, as Hugging Face's word.rs merge_all does: pop the lowest-ranked pair (the leftmost
// among equal ranks), skip it if a merge since it was pushed changed either symbol, merge, and
// push the two pairs the new symbol forms with its neighbours.
func (e *encoder) mergeQueue() []int32 {
	t := e.t
	syms := e.syms
	n := len(syms)
	prev := growI32(&e.prev, n)
	next := growI32(&e.next, n)
	h := e.heap[:0]
	for k := 0; k < n; k++ {
		prev[k], next[k] = int32(k-1), int32(k+1)
		if k+1 < n {
			if r, _ := t.rankOf(syms[k], syms[k+1]); r != noRank {
				h = heapPush(h, uint64(r)<<32|uint64(k))
			}
		}
	}
	next[n-1] = -1
	for len(h) > 0 {
		var top uint64
		top, h = heapPop(h)
		rank, pos := uint32(top>>32), int32(uint32(top))
		nx := next[pos]
		if syms[pos] < 0 || nx < 0 {
			continue // pos was merged into its left neighbour, or is now last
		}
		r, id := t.rankOf(syms[pos], syms[nx])
		if r != rank {
			continue // one of the two symbols changed since this entry was pushed
		}
		syms[pos] = id
		syms[nx] = -1
		nn := next[nx]
		next[pos] = nn
		if nn >= 0 {
			prev[nn] = pos
			if r2, _ := t.rankOf(id, syms[nn]); r2 != noRank {
				h = heapPush(h, uint64(r2)<<32|uint64(pos))
			}
		}
		if p := prev[pos]; p >= 0 {
			if r2, _ := t.rankOf(syms[p], id); r2 != noRank {
				h = heapPush(h, uint64(r2)<<32|uint64(p))
			}
		}
	}
	e.heap = h
	out := syms[:0]
	for k := 0; k >= 0 && k < n; k = int(next[k]) {
		out = append(out, syms[k])
	}
	e.syms = out
	return out
}

// heapPush adds x to the min-heap h.
func heapPush(h []uint64, x uint64) []uint64 {
	h = append(h, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

// heapPop removes and returns the smallest element of the non-empty min-heap h.
func heapPop(h []uint64) (uint64, []uint64) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}

func growU32(buf *[]uint32, n int) []uint32 {
	if cap(*buf) < n {
		*buf = make([]uint32, n, 2*n)
	}
	return (*buf)[:n]
}

func growI32(buf *[]int32, n int) []int32 {
	if cap(*buf) < n {
		*buf = make([]int32, n, 2*n)
	}
	return (*buf)[:n]
}
