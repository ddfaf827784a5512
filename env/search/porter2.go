package search

// This file is the English (Porter2) stemmer of the Snowball project, written from the
// algorithm's published description (snowballstem.org/algorithms/english/stemmer.html).
// It works on lowercase ASCII words; Analyzer leaves words with other characters unstemmed.
//
// Notation, as in the description: vowels are a e i o u y; R1 is the region after the first
// non-vowel that follows a vowel (or the end of the word); R2 is the same region taken again
// inside R1. A suffix "is in R1" when it starts at or after R1's start.

// stemExceptions are whole words the algorithm maps to fixed stems before any step.
var stemExceptions = map[string]string{
	"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli",
	"singly": "singl", "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas",
	"cosmos": "cosmos", "bias": "bias", "andes": "andes",
}

// step1aInvariants are words left alone once step 1a has run.
var step1aInvariants = map[string]bool{
	"inning": true, "outing": true, "canning": true, "herring": true, "earring": true,
	"proceed": true, "exceed": true, "succeed": true,
}

// Stem returns the Porter2 (Snowball English) stem of a lowercase ASCII word, e.g.
// "generously" -> "generous", "knackeries" -> "knackeri". Words of one or two letters and
// words containing bytes other than a-z, 0-9 and ' are returned unchanged.
func Stem(word string) string {
	if len(word) <= 2 {
		return word
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '\'' {
			return word
		}
	}
	if s, ok := stemExceptions[word]; ok {
		return s
	}
	w := []byte(word)
	if w[0] == '\'' {
		w = w[1:]
	}
	// Prelude: an initial y, and a y after a vowel, are consonants, written Y.
	for i := range w {
		if w[i] == 'y' && (i == 0 || isVowel(w[i-1])) {
			w[i] = 'Y'
		}
	}
	s := stemmer{w: w}
	s.markRegions()
	s.step0()
	s.step1a()
	if step1aInvariants[string(s.w)] {
		return restoreY(s.w)
	}
	s.step1b()
	s.step1c()
	s.step2()
	s.step3()
	s.step4()
	s.step5()
	return restoreY(s.w)
}

func restoreY(w []byte) string {
	for i, c := range w {
		if c == 'Y' {
			w[i] = 'y'
		}
	}
	return string(w)
}

// stemmer holds the word being stemmed and the starts of its regions R1 and R2.
type stemmer struct {
	w      []byte
	r1, r2 int
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u', 'y':
		return true
	}
	return false
}

// regionAfter returns the index after the first non-vowel that follows a vowel at or after
// from, or len(w).
func regionAfter(w []byte, from int) int {
	for i := from + 1; i < len(w); i++ {
		if !isVowel(w[i]) && isVowel(w[i-1]) {
			return i + 1
		}
	}
	return len(w)
}

func (s *stemmer) markRegions() {
	s.r1 = -1
	for _, p := range []string{"gener", "commun", "arsen"} {
		if len(s.w) >= len(p) && string(s.w[:len(p)]) == p {
			s.r1 = len(p)
			break
		}
	}
	if s.r1 < 0 {
		s.r1 = regionAfter(s.w, 0)
	}
	s.r2 = len(s.w)
	if s.r1 < len(s.w) {
		s.r2 = regionAfter(s.w, s.r1)
	}
}

func (s *stemmer) hasSuffix(suf string) bool {
	return len(s.w) >= len(suf) && string(s.w[len(s.w)-len(suf):]) == suf
}

// inR1 and inR2 report whether a suffix of length n starts inside the region.
func (s *stemmer) inR1(n int) bool { return len(s.w)-n >= s.r1 }
func (s *stemmer) inR2(n int) bool { return len(s.w)-n >= s.r2 }

// replace swaps the last n bytes for rep.
func (s *stemmer) replace(n int, rep string) {
	s.w = append(s.w[:len(s.w)-n], rep...)
}

// shortSyllableAt reports whether the syllable ending at index i (inclusive) is short: a
// non-vowel, a vowel, then a non-vowel other than w, x or Y; or, at the start of the word, a
// vowel followed by a non-vowel.
func shortSyllableAt(w []byte, i int) bool {
	if i == 1 {
		return isVowel(w[0]) && !isVowel(w[1])
	}
	if i < 2 {
		return false
	}
	c := w[i]
	return !isVowel(w[i-2]) && isVowel(w[i-1]) && !isVowel(c) && c != 'w' && c != 'x' && c != 'Y'
}

// isShort reports whether the word ends in a short syllable and R1 is empty.
func (s *stemmer) isShort() bool {
	return s.r1 >= len(s.w) && shortSyllableAt(s.w, len(s.w)-1)
}

// containsVowel reports whether w[:end] has a vowel.
func containsVowel(w []byte, end int) bool {
	for i := 0; i < end; i++ {
		if isVowel(w[i]) {
			return true
		}
	}
	return false
}

// step0 removes the longest of the apostrophe suffixes 's' 's '.
func (s *stemmer) step0() {
	for _, suf := range []string{"'s'", "'s", "'"} {
		if s.hasSuffix(suf) {
			s.replace(len(suf), "")
			return
		}
	}
}

