package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"agentr1/env/search"
)

func init() {
	c := &command{
		name:    "search",
		summary: "search the wiki passage corpus with BM25, or measure its retrieval recall on questions",
		usage: "agentr1 search (--corpus FILE|mhqa | --index INDEX) (--query TEXT | --eval QUESTIONS.jsonl|hotpotqa|2wiki|musique) [--k N]\n" +
			"  e.g. agentr1 search --corpus mhqa --query 'Maria Golovin opera composer'\n" +
			"       agentr1 search --corpus mhqa --eval hotpotqa",
	}
	c.flags = searchFlags(new(searchOptions))
	c.run = func(args []string, stdout, stderr io.Writer) error {
		var opt searchOptions
		fs := newFlagSet(c, stderr)
		searchFlags(&opt)(fs)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return runSearch(opt, stdout)
	}
	register(c)
}

// indexSource says where a command gets its index: built from a corpus, or loaded from a
// file saved by `agentr1 index` (checked against the corpus when both are given).
type indexSource struct {
	corpus      string
	index       string
	k1, b       optFloat // unset: the index file's, or the defaults when building
	titleWeight int
}

// optFloat is a float flag that remembers whether it was given.
type optFloat struct {
	v   float64
	set bool
}

func (f *optFloat) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatFloat(f.v, 'g', -1, 64)
}

func (f *optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	f.v, f.set = v, true
	return nil
}

func indexSourceFlags(fs *flag.FlagSet, src *indexSource) {
	def := search.DefaultOptions()
	fs.StringVar(&src.corpus, "corpus", "", "passage corpus: a JSONL file, optionally .gz ({\"id\",\"title\",\"text\"} or Search-R1's {\"id\",\"contents\"}), or \"mhqa\" for the embedded one")
	fs.StringVar(&src.index, "index", "", "an index file saved by 'agentr1 index' (instead of building one from --corpus)")
	fs.Var(&src.k1, "k1", fmt.Sprintf("BM25 k1, a `number` (default %g when building, else the index file's)", def.K1))
	fs.Var(&src.b, "b", fmt.Sprintf("BM25 b, a `number` in [0, 1] (default %g when building, else the index file's)", def.B))
	fs.IntVar(&src.titleWeight, "title-weight", def.TitleWeight, "times each title term counts when building (0 leaves titles out)")
}

// load builds or loads the index and returns it with the time that took (building: analysis
// and inversion of passages already in memory; loading: reading and checking the file).
func (src indexSource) load() (*search.Index, time.Duration, error) {
	if src.corpus == "" && src.index == "" {
		return nil, 0, fmt.Errorf("%w: give --corpus or --index", errUsage)
	}
	var ix *search.Index
	var elapsed time.Duration
	if src.index != "" {
		start := time.Now()
		var err error
		if ix, err = search.ReadFile(src.index); err != nil {
			return nil, 0, err
		}
		elapsed = time.Since(start)
		if src.corpus != "" {
			passages, err := search.LoadCorpus(src.corpus)
			if err != nil {
				return nil, 0, err
			}
			if err := search.SameCorpus(ix, passages); err != nil {
				return nil, 0, fmt.Errorf("index %s does not match corpus %s: %w", src.index, src.corpus, err)
			}
		}
	} else {
		passages, err := search.LoadCorpus(src.corpus)
		if err != nil {
			return nil, 0, err
		}
		opt := search.DefaultOptions()
		opt.TitleWeight = src.titleWeight
		start := time.Now()
		if ix, err = search.Build(passages, opt); err != nil {
			return nil, 0, err
		}
		elapsed = time.Since(start)
	}
	st := ix.Stats()
	k1, b := st.K1, st.B
	if src.k1.set {
		k1 = src.k1.v
	}
	if src.b.set {
		b = src.b.v
	}
	if err := ix.SetBM25(k1, b); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errUsage, err)
	}
	return ix, elapsed, nil
}

type searchOptions struct {
	src   indexSource
	query string
	eval  string
	k     int
}

func searchFlags(opt *searchOptions) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		indexSourceFlags(fs, &opt.src)
		fs.StringVar(&opt.query, "query", "", "print the top --k passages for this query")
		fs.StringVar(&opt.eval, "eval", "", "questions in the mhqa JSONL schema, or an embedded set (hotpotqa, 2wiki, musique): print recall@1,3,5,10 of their supporting passages (all: every one in the top K; any: at least one)")
		fs.IntVar(&opt.k, "k", search.DefaultTopK, "passages to print for --query")
	}
}

// evalCutoffs are the K of the recall@K lines --eval prints.
var evalCutoffs = []int{1, 3, 5, 10}

// runSearch prints the results of one query, or with --eval two "# " lines saying what the
// figures are, the lines "recall@K all=X any=Y" for K = 1, 3, 5, 10, then "ms/query=Z" and
// "index_s=W".
func runSearch(opt searchOptions, stdout io.Writer) error {
	if (opt.query == "") == (opt.eval == "") {
		return fmt.Errorf("%w: give exactly one of --query and --eval", errUsage)
	}
	if opt.k < 1 {
		return fmt.Errorf("%w: --k must be at least 1", errUsage)
	}
	var questions []search.EvalQuestion
	if opt.eval != "" {
		var err error
		if questions, err = search.LoadEvalQuestions(opt.eval); err != nil {
			return err
		}
	}
	ix, indexTime, err := opt.src.load()
	if err != nil {
		return err
	}
	if opt.query != "" {
		for i, h := range ix.Search(opt.query, opt.k) {
			p := ix.Passage(h.Doc)
			fmt.Fprintf(stdout, "Doc %d (Title: \"%s\") %s\n  id=%s score=%.4f\n", i+1, p.Title, p.Text, p.ID, h.Score)
		}
		return nil
	}
	res, err := search.Evaluate(ix, questions, evalCutoffs)
	if err != nil {
		return err
	}
	supporting := 0
	for _, q := range questions {
		supporting += len(q.Supporting)
	}
	how := "building the index from --corpus"
	if opt.src.index != "" {
		how = "loading --index"
	}
	fmt.Fprintf(stdout, "# %d questions, %.1f supporting passages each on average. recall@K: all = the share of questions with every supporting passage in the top K, any = with at least one\n",
		len(questions), float64(supporting)/float64(len(questions)))
	fmt.Fprintf(stdout, "# ms/query = the mean time of one search; index_s = seconds %s\n", how)
	for _, r := range res.Recall {
		fmt.Fprintf(stdout, "recall@%d all=%.3f any=%.3f\n", r.K, r.All, r.Any)
	}
	fmt.Fprintf(stdout, "ms/query=%.4f\n", float64(res.PerQuery)/float64(time.Millisecond))
	fmt.Fprintf(stdout, "index_s=%.3f\n", indexTime.Seconds())
	return nil
}
