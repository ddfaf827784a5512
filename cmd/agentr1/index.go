package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"agentr1/env/search"
)

func init() {
	c := &command{
		name:    "index",
		summary: "build the BM25 index of a wiki passage corpus and save it to one file",
		usage: "agentr1 index --corpus FILE|mhqa --out INDEX [--k1 X] [--b X] [--title-weight N]\n" +
			"  e.g. agentr1 index --corpus mhqa --out mhqa.bm25",
	}
	c.flags = indexFlags(new(indexOptions))
	c.run = func(args []string, stdout, stderr io.Writer) error {
		var opt indexOptions
		fs := newFlagSet(c, stderr)
		indexFlags(&opt)(fs)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return runIndex(opt, stdout)
	}
	register(c)
}

type indexOptions struct {
	corpus, out string
	k1, b       float64
	titleWeight int
}

func indexFlags(opt *indexOptions) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		def := search.DefaultOptions()
		fs.StringVar(&opt.corpus, "corpus", "", "passage corpus: a JSONL file, optionally .gz ({\"id\",\"title\",\"text\"} or Search-R1's {\"id\",\"contents\"}), or \"mhqa\" for the embedded one")
		fs.StringVar(&opt.out, "out", "", "the index file to write")
		fs.Float64Var(&opt.k1, "k1", def.K1, "BM25 k1 stored in the index (searches may override it)")
		fs.Float64Var(&opt.b, "b", def.B, "BM25 b stored in the index (searches may override it)")
		fs.IntVar(&opt.titleWeight, "title-weight", def.TitleWeight, "times each title term counts (0 leaves titles out)")
	}
}

// runIndex builds the index of the corpus, saves it and prints its size and build time.
func runIndex(opt indexOptions, stdout io.Writer) error {
	if opt.corpus == "" || opt.out == "" {
		return fmt.Errorf("%w: --corpus and --out are required", errUsage)
	}
	passages, err := search.LoadCorpus(opt.corpus)
	if err != nil {
		return err
	}
	start := time.Now()
	ix, err := search.Build(passages, search.Options{K1: opt.k1, B: opt.b, TitleWeight: opt.titleWeight})
	if err != nil {
		return err
	}
	built := time.Since(start)
	if err := ix.WriteFile(opt.out); err != nil {
		return err
	}
	st := ix.Stats()
	fmt.Fprintf(stdout, "indexed %d passages: %d terms, %d postings, %.1f terms/passage, in %.3f s -> %s\n",
		st.Passages, st.Terms, st.Postings, st.AvgLength, built.Seconds(), opt.out)
	return nil
}