// step1a handles plural endings: sses -> ss; ied, ies -> i or ie; s deleted after a vowel
// that is not immediately before it; us and ss stay.
func (s *stemmer) step1a() {
	switch {
	case s.hasSuffix("sses"):
		s.replace(2, "")
	case s.hasSuffix("ied"), s.hasSuffix("ies"):
		if len(s.w) > 4 {
			s.replace(3, "i")
		} else {
			s.replace(3, "ie")
		}
	case s.hasSuffix("us"), s.hasSuffix("ss"):
	case s.hasSuffix("s"):
		if containsVowel(s.w, len(s.w)-2) {
			s.replace(1, "")
		}
	}
}

// step1b handles eed, eedly (-> ee in R1) and ed, edly, ing, ingly (deleted after a vowel,
// then at/bl/iz gain an e, a double consonant loses one letter, a short word gains an e).
func (s *stemmer) step1b() {
	for _, suf := range []string{"eedly", "eed"} {
		if s.hasSuffix(suf) {
			if s.inR1(len(suf)) {
				s.replace(len(suf), "ee")
			}
			return
		}
	}
	for _, suf := range []string{"ingly", "edly", "ing", "ed"} {
		if !s.hasSuffix(suf) {
			continue
		}
		if !containsVowel(s.w, len(s.w)-len(suf)) {
			return
		}
		s.replace(len(suf), "")
		switch {
		case s.hasSuffix("at"), s.hasSuffix("bl"), s.hasSuffix("iz"):
			s.w = append(s.w, 'e')
		case s.endsInDouble():
			s.w = s.w[:len(s.w)-1]
		case s.isShort():
			s.w = append(s.w, 'e')
		}
		return
	}
}

func (s *stemmer) endsInDouble() bool {
	n := len(s.w)
	if n < 2 || s.w[n-1] != s.w[n-2] {
		return false
	}
	switch s.w[n-1] {
	case 'b', 'd', 'f', 'g', 'm', 'n', 'p', 'r', 't':
		return true
	}
	return false
}

// step1c replaces a final y or Y by i after a non-vowel that is not the first letter.
func (s *stemmer) step1c() {
	n := len(s.w)
	if n > 2 && (s.w[n-1] == 'y' || s.w[n-1] == 'Y') && !isVowel(s.w[n-2]) {
		s.w[n-1] = 'i'
	}
}

// suffixRule maps a suffix to its replacement.
type suffixRule struct{ suffix, replacement string }

// step2Rules are tried longest first; a rule whose suffix matches ends the search, whether or
// not it applies (the algorithm's "longest matching suffix").
var step2Rules = []suffixRule{
	{"ization", "ize"}, {"ational", "ate"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"iveness", "ive"}, {"tional", "tion"}, {"biliti", "ble"}, {"lessli", "less"},
	{"entli", "ent"}, {"ation", "ate"}, {"alism", "al"}, {"aliti", "al"}, {"ousli", "ous"},
	{"iviti", "ive"}, {"fulli", "ful"}, {"enci", "ence"}, {"anci", "ance"}, {"abli", "able"},
	{"izer", "ize"}, {"ator", "ate"}, {"alli", "al"}, {"bli", "ble"}, {"ogi", "og"},
	{"li", ""},
}

func (s *stemmer) step2() {
	for _, r := range step2Rules {
		if !s.hasSuffix(r.suffix) {
			continue
		}
		if !s.inR1(len(r.suffix)) {
			return
		}
		n := len(s.w) - len(r.suffix)
		switch r.suffix {
		case "ogi":
			if n < 1 || s.w[n-1] != 'l' {
				return
			}
		case "li":
			if n < 1 || !validLiEnding(s.w[n-1]) {
				return
			}
		}
		s.replace(len(r.suffix), r.replacement)
		return
	}
}

func validLiEnding(c byte) bool {
	switch c {
	case 'c', 'd', 'e', 'g', 'h', 'k', 'm', 'n', 'r', 't':
		return true
	}
	return false
}

var step3Rules = []suffixRule{
	{"ational", "ate"}, {"tional", "tion"}, {"alize", "al"}, {"icate", "ic"},
	{"iciti", "ic"}, {"ative", ""}, {"ical", "ic"}, {"ness", ""}, {"ful", ""},
}

func (s *stemmer) step3() {
	for _, r := range step3Rules {
		if !s.hasSuffix(r.suffix) {
			continue
		}
		if !s.inR1(len(r.suffix)) || (r.suffix == "ative" && !s.inR2(len(r.suffix))) {
			return
		}
		s.replace(len(r.suffix), r.replacement)
		return
	}
}

// step4Suffixes are deleted when in R2 (ion only after s or t), longest first.
var step4Suffixes = []string{
	"ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous",
	"ive", "ize", "ion", "al", "er", "ic",
}

func (s *stemmer) step4() {
	for _, suf := range step4Suffixes {
		if !s.hasSuffix(suf) {
			continue
		}
		if !s.inR2(len(suf)) {
			return
		}
		if suf == "ion" {
			n := len(s.w) - 3
			if n < 1 || (s.w[n-1] != 's' && s.w[n-1] != 't') {
				return
			}
		}
		s.replace(len(suf), "")
		return
	}
}

// step5 deletes a final e in R2, or in R1 when not preceded by a short syllable, and a final
// l in R2 after another l.
func (s *stemmer) step5() {
	n := len(s.w)
	switch {
	case s.hasSuffix("e"):
		if s.inR2(1) || (s.inR1(1) && !shortSyllableAt(s.w, n-2)) {
			s.w = s.w[:n-1]
		}
	case s.hasSuffix("l"):
		if s.inR2(1) && n >= 2 && s.w[n-2] == 'l' {
			s.w = s.w[:n-1]
		}
	}
}
