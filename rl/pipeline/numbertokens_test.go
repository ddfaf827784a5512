package pipeline

import (
	"slices"
	"strconv"
	"testing"
)

// TestNumberTokens checks Config.NumberTokens' tokenizer: each whole number below the count is
// one token beyond the BPE vocabulary, a larger number is cut into them, and the text decodes
// back unchanged (the number tokens are content, not specials).
func TestNumberTokens(t *testing.T) {
	texts := []string{"Gofa was founded in 1875. About 482 thousand people live in Gofa.", "Sutan made 16 albums."}
	plain, err := TrainTokenizer(texts, 300, 0)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := TrainTokenizer(texts, 300, 2100)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.VocabSize(), plain.VocabSize()+2100; got != want {
		t.Errorf("vocabulary %d tokens, want %d (the plain one's and 2,100 numbers)", got, want)
	}
	for _, tc := range []struct {
		text    string
		numbers []string // the number tokens the text must hold, in order
	}{
		{"founded in 1875.", []string{"1875"}},
		{"Sutan made 16 albums, 0 singles", []string{"16", "0"}},
		{"7 - 3 = 4", []string{"7", "3", "4"}},
		{"12345", []string{"1234", "5"}}, // past the range: the longest number token first
	} {
		ids := tok.Encode(tc.text)
		var numbers []string
		for _, id := range ids {
			if s := tok.Decode([]int{id}); id >= plain.VocabSize() {
				numbers = append(numbers, s)
			}
		}
		if !slices.Equal(numbers, tc.numbers) {
			t.Errorf("%q: number tokens %q, want %q", tc.text, numbers, tc.numbers)
		}
		if back := tok.DecodeSkipSpecial(ids); back != tc.text {
			t.Errorf("%q decodes back as %q", tc.text, back)
		}
	}
}

// TestNumberTokenMarks checks the marks SFTConfig.NumberWeight applies by: every digit and
// every whole-number token, and nothing else.
func TestNumberTokenMarks(t *testing.T) {
	texts := []string{"Gofa was founded in 1875. About 482 thousand people live in Gofa."}
	for _, numbers := range []int{0, 100} {
		tok, err := TrainTokenizer(texts, 300, numbers)
		if err != nil {
			t.Fatal(err)
		}
		marks := NumberTokens(tok)
		var marked []string
		for id, m := range marks {
			if m {
				marked = append(marked, tok.Decode([]int{id}))
			}
		}
		want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
		if numbers > 0 {
			want = append(want, want...) // the byte tokens' digits, then the number tokens 0..99
			for n := 10; n < numbers; n++ {
				want = append(want, strconv.Itoa(n))
			}
		}
		if !slices.Equal(marked, want) {
			t.Errorf("number tokens %d: marked %q, want %q", numbers, marked, want)
		}
	}
}
