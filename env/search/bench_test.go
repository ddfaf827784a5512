package search

import (
	"sync"
	"testing"
)

// embedded loads the embedded corpus and HotpotQA questions once for the benchmarks and the
// recall test.
var embedded = sync.OnceValues(func() ([]Passage, error) { return LoadCorpus(EmbeddedCorpus) })

// BenchmarkIndex builds the index of the 19,719 embedded passages (analysis and inversion;
// the corpus is already in memory) and reports passages/s.
func BenchmarkIndex(b *testing.B) {
	passages, err := embedded()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Build(passages, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(passages))*float64(b.N)/b.Elapsed().Seconds(), "passages/s")
}

// BenchmarkQuery searches the embedded index for the top 10 passages of each HotpotQA question
// in turn and reports queries/s.
func BenchmarkQuery(b *testing.B) {
	passages, err := embedded()
	if err != nil {
		b.Fatal(err)
	}
	ix, err := Build(passages, DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	qs, err := LoadEvalQuestions("hotpotqa")
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		ix.Search(qs[i%len(qs)].Question, 10)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}
