package tokenizer

import (
	"strings"
	"testing"
	"unicode"
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

// TestDigitsPattern checks the grouped-digit pre-tokenizer: the number rule takes up to n
// digits, left to right, as \p{N}{1,n} does (cl100k_base with n = 3), and nothing else moves.
func TestDigitsPattern(t *testing.T) {
	if DigitsPattern(1) != Qwen2Pattern {
		t.Errorf("DigitsPattern(1) is not Qwen2Pattern")
	}
	if p := DigitsPattern(3); !strings.Contains(p, `|\p{N}{1,3}|`) || strings.Replace(p, `{1,3}`, "", 1) != Qwen2Pattern {
		t.Errorf("DigitsPattern(3) = %q, want Qwen2Pattern with \\p{N}{1,3}", p)
	}
	for _, n := range []int{0, -1, MaxDigitGroup + 1} {
		if p := DigitsPattern(n); p != "" {
			t.Errorf("DigitsPattern(%d) = %q, want \"\"", n, p)
		}
	}
	split := func(s string, digits int) []string {
		var out []string
		for i := 0; i < len(s); {
			j := nextPreToken(s, i, digits)
			out = append(out, s[i:j])
			i = j
		}
		return out
	}
	cases := []struct {
		in     string
		digits int
		want   []string
	}{
		{"founded in 1884.", 3, []string{"founded", " in", " ", "188", "4", "."}},
		{"2026-11-29 3.14", 3, []string{"202", "6", "-", "11", "-", "29", " ", "3", ".", "14"}},
		{"1234567", 3, []string{"123", "456", "7"}},
		{"1234567", 2, []string{"12", "34", "56", "7"}},
		{"x12y", 3, []string{"x", "12", "y"}},
		{"\u3000１２３４", 3, []string{"\u3000", "１２３", "４"}},
		{"Ⅻ½7", 3, []string{"Ⅻ½7"}},
	}
	for _, tc := range cases {
		if got := split(tc.in, tc.digits); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("digits %d: %q split as %q, want %q", tc.digits, tc.in, got, tc.want)
		}
	}
	// Text without digits splits exactly as Qwen2Pattern does.
	for _, tc := range preTokenizeCases {
		if strings.ContainsFunc(tc.in, unicode.IsNumber) {
			continue
		}
		if got := split(tc.in, 3); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: digits 3 split %q as %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
