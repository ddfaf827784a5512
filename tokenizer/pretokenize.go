package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Qwen2Pattern is the regular expression of the Split pre-tokenizer in Qwen2, Qwen2.5 and Qwen3
// tokenizer.json files. Hugging Face runs it with Oniguruma, finding matches left to right
// ("behavior": "Isolated": every match is a pre-token). Go's regexp has no lookahead, so
// nextPreToken implements it by hand.
const Qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Character classes of the pattern, for one rune:
//
//	\p{L}  a letter, general category L (Lu Ll Lt Lm Lo): unicode.IsLetter;
//	\p{N}  a number, general category N (Nd Nl No): unicode.IsNumber ("²", "½", "Ⅻ" too);
//	\s     White_Space (Oniguruma's Unicode \s): unicode.IsSpace, which is the same set
//	       (\t \n \v \f \r, space, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029,
//	       U+202F, U+205F, U+3000);
//	other  anything else: punctuation, symbols, marks (a combining accent that NFC could not
//	       compose is "other", so it breaks a word), controls.
//
// A byte that is not valid UTF-8 (Hugging Face never sees one, since Rust strings are valid) is
// taken as one "other" character, so invalid input still splits into pre-tokens covering every
// byte, and byte-level BPE encodes those bytes losslessly.
const (
	classOther = iota
	classLetter
	classNumber
	classSpace
	classNewline // '\r' or '\n': white space that rules 2, 4 and 5 single out
)

// asciiClass is the class of each ASCII byte.
var asciiClass [utf8.RuneSelf]uint8

func init() {
	for b := 0; b < utf8.RuneSelf; b++ {
		asciiClass[b] = slowClass(rune(b))
	}
}

func slowClass(r rune) uint8 {
	switch {
	case r == '\r' || r == '\n':
		return classNewline
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

// runeAt decodes the character at s[i] and returns its class and width in bytes (an invalid
// byte is an "other" character of width 1).
func runeAt(s string, i int) (r rune, class uint8, width int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), asciiClass[c], 1
	}
	r, width = utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && width == 1 {
		return r, classOther, 1
	}
	return r, slowClass(r), width
}

// classAt is runeAt without the rune, and class -1 past the end of s.
func classAt(s string, i int) (class int, width int) {
	if i >= len(s) {
		return -1, 0
	}
	_, c, w := runeAt(s, i)
	return int(c), w
}

// isSpaceClass reports whether class c is white space (\s), newlines included.
func isSpaceClass(c int) bool { return c == classSpace || c == classNewline }

// isPunctClass reports whether class c is in [^\s\p{L}\p{N}].
func isPunctClass(c int) bool { return c == classOther }

