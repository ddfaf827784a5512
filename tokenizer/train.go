package tokenizer

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Train learns a byte-level BPE vocabulary from texts, the way Hugging Face's BpeTrainer does
// with Qwen's pre-tokenizer (Sennrich et al. 2016, "Neural Machine Translation of Rare Words
// with Subword Units", Algorithm 1, over bytes as in GPT-2):
//
//  1. specials are split out of each text like added tokens, the rest is NFC-normalised and
//     cut into pre-tokens (PreTokenize), and identical pre-tokens are counted;
//  2. the vocabulary starts as the 256 byte tokens (ids 0..255, in the order of their
//     byte-level characters, as in Qwen: '!' is 0);
//  3. repeatedly, the adjacent pair of tokens occurring most often (counting each pre-token
//     with its multiplicity) becomes a new token with the next id, and its occurrences are
//     merged; ties go to the smaller (left id, right id) pair, so training is deterministic;
//  4. it stops at vocabSize tokens in all, specials included, or when no pair is left;
//  5. the specials get the ids right after the BPE vocabulary, in the order given. Those
//     spelled "<|...|>" are special (skipped by DecodeSkipSpecial), the others (tool tags,
//     "<think>") are plain added tokens, as in Qwen's files.
//
// specials must include "<|im_start|>", "<|im_end|>" and "<|endoftext|>", which RenderChat
// writes; EOS is "<|im_end|>" and Pad "<|endoftext|>". progress, when not nil, is called about
// a hundred times with the merges done and the merges wanted.
func Train(texts []string, vocabSize int, specials []string, progress func(done, total int)) (*Tokenizer, error) {
	seen := map[string]bool{}
	for _, s := range specials {
		if s == "" || seen[s] {
			return nil, fmt.Errorf("tokenizer: train: special token %q is empty or repeated", s)
		}
		seen[s] = true
	}
	for _, need := range []string{imStart, imEnd, endOfText} {
		if !seen[need] {
			return nil, fmt.Errorf("tokenizer: train: specials lack the chat marker %q", need)
		}
	}
	wantMerges := vocabSize - 256 - len(specials)
	if wantMerges < 0 {
		return nil, fmt.Errorf("tokenizer: train: vocabSize %d is less than 256 byte tokens + %d specials", vocabSize, len(specials))
	}

	// 1. Count the pre-tokens.
	specialTokens := make([]AddedToken, len(specials))
	for i, s := range specials {
		specialTokens[i] = AddedToken{ID: i, Content: s}
	}
	matcher := newAddedMatcher(specialTokens)
	counts := map[string]int64{}
	for _, text := range texts {
		for len(text) > 0 {
			start, end, id := matcher.find(text)
			plain := text
			if id >= 0 {
				plain = text[:start]
			}
			plain = norm.NFC.String(plain)
			for i := 0; i < len(plain); {
				j := nextPreToken(plain, i)
				counts[plain[i:j]]++
				i = j
			}
			if id < 0 {
				break
			}
			text = text[end:]
		}
	}

	// 2. The byte alphabet, ids in the order of the byte-level characters.
	var byteRunes []rune
	for b := range 256 {
		byteRunes = append(byteRunes, byteToRune[b])
	}
	sort.Slice(byteRunes, func(i, j int) bool { return byteRunes[i] < byteRunes[j] })
	vocab := make(map[string]int32, vocabSize)
	var spellings []string // id -> spelling
	for _, r := range byteRunes {
		vocab[string(r)] = int32(len(spellings))
		spellings = append(spellings, string(r))
	}
	var byteID [256]int32
	for b := range 256 {
		byteID[b] = vocab[string(byteToRune[b])]
	}

	// Words in sorted order, so that everything below is independent of map order.
	keys := make([]string, 0, len(counts))
	for w := range counts {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	tr := &bpeTrainer{
		words:  make([][]int32, len(keys)),
		counts: make([]int64, len(keys)),
		pairs:  map[uint64]int64{},
		where:  map[uint64][]int32{},
		stamp:  make([]int32, len(keys)),
	}
	for i, w := range keys {
		syms := make([]int32, len(w))
		for k := 0; k < len(w); k++ {
			syms[k] = byteID[w[k]]
		}
		tr.words[i], tr.counts[i] = syms, counts[w]
		for k := 0; k+1 < len(syms); k++ {
			tr.add(mergeKey(syms[k], syms[k+1]), counts[w], int32(i))
		}
	}
	for p, c := range tr.pairs {
		tr.queue = append(tr.queue, pairCount{p, c})
	}
	heap.Init(&tr.queue)

	// 3. Merge the most frequent pair until the vocabulary is full.
	var merges [][2]int32
	every := max(1, wantMerges/100)
	for len(merges) < wantMerges && tr.queue.Len() > 0 {
		top := heap.Pop(&tr.queue).(pairCount)
		if cur := tr.pairs[top.pair]; cur != top.count {
			if cur > 0 { // stale entry: requeue with the current count
				heap.Push(&tr.queue, pairCount{top.pair, cur})
			}
			continue
		}
		left, right := int32(top.pair>>32), int32(uint32(top.pair))
		spelling := spellings[left] + spellings[right]
		id, ok := vocab[spelling] // two merge paths can spell the same token; it keeps one id
		if !ok {
			id = int32(len(spellings))
			vocab[spelling] = id
			spellings = append(spellings, spelling)
		}
		merges = append(merges, [2]int32{left, right})
		tr.merge(left, right, id, int32(len(merges)))
		if progress != nil && (len(merges)%every == 0 || len(merges) == wantMerges) {
			progress(len(merges), wantMerges)
		}
	}

	// 5. Specials after the BPE vocabulary.
	added := make([]AddedToken, len(specials))
	for i, s := range specials {
		isSpecial := strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>")
		added[i] = AddedToken{ID: len(spellings) + i, Content: s, Special: isSpecial}
	}
	t, err := build(model{vocab: vocab, merges: merges, added: added, nfc: true, eosToken: imEnd, padToken: endOfText})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: train: %w", err)
	}
	return t, nil
}

