package search

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestTuneBM25 compares analyzer variants and sweeps the title weight and BM25's k1 and b over
// the embedded corpus and questions, printing recall@5 (all/any) per set; it is how
// DefaultOptions was chosen. It runs only with AGENTR1_SEARCH_TUNE=1 (about a minute).
func TestTuneBM25(t *testing.T) {
	if os.Getenv("AGENTR1_SEARCH_TUNE") == "" {
		t.Skip("set AGENTR1_SEARCH_TUNE=1 to sweep BM25 settings")
	}
	passages, err := LoadCorpus(EmbeddedCorpus)
	if err != nil {
		t.Fatal(err)
	}
	sets := []string{"hotpotqa", "2wiki", "musique"}
	questions := make([][]EvalQuestion, len(sets))
	for i, name := range sets {
		if questions[i], err = LoadEvalQuestions(name); err != nil {
			t.Fatal(err)
		}
	}
	report := func(label string, ix *Index) {
		line := label
		for i, name := range sets {
			res, err := Evaluate(ix, questions[i], []int{5})
			if err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf("  %s %.3f/%.3f", name, res.Recall[0].All, res.Recall[0].Any)
		}
		fmt.Println(line)
	}

	def := DefaultOptions()
	variants := []struct {
		name     string
		analyzer *Analyzer
	}{
		{"english", NewEnglishAnalyzer()},
		{"no-stopwords", &Analyzer{Stem: true, Possessive: true}},
		{"no-stem", &Analyzer{StopWords: EnglishStopWords, Possessive: true}},
		{"no-possessive", &Analyzer{StopWords: EnglishStopWords, Stem: true}},
	}
	for _, v := range variants {
		opt := def
		opt.Analyzer = v.analyzer
		ix, err := Build(passages, opt)
		if err != nil {
			t.Fatal(err)
		}
		report(fmt.Sprintf("analyzer=%-14s", v.name), ix)
	}

	for _, tw := range []int{0, 1, 2, 3, 4, 5} {
		start := time.Now()
		ix, err := Build(passages, Options{K1: def.K1, B: def.B, TitleWeight: tw})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("title=%d build=%v\n", tw, time.Since(start))
		for _, k1 := range []float64{0.6, 0.9, 1.2, 1.5, 2.0} {
			for _, b := range []float64{0.3, 0.5, 0.6, 0.75, 0.9} {
				if err := ix.SetBM25(k1, b); err != nil {
					t.Fatal(err)
				}
				report(fmt.Sprintf("title=%d k1=%.1f b=%.2f", tw, k1, b), ix)
			}
		}
	}
}
