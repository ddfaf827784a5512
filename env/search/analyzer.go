package search

import (
	"unicode"
	"unicode/utf8"
)

// Analyzer turns text into index terms: it splits words at every rune that is not a letter,
// mark or digit (keeping an apostrophe between letters, as in "o'brien", and a comma or point
// between digits, as in "1,000" or "3.5"), lowercases them (unicode.ToLower), strips the
// English possessive "'s", drops English stop words and stems what is left with Porter2.
// This is the pipeline of bleve's and Lucene's English analyzers, with a simpler word splitter
// than their Unicode (UAX #29) segmentation. The same analyzer must index the corpus and
// parse the queries; the index file records its settings.
//
// An Analyzer is not safe for concurrent use (it caches stems); give each goroutine its own
// with Clone.
type Analyzer struct {
	// StopWords are dropped after lowercasing and possessive stripping; nil keeps every word.
	StopWords map[string]bool
	// Stem enables the Porter2 stemmer.
	Stem bool
	// Possessive strips a trailing 's or ’s.
	Possessive bool

	stems map[string]string // word -> stem, filled lazily
	buf   []byte            // the word being built, lowercase UTF-8
}

// maxCachedStems bounds an analyzer's stem cache, so a long-running server parsing
// arbitrary queries does not grow without limit.
const maxCachedStems = 1 << 18

// NewEnglishAnalyzer returns the analyzer the index uses by default: English stop words,
// possessive stripping and Porter2 stemming.
func NewEnglishAnalyzer() *Analyzer {
	return &Analyzer{StopWords: EnglishStopWords, Stem: true, Possessive: true}
}

// Clone returns an analyzer with the same settings and its own stem cache.
func (a *Analyzer) Clone() *Analyzer {
	return &Analyzer{StopWords: a.StopWords, Stem: a.Stem, Possessive: a.Possessive}
}

// Terms appends the terms of text to dst and returns it.
func (a *Analyzer) Terms(dst []string, text string) []string {
	a.words(text, func(word []byte) {
		if t, ok := a.term(word); ok {
			dst = append(dst, t)
		}
	})
	return dst
}

// term maps one lowercase word to its index term; ok is false for a stop word. Stems are
// cached.
func (a *Analyzer) term(word []byte) (term string, ok bool) {
	word, ok = a.filter(word)
	if !ok {
		return "", false // no string for a stop word: queries are full of them
	}
	if !a.Stem {
		return string(word), true
	}
	if s, hit := a.stems[string(word)]; hit { // the conversion does not allocate
		return s, true
	}
	w := string(word)
	s := Stem(w)
	if a.stems == nil || len(a.stems) >= maxCachedStems {
		a.stems = make(map[string]string)
	}
	a.stems[w] = s
	return s, true
}

// termUncached is term without the stem cache, for callers that cache whole words themselves.
func (a *Analyzer) termUncached(word []byte) (term string, ok bool) {
	word, ok = a.filter(word)
	if !ok {
		return "", false
	}
	if a.Stem {
		return Stem(string(word)), true
	}
	return string(word), true
}

// filter strips the possessive and reports whether what is left is a word to index (not
// empty, not a stop word).
func (a *Analyzer) filter(word []byte) ([]byte, bool) {
	if a.Possessive {
		word = stripPossessive(word)
	}
	return word, len(word) > 0 && !a.StopWords[string(word)]
}

// stripPossessive removes a trailing 's (the analyzer has already written ’ as ').
func stripPossessive(w []byte) []byte {
	if n := len(w); n >= 2 && w[n-2] == '\'' && w[n-1] == 's' {
		return w[:n-2]
	}
	return w
}

// wordRune reports whether r belongs inside a word.
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// joins reports whether the separator sep stays inside a word, given the kind of the rune
// before it and the rune after it: an apostrophe (' or ’) between letters, a comma or point
// between digits.
func joins(sep rune, prevLetter, prevDigit bool, next rune) bool {
	switch sep {
	case '\'', '’':
		return prevLetter && unicode.IsLetter(next)
	case ',', '.':
		return prevDigit && unicode.IsDigit(next)
	}
	return false
}

// words calls emit with each lowercase word of text. The slice is reused between calls.
func (a *Analyzer) words(text string, emit func(word []byte)) {
	buf := a.buf[:0]
	prevDigit, prevLetter := false, false // kind of the last rune appended to buf
	for i := 0; i < len(text); {
		c := text[i]
		// ASCII letters and digits, the bulk of the text, skip the Unicode tables.
		switch {
		case 'a' <= c && c <= 'z':
			buf = append(buf, c)
			prevDigit, prevLetter = false, true
			i++
			continue
		case 'A' <= c && c <= 'Z':
			buf = append(buf, c+('a'-'A'))
			prevDigit, prevLetter = false, true
			i++
			continue
		case '0' <= c && c <= '9':
			buf = append(buf, c)
			prevDigit, prevLetter = true, false
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		if wordRune(r) {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			prevDigit = unicode.IsDigit(r)
			prevLetter = !prevDigit
			continue
		}
		if len(buf) > 0 && i < len(text) {
			next, _ := utf8.DecodeRuneInString(text[i:])
			if joins(r, prevLetter, prevDigit, next) {
				if r == '’' {
					r = '\''
				}
				buf = append(buf, byte(r)) // the next rune sets prevDigit and prevLetter
				continue
			}
		}
		if len(buf) > 0 {
			emit(buf)
			buf = buf[:0]
		}
		prevDigit, prevLetter = false, false
	}
	if len(buf) > 0 {
		emit(buf)
	}
	a.buf = buf[:0]
}

// EnglishStopWords is the Snowball project's English stop word list (the one bleve's "en"
// analyzer uses), with the forms its possessive filter leaves ("it", "let") covered.
var EnglishStopWords = makeSet(
	"i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
	"yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself",
	"it", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which",
	"who", "whom", "this", "that", "these", "those", "am", "is", "are", "was", "were", "be",
	"been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "would",
	"should", "could", "ought", "i'm", "you're", "he's", "she's", "it's", "we're", "they're",
	"i've", "you've", "we've", "they've", "i'd", "you'd", "he'd", "she'd", "we'd", "they'd",
	"i'll", "you'll", "he'll", "she'll", "we'll", "they'll", "isn't", "aren't", "wasn't",
	"weren't", "hasn't", "haven't", "hadn't", "doesn't", "don't", "didn't", "won't",
	"wouldn't", "shan't", "shouldn't", "can't", "cannot", "couldn't", "mustn't", "let's",
	"that's", "who's", "what's", "here's", "there's", "when's", "where's", "why's", "how's",
	"a", "an", "the", "and", "but", "if", "or", "because", "as", "until", "while", "of", "at",
	"by", "for", "with", "about", "against", "between", "into", "through", "during", "before",
	"after", "above", "below", "to", "from", "up", "down", "in", "out", "on", "off", "over",
	"under", "again", "further", "then", "once", "here", "there", "when", "where", "why", "how",
	"all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor",
	"not", "only", "own", "same", "so", "than", "too", "very",
)

func makeSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
