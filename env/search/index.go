package search

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// Options configure an index. The analyzer and title weight are fixed when the index is built
// (they shape its postings); K1 and B only enter scoring and can be changed later with SetBM25.
type Options struct {
	// K1 is BM25's term-frequency saturation, B its length normalisation (Robertson and
	// Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and Beyond", eq. 3.15).
	K1, B float64
	// TitleWeight counts each title term this many times in the passage's term frequencies
	// and length (a BM25F field weight, ibid. section 3.4); 0 leaves titles out of the index.
	TitleWeight int
	// Analyzer turns text into terms; nil means NewEnglishAnalyzer().
	Analyzer *Analyzer
	// Workers is the number of goroutines analysing passages; 0 means GOMAXPROCS.
	Workers int
}

// DefaultOptions are the settings measured best on the embedded HotpotQA, 2Wiki and MuSiQue
// questions (see the package documentation for the figures).
func DefaultOptions() Options {
	return Options{K1: 1.2, B: 0.75, TitleWeight: 4}
}

// Index is an inverted index over passages with BM25 scoring, built in memory (Build) or
// read in place from an index file (ReadFile).
//
// The postings of term t are docs[offsets[t]:offsets[t+1]] (passage numbers, increasing) and
// the matching tfs (its weighted term frequency in each). Search is safe for concurrent use;
// SetBM25 is not safe to call concurrently with Search.
type Index struct {
	analyzer    *Analyzer // settings only; each search clones it
	titleWeight int
	k1, b       float64

	passages stringTable // (3N) the id, title and text of each passage
	terms    stringTable // (T) the terms in increasing order; a term's id is its place here
	offsets  []uint32    // (T+1) start of each term's postings
	docs     []uint32    // (P) passage numbers
	tfs      []uint16    // (P) weighted term frequencies
	docLen   []uint32    // (N) weighted passage lengths in terms
	avgLen   float64

	idf    []float32 // (T) BM25 idf of each term
	impact []float32 // (P) tf * (k1 + 1) / (tf + k1 * (1 - b + b * docLen / avgLen)) of each posting

	scratch sync.Pool // *searchScratch
}

// docTerms is what a worker produces for a range of passages: for each passage its distinct
// terms (ids in the worker's local dictionary) and their weighted frequencies.
type docTerms struct {
	start  []uint32 // (n+1) offset of each passage's pairs
	termID []uint32 // (pairs) local term ids
	tf     []uint16 // (pairs) weighted term frequencies
	length []uint32 // (n) weighted passage lengths
	terms  []string // local term id -> term
}

// Build indexes passages. Passages are analysed in parallel (Options.Workers goroutines over
// contiguous ranges), then the per-worker dictionaries are merged into one sorted dictionary,
// so the index does not depend on the number of workers.
func Build(passages []Passage, opt Options) (*Index, error) {
	if len(passages) == 0 {
		return nil, fmt.Errorf("search: no passages to index")
	}
	if len(passages) > math.MaxUint32 {
		return nil, fmt.Errorf("search: %d passages is more than an index holds", len(passages))
	}
	if opt.TitleWeight < 0 || opt.TitleWeight > 100 {
		return nil, fmt.Errorf("search: title weight %d out of range [0, 100]", opt.TitleWeight)
	}
	if err := checkBM25(opt.K1, opt.B); err != nil {
		return nil, err
	}
	an := opt.Analyzer
	if an == nil {
		an = NewEnglishAnalyzer()
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(passages))

	parts := make([]docTerms, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(passages)/workers, (w+1)*len(passages)/workers
		wg.Go(func() { parts[w] = analyzeRange(passages[lo:hi], an.Clone(), opt.TitleWeight) })
	}
	wg.Wait()

	ix := &Index{analyzer: an.Clone(), titleWeight: opt.TitleWeight}
	ix.passages = newStringTable(3*len(passages), func(i int) string {
		p := &passages[i/3]
		return [...]string{p.ID, p.Title, p.Text}[i%3]
	})
	ix.invert(parts)
	ix.setIDF()
	if err := ix.SetBM25(opt.K1, opt.B); err != nil {
		return nil, err
	}
	return ix, nil
}