// bpeTrainer holds the state of the merge loop: every distinct pre-token as a symbol list with
// its count, the count of every adjacent pair, and which words hold each pair.
type bpeTrainer struct {
	words  [][]int32          // (W, len) symbol ids of each distinct pre-token
	counts []int64            // (W) occurrences of each pre-token in the corpus
	pairs  map[uint64]int64   // mergeKey(left, right) -> occurrences in the corpus
	where  map[uint64][]int32 // mergeKey -> words holding the pair (may repeat, may be stale)
	stamp  []int32            // (W) last merge that visited each word, to visit it once
	queue  pairQueue
}

// add counts n more occurrences of pair in word w.
func (tr *bpeTrainer) add(pair uint64, n int64, w int32) {
	tr.pairs[pair] += n
	if l := tr.where[pair]; len(l) == 0 || l[len(l)-1] != w {
		tr.where[pair] = append(l, w)
	}
}

// merge replaces every (left, right) in the words that hold it by id, left to right without
// overlaps as Hugging Face's Word::merge does, and updates the pair counts: the pairs the
// merged symbols formed with their neighbours lose the word's count, the pairs the new symbol
// forms gain it (and are queued).
func (tr *bpeTrainer) merge(left, right, id int32, mergeNo int32) {
	target := mergeKey(left, right)
	touched := map[uint64]bool{}
	for _, w := range tr.where[target] {
		if tr.stamp[w] == mergeNo {
			continue
		}
		tr.stamp[w] = mergeNo
		syms, n := tr.words[w], tr.counts[w]
		out := syms[:0]
		for k := 0; k < len(syms); k++ {
			if k+1 < len(syms) && syms[k] == left && syms[k+1] == right {
				if len(out) > 0 {
					prev := out[len(out)-1]
					tr.pairs[mergeKey(prev, left)] -= n
					tr.add(mergeKey(prev, id), n, w)
					touched[mergeKey(prev, id)] = true
				}
				if k+2 < len(syms) {
					tr.pairs[mergeKey(right, syms[k+2])] -= n
					tr.add(mergeKey(id, syms[k+2]), n, w)
					touched[mergeKey(id, syms[k+2])] = true
				}
				tr.pairs[target] -= n
				out = append(out, id)
				k++
				continue
			}
			out = append(out, syms[k])
		}
		tr.words[w] = out
	}
	delete(tr.pairs, target)
	delete(tr.where, target)
	// Queue the grown pairs in a fixed order (the heap's tie-breaking makes the pop order
	// independent of push order, but a sorted loop keeps the heap's layout reproducible too).
	grown := make([]uint64, 0, len(touched))
	for p := range touched {
		grown = append(grown, p)
	}
	sort.Slice(grown, func(i, j int) bool { return grown[i] < grown[j] })
	for _, p := range grown {
		if c := tr.pairs[p]; c > 0 {
			heap.Push(&tr.queue, pairCount{p, c})
		}
	}
}

// pairCount is a queue entry: a pair and its count when queued.
type pairCount struct {
	pair  uint64
	count int64
}

// pairQueue is a max-heap by count, then min by pair (left id, then right id).
type pairQueue []pairCount

func (q pairQueue) Len() int { return len(q) }
func (q pairQueue) Less(i, j int) bool {
	if q[i].count != q[j].count {
		return q[i].count > q[j].count
	}
	return q[i].pair < q[j].pair
}
func (q pairQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pairQueue) Push(x any)   { *q = append(*q, x.(pairCount)) }
func (q *pairQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
