package tokenizer

import (
	"bytes"
	"compress/gzip"
	"os"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzRoundTrip: for valid UTF-8, decoding the ids of a text gives its NFC form exactly; for
// any bytes, Encode and Decode do not panic and the raw bytes round-trip through DecodeBytes
// except where NFC changed them.
func FuzzRoundTrip(f *testing.F) {
	tok := loadQwen3(f)
	for _, tc := range preTokenizeCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids := tok.Encode(text)
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("Encode(%q) gave id %d outside [0, %d)", text, id, tok.VocabSize())
			}
		}
		got := tok.Decode(ids)
		if !utf8.ValidString(got) {
			t.Fatalf("Decode(Encode(%q)) = %q is not valid UTF-8", text, got)
		}
		if utf8.ValidString(text) {
			if want := norm.NFC.String(text); got != want {
				t.Fatalf("round trip of %q: got %q, want %q", text, got, want)
			}
		}
		if raw := tok.DecodeBytes(ids); !utf8.ValidString(text) && norm.NFC.String(text) == text && !bytes.Equal(raw, []byte(text)) {
			t.Fatalf("DecodeBytes(Encode(%q)) = %q, want the input bytes", text, raw)
		}
	})
}

// FuzzLoad: the tokenizer.json parser returns an error, never panics, on any bytes; what it
// accepts encodes and decodes without panicking.
func FuzzLoad(f *testing.F) {
	raw, err := os.ReadFile(qwen3Path + ".gz")
	if err != nil {
		f.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		f.Fatal(err)
	}
	var full bytes.Buffer
	if _, err := full.ReadFrom(zr); err != nil {
		f.Fatal(err)
	}
	// A small valid file, and the head of the real one (cut, so invalid).
	f.Add([]byte(`{"added_tokens": [{"id": 3, "content": "<|im_end|>", "special": true}], "normalizer": {"type": "NFC"}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": ` +
		jsonString(Qwen2Pattern) + `}, "behavior": "Isolated", "invert": false}, ` + byteLevelJSON + `]}, "decoder": ` + byteLevelJSON +
		`, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"], "a b"]}}`))
	f.Add(full.Bytes()[:4096])
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data, nil)
		if err != nil {
			return
		}
		ids := tok.Encode("ab<|im_end|> héllo\n")
		_ = tok.Decode(ids)
		_ = RenderChat([]Message{{"user", "x"}}, nil, true)
	})
}