// analyzeRange turns each passage into its distinct terms and weighted frequencies.
func analyzeRange(passages []Passage, an *Analyzer, titleWeight int) docTerms {
	out := docTerms{
		start:  make([]uint32, 1, len(passages)+1),
		termID: make([]uint32, 0, 48*len(passages)), // about 41 distinct terms per mhqa passage
		tf:     make([]uint16, 0, 48*len(passages)),
		length: make([]uint32, 0, len(passages)),
	}
	// Every lowercase word maps straight to its local term id (-1 for a stop word), so a word
	// seen before costs one map lookup instead of a stop-word, stem and dictionary lookup each.
	sizeHint := min(4*len(passages), 1<<17) // distinct words grow about this fast in Wikipedia text
	wordTerm := make(map[string]int32, sizeHint)
	termID := make(map[string]int32, sizeHint) // term -> local id
	var count []uint32                         // (local terms) frequency in the current passage
	var distinct []uint32                      // local ids seen in the current passage
	var length uint32
	weight := uint32(1)
	add := func(word []byte) {
		id, ok := wordTerm[string(word)]
		if !ok {
			id = -1
			if term, keep := an.termUncached(word); keep {
				if id, ok = termID[term]; !ok {
					id = int32(len(out.terms))
					termID[term] = id
					out.terms = append(out.terms, term)
					count = append(count, 0)
				}
			}
			wordTerm[string(word)] = id
		}
		if id < 0 {
			return
		}
		if count[id] == 0 {
			distinct = append(distinct, uint32(id))
		}
		count[id] += weight
		length += weight
	}
	for _, p := range passages {
		length = 0
		if titleWeight > 0 {
			weight = uint32(titleWeight)
			an.words(p.Title, add)
		}
		weight = 1
		an.words(p.Text, add)
		slices.Sort(distinct)
		for _, id := range distinct {
			out.termID = append(out.termID, id)
			out.tf = append(out.tf, uint16(min(count[id], math.MaxUint16)))
			count[id] = 0
		}
		distinct = distinct[:0]
		out.start = append(out.start, uint32(len(out.termID)))
		out.length = append(out.length, length)
	}
	return out
}

// invert merges the workers' dictionaries and lays the postings out term by term.
func (ix *Index) invert(parts []docTerms) {
	// One sorted dictionary over every worker's terms.
	ids := make(map[string]uint32, len(parts[0].terms)*3/2) // term -> global id
	for _, p := range parts {
		for _, t := range p.terms {
			ids[t] = 0
		}
	}
	all := make([]string, 0, len(ids))
	for t := range ids {
		all = append(all, t)
	}
	slices.Sort(all)
	for id, t := range all {
		ids[t] = uint32(id)
	}
	ix.terms = newStringTable(len(all), func(i int) string { return all[i] })
	remap := make([][]uint32, len(parts)) // worker -> local id -> global id
	for w, p := range parts {
		remap[w] = make([]uint32, len(p.terms))
		for local, t := range p.terms {
			remap[w][local] = ids[t]
		}
	}

	// Document frequencies give each term's slice of the postings.
	ix.offsets = make([]uint32, len(all)+1)
	for w, p := range parts {
		for _, local := range p.termID {
			ix.offsets[remap[w][local]+1]++
		}
	}
	for t := range all {
		ix.offsets[t+1] += ix.offsets[t]
	}
	total := ix.offsets[len(all)]
	ix.docs = make([]uint32, total)
	ix.tfs = make([]uint16, total)
	next := slices.Clone(ix.offsets[:len(all)])
	doc := uint32(0)
	ix.docLen = make([]uint32, 0, ix.Len())
	for w, p := range parts {
		for d := range p.length {
			for i := p.start[d]; i < p.start[d+1]; i++ {
				t := remap[w][p.termID[i]]
				ix.docs[next[t]] = doc
				ix.tfs[next[t]] = p.tf[i]
				next[t]++
			}
			doc++
		}
		ix.docLen = append(ix.docLen, p.length...)
	}
	var sum float64
	for _, l := range ix.docLen {
		sum += float64(l)
	}
	ix.avgLen = max(sum/float64(len(ix.docLen)), 1)
}

