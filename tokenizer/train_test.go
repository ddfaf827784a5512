package tokenizer

import (
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/text/unicode/norm"
)

var agentSpecials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
	"<tool_response>", "</tool_response>", "<think>", "</think>", "<answer>", "</answer>"}

func TestTrain(t *testing.T) {
	texts := corpusPassages(t, 1000)
	const vocabSize = 1500
	var calls [][2]int
	tok, err := Train(texts, vocabSize, agentSpecials, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != vocabSize {
		t.Errorf("VocabSize = %d, want %d", tok.VocabSize(), vocabSize)
	}
	bpe := vocabSize - len(agentSpecials)
	if tok.BPESize() != bpe || len(tok.mergeList) != bpe-256 {
		t.Errorf("BPESize = %d with %d merges, want %d and %d", tok.BPESize(), len(tok.mergeList), bpe, bpe-256)
	}
	for i, s := range agentSpecials {
		if id, ok := tok.TokenID(s); !ok || id != bpe+i {
			t.Errorf("TokenID(%q) = %d, %v, want %d (right after the BPE vocabulary)", s, id, ok, bpe+i)
		}
	}
	if id, _ := tok.TokenID("<|im_end|>"); tok.EOS() != id {
		t.Errorf("EOS = %d, want <|im_end|> %d", tok.EOS(), id)
	}
	if id, _ := tok.TokenID("<|endoftext|>"); tok.Pad() != id {
		t.Errorf("Pad = %d, want <|endoftext|> %d", tok.Pad(), id)
	}
	if !tok.IsSpecial(bpe+1) || tok.IsSpecial(bpe+3) {
		t.Errorf("<|im_start|> should be special and <tool_call> not")
	}
	if id, _ := tok.TokenID("!"); id != 0 {
		t.Errorf(`TokenID("!") = %d, want 0 (byte tokens in byte-level character order)`, id)
	}
	if id, _ := tok.TokenID("Ġ"); id != 220 {
		t.Errorf(`TokenID("Ġ") = %d, want 220 as in Qwen`, id)
	}
	if len(calls) == 0 || calls[len(calls)-1] != [2]int{bpe - 256, bpe - 256} {
		t.Errorf("progress calls end %v, want [%d %d]", calls[len(calls)-1:], bpe-256, bpe-256)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] <= calls[i-1][0] {
			t.Errorf("progress not increasing: %v then %v", calls[i-1], calls[i])
		}
	}
	// Frequent words became single tokens.
	for _, w := range []string{"Ġthe", "Ġof", "Ġand"} {
		if _, ok := tok.TokenID(w); !ok {
			t.Errorf("no token %q after training on %d passages", w, len(texts))
		}
	}
	// Deterministic: a second run learns the same merges.
	again, err := Train(texts, vocabSize, agentSpecials, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.mergeList, tok.mergeList) || !reflect.DeepEqual(again.tokens, tok.tokens) {
		t.Errorf("two training runs differ")
	}
	// Round trip, with compression, and through Save/Load.
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if back.EOS() != tok.EOS() || back.Pad() != tok.Pad() || back.VocabSize() != tok.VocabSize() {
		t.Errorf("reloaded EOS/Pad/VocabSize %d/%d/%d, want %d/%d/%d", back.EOS(), back.Pad(), back.VocabSize(), tok.EOS(), tok.Pad(), tok.VocabSize())
	}
	var bytes, ids int
	for i, p := range append(texts[:100], RenderChat([]Message{{"user", "hi <answer>x</answer>"}}, nil, true)) {
		got := tok.Encode(p)
		if d := tok.Decode(got); d != norm.NFC.String(p) {
			t.Errorf("text %d: round trip differs: %q", i, d)
		}
		if b := back.Encode(p); !reflect.DeepEqual(b, got) {
			t.Errorf("text %d: reloaded tokenizer encodes differently", i)
		}
		bytes += len(p)
		ids += len(got)
	}
	if ratio := float64(bytes) / float64(ids); ratio < 2.5 {
		t.Errorf("%.2f bytes per token on training text, want >= 2.5 with %d tokens", ratio, vocabSize)
	}
}

func TestTrainErrors(t *testing.T) {
	cases := []struct {
		name      string
		vocabSize int
		specials  []string
	}{
		{"missing chat marker", 400, []string{"<|im_start|>", "<|im_end|>"}},
		{"repeated special", 400, []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_end|>"}},
		{"empty special", 400, []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", ""}},
		{"vocabulary too small", 258, []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>"}},
	}
	for _, tc := range cases {
		if _, err := Train([]string{"abc"}, tc.vocabSize, tc.specials, nil); err == nil {
			t.Errorf("%s: Train succeeded, want an error", tc.name)
		}
	}
	// A tiny corpus runs out of pairs before the target size: fewer merges, no error.
	tok, err := Train([]string{"ab ab"}, 1000, agentSpecials, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("ab ab"); len(got) != 2 {
		t.Errorf(`Encode("ab ab") = %v, want 2 tokens ("ab", " ab")`, got)
	}
}
