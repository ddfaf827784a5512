package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// smallCorpus is a handful of passages with overlapping vocabulary, titles that matter, and
// two passages identical in text (for tie-breaking).
func smallCorpus() []Passage {
	return []Passage{
		{ID: "p0", Title: "Gian Carlo Menotti", Text: "Gian Carlo Menotti was an Italian-American composer and librettist."},
		{ID: "p1", Title: "Maria Golovin", Text: "Maria Golovin is an English language opera in three acts by Gian Carlo Menotti."},
		{ID: "p2", Title: "The Hero (opera)", Text: "The Hero is a two-act opera by Italian-American composer Gian Carlo Menotti."},
		{ID: "p3", Title: "Shining Brow", Text: "Shining Brow is an English language opera by Daron Hagen."},
		{ID: "p4", Title: "Twin A", Text: "A passage about rivers and lakes."},
		{ID: "p5", Title: "Twin B", Text: "A passage about rivers and lakes."},
		{ID: "p6", Title: "Frank Lloyd Wright", Text: "Frank Lloyd Wright was an American architect; Wright's houses are famous."},
	}
}

// randomCorpus draws passages from a small vocabulary so terms repeat within and across them.
func randomCorpus(rng *rand.Rand, n int) []Passage {
	vocab := []string{"river", "rivers", "lake", "opera", "operas", "composer", "composed", "wright",
		"house", "houses", "american", "italian", "music", "band", "album", "film", "war", "city"}
	words := func(k int) string {
		s := ""
		for i := range k {
			if i > 0 {
				s += " "
			}
			s += vocab[rng.IntN(len(vocab))]
		}
		return s
	}
	ps := make([]Passage, n)
	for i := range ps {
		ps[i] = Passage{ID: fmt.Sprint("r", i), Title: words(1 + rng.IntN(3)), Text: words(rng.IntN(40))}
	}
	return ps
}

// bruteForce scores every passage for query by the BM25 formula in float64, straight from
// the passages' analysed title and text, and returns the top k like Search.
func bruteForce(passages []Passage, opt Options, query string, k int) []Hit {
	an := NewEnglishAnalyzer()
	tf := make([]map[string]float64, len(passages))
	length := make([]float64, len(passages))
	df := map[string]float64{}
	var total float64
	for d, p := range passages {
		tf[d] = map[string]float64{}
		for _, t := range an.Terms(nil, p.Title) {
			tf[d][t] += float64(opt.TitleWeight)
			length[d] += float64(opt.TitleWeight)
		}
		for _, t := range an.Terms(nil, p.Text) {
			tf[d][t]++
			length[d]++
		}
		for t, f := range tf[d] {
			if f > 0 {
				df[t]++
			}
		}
		total += length[d]
	}
	n := float64(len(passages))
	avg := max(total/n, 1)
	var hits []Hit
	for d := range passages {
		var s float64
		for _, t := range an.Terms(nil, query) {
			f := tf[d][t]
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-df[t]+0.5)/(df[t]+0.5))
			s += idf * f * (opt.K1 + 1) / (f + opt.K1*(1-opt.B+opt.B*length[d]/avg))
		}
		if s > 0 {
			hits = append(hits, Hit{Doc: d, Score: float32(s)})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	return hits[:min(k, len(hits))]
}

// sameHits compares hit lists allowing float32 rounding in scores; equal-scored neighbours may
// come in either order.
func sameHits(got, want []Hit) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d hits, want %d (%v vs %v)", len(got), len(want), got, want)
	}
	for i := range got {
		tol := 1e-4 * max(1, float64(want[i].Score))
		if math.Abs(float64(got[i].Score-want[i].Score)) > tol {
			return fmt.Errorf("hit %d score %g, want %g", i, got[i].Score, want[i].Score)
		}
		if got[i].Doc != want[i].Doc && math.Abs(float64(got[i].Score-want[i].Score)) > tol {
			return fmt.Errorf("hit %d is passage %d, want %d", i, got[i].Doc, want[i].Doc)
		}
	}
	return nil
}

func TestSearchMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := randomCorpus(rng, 300)
	cases := []struct {
		name     string
		passages []Passage
		opt      Options
		queries  []string
	}{
		{"small default", smallCorpus(), DefaultOptions(), []string{"Menotti opera", "English language opera", "American composer", "rivers", "Wright's house"}},
		{"small no titles", smallCorpus(), Options{K1: 1.2, B: 0.75}, []string{"Menotti opera", "Maria Golovin"}},
		{"small k1=0 b=0", smallCorpus(), Options{TitleWeight: 2}, []string{"opera composer"}},
		{"random b=1", random, Options{K1: 0.9, B: 1, TitleWeight: 3, Workers: 3}, []string{"river opera", "houses of the american composer", "war war city", "film"}},
		{"random default", random, DefaultOptions(), []string{"lake music band", "italian operas composed"}},
	}
	for _, c := range cases {
		ix, err := Build(c.passages, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, q := range c.queries {
			for _, k := range []int{1, 3, 10, 1000} {
				if err := sameHits(ix.Search(q, k), bruteForce(c.passages, c.opt, q, k)); err != nil {
					t.Errorf("%s: query %q k=%d: %v", c.name, q, k, err)
				}
			}
		}
	}
}

