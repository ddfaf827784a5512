package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The expected splits were checked against a backtracking regex engine with lookahead running
// Qwen2Pattern (with \s spelled out as Oniguruma's White_Space set).
var preTokenizeCases = []struct {
	name string
	in   string
	want []string
}{
	{"contractions", "I'm sure they'll say it's John's", []string{"I", "'m", " sure", " they", "'ll", " say", " it", "'s", " John", "'s"}},
	{"contractions upper and mixed case", "I'D YOU'LL We'Re THEY'VE it'S", []string{"I", "'D", " YOU", "'LL", " We", "'Re", " THEY", "'VE", " it", "'S"}},
	{"contraction prefix of a word", "'sa 'x' don't", []string{"'s", "a", " '", "x", "'", " don", "'t"}},
	{"long s folds to s", "it'ſ", []string{"it", "'ſ"}},
	{"digits one by one", "2026-11-29 3.14", []string{"2", "0", "2", "6", "-", "1", "1", "-", "2", "9", " ", "3", ".", "1", "4"}},
	{"space run before a word", "   word", []string{"  ", " word"}},
	{"spaces around newlines", "a  \n\n  b", []string{"a", "  \n\n", " ", " b"}},
	{"trailing spaces", "trailing   ", []string{"trailing", "   "}},
	{"crlf", "x\r\ny", []string{"x", "\r\n", "y"}},
	{"final newline", "line\n", []string{"line", "\n"}},
	{"cjk runs are words", "中文分词测试 日本語", []string{"中文分词测试", " 日本語"}},
	{"emoji are symbols", "🙂👍🏽 ok", []string{"🙂👍🏽", " ok"}},
	{"precomposed accent", "café", []string{"café"}},
	{"combining mark breaks a word", "q\u0301x", []string{"q", "\u0301x"}},
	{"tab is not rule 4's space", "\t(x)", []string{"\t", "(x", ")"}},
	{"punctuation takes newlines", "!!!\n\nNext", []string{"!!!\n\n", "Next"}},
	{"no-break space prefixes a word", "a\u00a0b", []string{"a", "\u00a0b"}},
	{"ideographic space and fullwidth digits", "\u3000１２", []string{"\u3000", "１", "２"}},
	{"other numbers", "x ² ½ Ⅻ", []string{"x", " ", "²", " ", "½", " ", "Ⅻ"}},
	{"white space only", " \t\n", []string{" \t\n"}},
	{"markup", `<a href="x">`, []string{"<a", " href", `="`, "x", `">`}},
	{"mixed", "hello   world\n\n\n  end  ", []string{"hello", "  ", " world", "\n\n\n", " ", " end", "  "}},
	{"empty", "", nil},
}

func TestPreTokenize(t *testing.T) {
	for _, tc := range preTokenizeCases {
		got := PreTokenize(tc.in)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("%s: PreTokenize(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestPreTokenizeTiles checks that pre-tokens cover every byte exactly once and are never
// empty, also on invalid UTF-8.
func TestPreTokenizeTiles(t *testing.T) {
	inputs := []string{"\xff\xfeab", "a\xc3", "\xe2\x82 x", "'\xff", " \xff\n", "x\x80\x80y 1"}
	for _, tc := range preTokenizeCases {
		inputs = append(inputs, tc.in)
	}
	for _, in := range inputs {
		got := PreTokenize(in)
		for _, p := range got {
			if p == "" {
				t.Errorf("PreTokenize(%q) has an empty pre-token: %q", in, got)
			}
		}
		if strings.Join(got, "") != in {
			t.Errorf("PreTokenize(%q) = %q does not tile the input", in, got)
		}
		if utf8.ValidString(in) {
			for _, p := range got {
				if !utf8.ValidString(p) {
					t.Errorf("PreTokenize(%q) cut a character: %q", in, got)
				}
			}
		}
	}
}