// nextPreToken returns the end of the pre-token that starts at s[i] (i < len(s)): the match of
// Qwen2Pattern that Oniguruma finds at i, alternatives tried in order and the first that matches
// wins (leftmost-first, with backtracking worked out by hand). Every position starts some
// alternative's match, so the pre-tokens tile the text with no gaps.
func nextPreToken(s string, i int) int {
	r, c8, w := runeAt(s, i)
	c := int(c8)

	// Rule 1, (?i:'s|'t|'re|'ve|'m|'ll|'d): an ASCII apostrophe and an English contraction
	// suffix, in any case ("'S", "'Ll"). Case-insensitive matching folds case as Unicode does,
	// so 'ſ' (U+017F LATIN SMALL LETTER LONG S, which folds to 's') also counts as s.
	if r == '\'' {
		if n := contractionLen(s, i+1); n > 0 {
			return i + 1 + n
		}
	}

	// Rule 2, [^\r\n\p{L}\p{N}]?\p{L}+: a run of letters, with at most one leading character
	// that is neither a newline, a letter nor a number (a space, a tab, punctuation: " the",
	// "\tand", ".wikipedia", "(word"). Backtracking: if the optional character is taken but no
	// letter follows, skipping it cannot help since it is not a letter itself.
	if c == classLetter {
		return letterRunEnd(s, i+w)
	}
	if c != classNewline && c != classNumber {
		if c2, _ := classAt(s, i+w); c2 == classLetter {
			return letterRunEnd(s, i+w)
		}
	}

	// Rule 3, \p{N}: one number character; digits never group ("2026" is four pre-tokens).
	if c == classNumber {
		return i + w
	}

	// Rule 4, ` ?[^\s\p{L}\p{N}]+[\r\n]*`: an optional space (U+0020 only), a run of
	// punctuation or symbols, then any newlines ("://", " (", "!\n\n"). With the space taken and
	// no punctuation after it, skipping the space fails too, since a space is \s.
	start := -1
	if r == ' ' {
		if c2, _ := classAt(s, i+1); isPunctClass(c2) {
			start = i + 1
		}
	} else if isPunctClass(c) {
		start = i
	}
	if start >= 0 {
		j := start
		for {
			c2, w2 := classAt(s, j)
			if !isPunctClass(c2) {
				break
			}
			j += w2
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}

	// What is left starts with white space (letters, numbers and punctuation matched above).
	// Let [i, j) be the whole run of white space at i.
	j, lastNewlineEnd, lastWidth, runLen := i, -1, 0, 0
	for {
		c2, w2 := classAt(s, j)
		if !isSpaceClass(c2) {
			break
		}
		if c2 == classNewline {
			lastNewlineEnd = j + w2
		}
		j += w2
		lastWidth = w2
		runLen++
	}

	// Rule 5, \s*[\r\n]+: greedy \s* takes the whole run, then backtracks until [\r\n]+ can
	// match: the pre-token ends just after the run's last newline ("  \n\n" of "  \n\n  x").
	if lastNewlineEnd >= 0 {
		return lastNewlineEnd
	}

	// Rule 6, \s+(?!\S): the run, not followed by a non-space. At the end of the text that is
	// the whole run; before a non-space, \s+ backtracks one character, so a run of two or more
	// leaves its last character to start the next word (" " + " leading").
	if j == len(s) {
		return j
	}
	if runLen >= 2 {
		return j - lastWidth
	}

	// Rule 7, \s+: a single white-space character before a non-space that neither rule 2 nor
	// rule 4 took with it: a space before a digit (" " + "1"), a tab before punctuation
	// ("\t" + "("), since rule 4's optional prefix is the space U+0020 alone.
	return j
}

// letterRunEnd returns the end of the run of letters starting at s[j].
func letterRunEnd(s string, j int) int {
	for j < len(s) {
		c := s[j]
		if c < utf8.RuneSelf {
			if asciiClass[c] != classLetter {
				return j
			}
			j++
			continue
		}
		cl, w := classAt(s, j)
		if cl != classLetter {
			return j
		}
		j += w
	}
	return j
}

// contractionLen returns the length in bytes of the contraction suffix (s, t, re, ve, m, ll, d
// in any case) at s[j], or 0.
func contractionLen(s string, j int) int {
	lower := func(k int) (byte, int) {
		if k >= len(s) {
			return 0, 0
		}
		if s[k] < utf8.RuneSelf {
			c := s[k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			return c, 1
		}
		if r, w := utf8.DecodeRuneInString(s[k:]); r == 'ſ' {
			return 's', w
		}
		return 0, 0
	}
	a, wa := lower(j)
	switch a {
	case 's', 't', 'm', 'd':
		return wa
	case 'r', 'v', 'l':
		b, wb := lower(j + wa)
		if (a == 'r' || a == 'v') && b == 'e' || a == 'l' && b == 'l' {
			return wa + wb
		}
	}
	return 0
}

// PreTokenize splits NFC-normalised text into the pre-tokens of the Qwen2 pattern, as Hugging
// Face's Split pre-tokenizer does. It is what Encode does between added tokens, exposed for
// tests and for people checking the splits.
func PreTokenize(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		j := nextPreToken(text, i)
		out = append(out, text[i:j])
		i = j
	}
	return out
}