func TestSearchEdgeCases(t *testing.T) {
	ix, err := Build(smallCorpus(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		query string
		k     int
		want  []int // passage numbers, best first
	}{
		{"k zero", "opera", 0, nil},
		{"k negative", "opera", -1, nil},
		{"no known term", "zzzz qqqq", 5, nil},
		{"only stop words", "the of and which", 5, nil},
		{"empty", "", 5, nil},
		{"ties go to the lower passage number", "rivers lakes", 5, []int{4, 5}},
		{"title decides", "Maria Golovin", 1, []int{1}},
		{"fewer hits than k", "Daron Hagen", 10, []int{3}},
	}
	for _, c := range cases {
		var got []int
		for _, h := range ix.Search(c.query, c.k) {
			got = append(got, h.Doc)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Search(%q, %d) = %v, want %v", c.name, c.query, c.k, got, c.want)
		}
	}
	// A search that finds nothing answers nil, whatever an earlier search left in the scratch
	// it reuses: the answer does not depend on which scratch the pool hands out.
	ix.Search("opera", 5)
	if hits := ix.Search("the of and which", 5); hits != nil {
		t.Errorf("after a search with hits, a search without any = %#v, want nil", hits)
	}
}

// TestBuildIndependentOfWorkers checks that parallel analysis yields the same index as one
// worker, and that searching from many goroutines at once gives the sequential answers.
func TestBuildIndependentOfWorkers(t *testing.T) {
	passages := randomCorpus(rand.New(rand.NewPCG(3, 4)), 500)
	opt := DefaultOptions()
	opt.Workers = 1
	one, err := Build(passages, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{2, 3, 7, 1000} {
		opt.Workers = workers
		many, err := Build(passages, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(one.offsets, many.offsets) || !reflect.DeepEqual(one.docs, many.docs) ||
			!reflect.DeepEqual(one.tfs, many.tfs) || !reflect.DeepEqual(one.docLen, many.docLen) ||
			!reflect.DeepEqual(one.terms, many.terms) {
			t.Errorf("workers=%d: index differs from the one-worker index", workers)
		}
	}
	queries := []string{"river opera", "american composer", "film war", "lake"}
	want := make([][]Hit, len(queries))
	for i, q := range queries {
		want[i] = one.Search(q, 10)
	}
	errs := make(chan error, 8*len(queries))
	for g := range 8 {
		go func() {
			for i := range queries {
				q := (i + g) % len(queries)
				got := one.Search(queries[q], 10)
				if !reflect.DeepEqual(got, want[q]) {
					errs <- fmt.Errorf("goroutine %d query %q: %v, want %v", g, queries[q], got, want[q])
					continue
				}
				errs <- nil
			}
		}()
	}
	for range 8 * len(queries) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestBuildAndSetBM25Errors(t *testing.T) {
	if _, err := Build(nil, DefaultOptions()); err == nil {
		t.Error("Build(no passages) succeeded")
	}
	for _, opt := range []Options{{K1: -1, B: 0.5}, {K1: 1, B: 1.5}, {K1: math.NaN(), B: 0.5}, {K1: 1, B: 0.5, TitleWeight: -1}} {
		if _, err := Build(smallCorpus(), opt); err == nil {
			t.Errorf("Build with %+v succeeded", opt)
		}
	}
	ix, err := Build(smallCorpus(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.SetBM25(2, -0.1); err == nil {
		t.Error("SetBM25(2, -0.1) succeeded")
	}
	if err := ix.SetBM25(2, 0.3); err != nil {
		t.Errorf("SetBM25(2, 0.3): %v", err)
	}
	if st := ix.Stats(); st.K1 != 2 || st.B != 0.3 || st.Passages != 7 {
		t.Errorf("Stats after SetBM25 = %+v", st)
	}
}

func TestSameCorpus(t *testing.T) {
	ix, err := Build(smallCorpus(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	changed := smallCorpus()
	changed[3].Text += " More."
	cases := []struct {
		name     string
		passages []Passage
		ok       bool
	}{
		{"same", smallCorpus(), true},
		{"shorter", smallCorpus()[:3], false},
		{"text changed", changed, false},
	}
	for _, c := range cases {
		if err := SameCorpus(ix, c.passages); (err == nil) != c.ok {
			t.Errorf("%s: SameCorpus = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
