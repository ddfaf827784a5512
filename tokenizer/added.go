package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedMatcher finds added tokens in raw text, leftmost first and, among the tokens that start
// at the same place, the longest (Hugging Face's AddedVocabulary uses an Aho-Corasick automaton
// with MatchKind::LeftmostLongest). Added tokens are few (26 in Qwen3) and start with few
// distinct bytes ('<'), so candidates are grouped by first byte and tried longest first.
type addedMatcher struct {
	tokens    []AddedToken     // all added tokens
	byFirst   [256][]int       // first byte -> indices into tokens, longest content first
	isFirst   [256]bool        // some token starts with this byte
	only      int              // the single first byte when all tokens share one, else -1
	byContent map[string]int   // content -> id
	special   map[int]struct{} // ids of special tokens
}

func newAddedMatcher(tokens []AddedToken) addedMatcher {
	m := addedMatcher{tokens: tokens, only: -1, byContent: map[string]int{}, special: map[int]struct{}{}}
	firsts := 0
	for i, at := range tokens {
		m.byContent[at.Content] = at.ID
		if at.Special {
			m.special[at.ID] = struct{}{}
		}
		if at.Content == "" {
			continue
		}
		b := at.Content[0]
		if !m.isFirst[b] {
			firsts++
			m.only = int(b)
		}
		m.isFirst[b] = true
		m.byFirst[b] = append(m.byFirst[b], i)
	}
	if firsts != 1 {
		m.only = -1
	}
	for b := range m.byFirst {
		idx := m.byFirst[b]
		sort.SliceStable(idx, func(x, y int) bool {
			return len(tokens[idx[x]].Content) > len(tokens[idx[y]].Content)
		})
	}
	return m
}

// find returns the first added token in text as the span [start, end) it takes (its LStrip
// and RStrip white space included) and its id, or id -1 when there is none.
func (m *addedMatcher) find(text string) (start, end, id int) {
	if len(m.tokens) == 0 {
		return 0, 0, -1
	}
	for i := 0; i < len(text); i++ {
		if m.only >= 0 {
			k := strings.IndexByte(text[i:], byte(m.only))
			if k < 0 {
				return 0, 0, -1
			}
			i += k
		} else if !m.isFirst[text[i]] {
			continue
		}
		for _, ti := range m.byFirst[text[i]] {
			at := &m.tokens[ti]
			if !strings.HasPrefix(text[i:], at.Content) {
				continue
			}
			s, e := i, i+len(at.Content)
			if at.SingleWord && !(wordBoundaryBefore(text, s) && wordBoundaryAfter(text, e)) {
				continue
			}
			if at.LStrip {
				for s > 0 {
					r, w := utf8.DecodeLastRuneInString(text[:s])
					if !unicode.IsSpace(r) {
						break
					}
					s -= w
				}
			}
			if at.RStrip {
				for e < len(text) {
					r, w := utf8.DecodeRuneInString(text[e:])
					if !unicode.IsSpace(r) {
						break
					}
					e += w
				}
			}
			return s, e, at.ID
		}
	}
	return 0, 0, -1
}

// isWordChar is the notion of word character behind SingleWord: a letter, a number or '_'.
func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func wordBoundaryBefore(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return !isWordChar(r)
}

func wordBoundaryAfter(text string, i int) bool {
	if i >= len(text) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return !isWordChar(r)
}
