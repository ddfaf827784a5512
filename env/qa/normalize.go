package qa

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

// asciiPunct is Python's string.punctuation, the characters SQuAD's normalize_answer removes.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// NormalizeAnswer is the SQuAD v1.1 evaluation script's normalize_answer (also HotpotQA's and
// Search-R1's): lowercase, remove ASCII punctuation, remove the articles a/an/the as whole
// words, and fold whitespace to single spaces. Word boundaries follow Python's Unicode `\b`:
// letters, digits and underscore of any script are word characters.
func NormalizeAnswer(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, s)
	s = removeArticles(s)
	return strings.Join(strings.Fields(s), " ")
}

// removeArticles replaces each maximal run of word characters equal to a, an or the with a
// space, as re.sub(r"\b(a|an|the)\b", " ", s) does.
func removeArticles(s string) string {
	var b strings.Builder
	runes := []rune(s)
	for i := 0; i < len(runes); {
		if !isWordRune(runes[i]) {
			b.WriteRune(runes[i])
			i++
			continue
		}
		j := i
		for j < len(runes) && isWordRune(runes[j]) {
			j++
		}
		switch w := string(runes[i:j]); w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

// isWordRune approximates Python's Unicode \w: letters, digits, underscore, and the marks that
// combine with letters.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.In(r, unicode.Mn, unicode.Mc)
}

// ExactMatch is SQuAD's exact match against every gold alias: 1 if the normalised prediction
// equals any normalised gold answer, else 0.
func ExactMatch(prediction string, golds []string) float64 {
	p := NormalizeAnswer(prediction)
	for _, g := range golds {
		if p == NormalizeAnswer(g) {
			return 1
		}
	}
	return 0
}

// NumericMatch is exact match for a numeric answer: 1 if the prediction's number equals a gold
// answer's number, else 0. A number is read from the first word of the text, its thousands
// commas removed ("1,921 years" reads 1921), and compared after rounding both to 6 decimal
// places (the calculator's rounding); text that reads no number matches nothing.
func NumericMatch(prediction string, golds []string) float64 {
	p, ok := leadingNumber(prediction)
	if !ok {
		return 0
	}
	for _, g := range golds {
		if x, ok := leadingNumber(g); ok && math.Round(x*1e6) == math.Round(p*1e6) {
			return 1
		}
	}
	return 0
}

// leadingNumber reads the number at the start of s (see NumericMatch).
func leadingNumber(s string) (float64, bool) {
	fields := strings.Fields(strings.ReplaceAll(s, ",", ""))
	if len(fields) == 0 {
		return 0, false
	}
	x, err := strconv.ParseFloat(strings.TrimRight(fields[0], "."), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, false
	}
	return x, true
}

// F1 is the token-level F1 of the HotpotQA evaluation script (SQuAD's f1_score with its
// special case for yes/no: a prediction or gold of "yes", "no" or "noanswer" scores 0 unless
// the two are equal), maximised over the gold aliases.
func F1(prediction string, golds []string) float64 {
	best := 0.0
	for _, g := range golds {
		best = max(best, f1(NormalizeAnswer(prediction), NormalizeAnswer(g)))
	}
	return best
}

func f1(pred, gold string) float64 {
	special := func(s string) bool { return s == "yes" || s == "no" || s == "noanswer" }
	if (special(pred) || special(gold)) && pred != gold {
		return 0
	}
	pt, gt := strings.Fields(pred), strings.Fields(gold)
	counts := make(map[string]int, len(gt))
	for _, w := range gt {
		counts[w]++
	}
	common := 0
	for _, w := range pt {
		if counts[w] > 0 {
			counts[w]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	precision := float64(common) / float64(len(pt))
	recall := float64(common) / float64(len(gt))
	return 2 * precision * recall / (precision + recall)
}
