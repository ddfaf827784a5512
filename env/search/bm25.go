package search

import "slices"

// Hit is one search result: a passage number (for Index.Passage) and its BM25 score.
type Hit struct {
	Doc   int     // the passage's number in the index, from 0
	Score float32 // its BM25 score for the query
}

// searchScratch is the per-search working memory, pooled.
type searchScratch struct {
	analyzer *Analyzer
	terms    []string
	acc      []float32 // (N) score of each passage, zero outside touched
	touched  []uint32  // passages with a non-zero score
	heap     []Hit     // (k) min-heap of the best hits so far
}

func (ix *Index) getScratch() *searchScratch {
	if s, ok := ix.scratch.Get().(*searchScratch); ok {
		return s
	}
	return &searchScratch{analyzer: ix.analyzer.Clone(), acc: make([]float32, ix.Len())}
}

// Search returns the k passages with the highest BM25 score for query, best first (ties go
// to the lower passage number). A query term repeated n times counts n times. Passages that
// share no term with the query are never returned, so fewer than k hits may come back, and
// nil when none does.
//
// The score of passage d is (Robertson and Zaragoza 2009, eq. 3.15, with Lucene's idf):
//
//	sum over query terms t of  idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * len(d) / avglen))
//	idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//
// where tf and len count title terms TitleWeight times; SetBM25 precomputes the fraction for
// every posting, so a search is one multiply-add per posting of each query term. Search is
// safe for concurrent use.
func (ix *Index) Search(query string, k int) []Hit {
	if k <= 0 {
		return nil
	}
	s := ix.getScratch()
	defer ix.scratch.Put(s)
	s.terms = s.analyzer.Terms(s.terms[:0], query)
	for _, term := range s.terms {
		t, ok := ix.terms.find(term)
		if !ok {
			continue
		}
		lo, hi := ix.offsets[t], ix.offsets[t+1]
		docs, impact := ix.docs[lo:hi], ix.impact[lo:hi]
		idf := ix.idf[t]
		for i, d := range docs {
			if s.acc[d] == 0 {
				s.touched = append(s.touched, d)
			}
			s.acc[d] += idf * impact[i]
		}
	}
	hits := s.topK(k)
	for _, d := range s.touched {
		s.acc[d] = 0
	}
	s.touched = s.touched[:0]
	return hits
}

// better orders hits: higher score first, then lower passage number.
func better(a, b Hit) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Doc < b.Doc)
}

// topK selects the k best touched passages with a min-heap whose root is the worst kept hit,
// then returns them best first.
func (s *searchScratch) topK(k int) []Hit {
	h := s.heap[:0]
	for _, d := range s.touched {
		hit := Hit{Doc: int(d), Score: s.acc[d]}
		if len(h) < k {
			h = append(h, hit)
			// Sift up: the new hit rises while it is worse than its parent.
			for i := len(h) - 1; i > 0; {
				parent := (i - 1) / 2
				if !better(h[parent], h[i]) {
					break
				}
				h[parent], h[i] = h[i], h[parent]
				i = parent
			}
			continue
		}
		if !better(hit, h[0]) {
			continue
		}
		// Replace the root and sift down: it sinks below any child worse than it.
		h[0] = hit
		for i := 0; ; {
			worst, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && better(h[worst], h[l]) {
				worst = l
			}
			if r < len(h) && better(h[worst], h[r]) {
				worst = r
			}
			if worst == i {
				break
			}
			h[i], h[worst] = h[worst], h[i]
			i = worst
		}
	}
	s.heap = h
	if len(h) == 0 {
		return nil // not h[:0:0], which depends on what the scratch held before
	}
	out := slices.Clone(h)
	slices.SortFunc(out, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return out
}
