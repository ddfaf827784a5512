package search

import (
	"slices"
	"strings"
	"testing"
)

func TestAnalyzerTerms(t *testing.T) {
	english := NewEnglishAnalyzer()
	plain := &Analyzer{}
	cases := []struct {
		name     string
		analyzer *Analyzer
		text     string
		want     []string
	}{
		{"empty", english, "", nil},
		{"only separators", english, " \t\n--,;!? ", nil},
		{"stop words and stems", english, "Which Italian-American composer wrote the operas?", []string{"italian", "american", "compos", "wrote", "opera"}},
		{"possessive", english, "Menotti's opera", []string{"menotti", "opera"}},
		{"typographic possessive", english, "Menotti’s opera", []string{"menotti", "opera"}},
		{"inner apostrophe kept", plain, "O'Brien rock'n'roll", []string{"o'brien", "rock'n'roll"}},
		{"trailing apostrophe dropped", plain, "the Beatles' songs", []string{"the", "beatles", "songs"}},
		{"leading apostrophe dropped", plain, "'tis", []string{"tis"}},
		{"possessive off", &Analyzer{}, "Menotti's", []string{"menotti's"}},
		{"numbers keep separators between digits", plain, "1,000 people in 3.5 days, 1990s.", []string{"1,000", "people", "in", "3.5", "days", "1990s"}},
		{"comma after a number splits", plain, "1990, 2000", []string{"1990", "2000"}},
		{"unicode lowercase", plain, "ÉCOLE Straße ΑΘΗΝΑ", []string{"école", "straße", "αθηνα"}},
		{"combining marks stay in the word", plain, "Cafe\u0301 au lait", []string{"cafe\u0301", "au", "lait"}},
		{"non-latin scripts split on punctuation", plain, "東京・大阪 Москва́", []string{"東京", "大阪", "москва́"}},
		{"non-ASCII not stemmed", english, "Pokémon running", []string{"pokémon", "run"}},
		{"dash and em dash split", plain, "1911–2007 a—b", []string{"1911", "2007", "a", "b"}},
		{"stop word after possessive", english, "it's theirs", nil},
		{"invalid UTF-8 is a separator", plain, "ab\xffcd", []string{"ab", "cd"}},
	}
	for _, c := range cases {
		got := c.analyzer.Clone().Terms(nil, c.text)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Terms(%q) = %q, want %q", c.name, c.text, got, c.want)
		}
	}
}

// TestAnalyzerCacheBounded checks that the stem cache is emptied when it reaches its bound and
// that stems stay right across the reset.
func TestAnalyzerCacheBounded(t *testing.T) {
	a := NewEnglishAnalyzer()
	var b strings.Builder
	for i := range maxCachedStems + 10 {
		b.WriteString("w")
		for n := i; n > 0; n /= 26 {
			b.WriteByte(byte('a' + n%26))
		}
		b.WriteString("ing ")
	}
	a.Terms(nil, b.String())
	if len(a.stems) > maxCachedStems {
		t.Errorf("stem cache holds %d words, bound %d", len(a.stems), maxCachedStems)
	}
	if got := a.Terms(nil, "running"); !slices.Equal(got, []string{"run"}) {
		t.Errorf("after the cache reset: Terms(running) = %q", got)
	}
}

// TestTermsAllocations checks that analysing a query whose words are stop words or cached stems
// allocates nothing, so that a search's garbage is its hits alone.
func TestTermsAllocations(t *testing.T) {
	a := NewEnglishAnalyzer()
	query := "Which album released by the band in the north of Europe was the first?"
	terms := a.Terms(nil, query) // fills the stem cache
	if n := testing.AllocsPerRun(100, func() { terms = a.Terms(terms[:0], query) }); n != 0 {
		t.Errorf("Terms(%q) allocates %v times per call, want 0", query, n)
	}
}