// setIDF computes each term's BM25 idf from its document frequency, Lucene's BM25Similarity
// idf: ln(1 + (N - df + 0.5) / (df + 0.5)), never negative. It does not depend on k1 and b.
func (ix *Index) setIDF() {
	n := float64(ix.Len())
	ix.idf = make([]float32, len(ix.offsets)-1)
	for t := range ix.idf {
		df := float64(ix.offsets[t+1] - ix.offsets[t])
		ix.idf[t] = float32(math.Log(1 + (n-df+0.5)/(df+0.5)))
	}
}

// SetBM25 sets the BM25 parameters k1 >= 0 and 0 <= b <= 1 and recomputes the per-posting
// length normalisation. It must not run concurrently with Search.
func (ix *Index) SetBM25(k1, b float64) error {
	if err := checkBM25(k1, b); err != nil {
		return err
	}
	if ix.impact != nil && k1 == ix.k1 && b == ix.b {
		// Unchanged: keep the impacts, which for an index read from a file are the file's,
		// shared by every process that maps it.
		return nil
	}
	ix.k1, ix.b = k1, b
	norm := make([]float64, len(ix.docLen)) // (N) k1 * (1 - b + b * docLen / avgLen)
	for d, l := range ix.docLen {
		norm[d] = k1 * (1 - b + b*float64(l)/ix.avgLen)
	}
	// The term-frequency part of each posting's score depends only on the posting once k1 and
	// b are fixed, so Search only multiplies by idf and adds.
	ix.impact = make([]float32, len(ix.docs))
	for i, d := range ix.docs {
		tf := float64(ix.tfs[i])
		ix.impact[i] = float32(tf * (k1 + 1) / (tf + norm[d]))
	}
	return nil
}

func checkBM25(k1, b float64) error {
	if !(k1 >= 0 && k1 <= 100) || !(b >= 0 && b <= 1) {
		return fmt.Errorf("search: BM25 k1=%g b=%g out of range (want 0 <= k1 <= 100, 0 <= b <= 1)", k1, b)
	}
	return nil
}

// SameCorpus reports, as an error naming the first difference, whether the index was built
// from exactly these passages in this order (to check an index file against its corpus).
func SameCorpus(ix *Index, passages []Passage) error {
	if len(passages) != ix.Len() {
		return fmt.Errorf("index has %d passages, corpus %d", ix.Len(), len(passages))
	}
	for i, p := range passages {
		if have := ix.Passage(i); p != have {
			return fmt.Errorf("passage %d differs: index has id %q, corpus %q", i, have.ID, p.ID)
		}
	}
	return nil
}

// Len is the number of passages.
func (ix *Index) Len() int { return ix.passages.len() / 3 }

// Passage returns passage number doc (as in Hit.Doc); its strings share the index's memory.
// It panics if doc is out of range.
func (ix *Index) Passage(doc int) Passage {
	return Passage{ID: ix.passages.at(3 * doc), Title: ix.passages.at(3*doc + 1), Text: ix.passages.at(3*doc + 2)}
}

// Passages returns the indexed passages in index order, in a new slice whose strings share
// the index's memory.
func (ix *Index) Passages() []Passage {
	out := make([]Passage, ix.Len())
	for d := range out {
		out[d] = ix.Passage(d)
	}
	return out
}

// Stats describes the index's size.
type Stats struct {
	Passages, Terms, Postings int     // passages, distinct terms, (term, passage) pairs
	AvgLength                 float64 // weighted terms per passage
	K1, B                     float64 // the BM25 parameters (SetBM25)
	TitleWeight               int     // how many times a title's terms count (0: titles not indexed)
}

// Stats returns the index's size and parameters.
func (ix *Index) Stats() Stats {
	return Stats{
		Passages: ix.Len(), Terms: len(ix.offsets) - 1, Postings: len(ix.docs),
		AvgLength: ix.avgLen, K1: ix.k1, B: ix.b, TitleWeight: ix.titleWeight,
	}
}
