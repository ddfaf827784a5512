package tokenizer

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"agentr1/data"

	"golang.org/x/text/unicode/norm"
)

const qwen3Path = "../testdata/golden/tokenizer_qwen3/tokenizer.json"

var qwen3 = sync.OnceValues(func() (*Tokenizer, error) { return Load(qwen3Path) })

// loadQwen3 returns the real Qwen3 tokenizer, loaded once for all tests.
func loadQwen3(tb testing.TB) *Tokenizer {
	tb.Helper()
	t, err := qwen3()
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// corpusPassages returns the "text" of the first n passages of the embedded mhqa corpus.
func corpusPassages(tb testing.TB, n int) []string {
	tb.Helper()
	r, err := data.Open("corpus")
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var out []string
	for len(out) < n && sc.Scan() {
		var p struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			tb.Fatalf("%s: passage %d: %v", data.Path("corpus"), len(out), err)
		}
		out = append(out, p.Text)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", data.Path("corpus"), err)
	}
	return out
}

func TestQwen3Accessors(t *testing.T) {
	tok := loadQwen3(t)
	cases := []struct {
		name string
		got  int
		want int
	}{
		{"VocabSize", tok.VocabSize(), 151669},
		{"BPESize", tok.BPESize(), 151643},
		{"EOS", tok.EOS(), 151645},
		{"Pad", tok.Pad(), 151643},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	ids := []struct {
		tok  string
		want int
	}{
		{"<|im_start|>", 151644}, {"<|im_end|>", 151645}, {"<|endoftext|>", 151643},
		{"<tool_call>", 151657}, {"</tool_call>", 151658}, {"<tool_response>", 151665},
		{"</tool_response>", 151666}, {"<think>", 151667}, {"</think>", 151668},
		{"Hello", 9707}, {"Ġworld", 1879},
	}
	for _, tc := range ids {
		if got, ok := tok.TokenID(tc.tok); !ok || got != tc.want {
			t.Errorf("TokenID(%q) = %d, %v, want %d", tc.tok, got, ok, tc.want)
		}
	}
	if _, ok := tok.TokenID("<answer>"); ok {
		t.Errorf("TokenID(<answer>) found a token; Qwen3 has none")
	}
	if !tok.IsSpecial(151645) || tok.IsSpecial(151657) || tok.IsSpecial(9707) {
		t.Errorf("IsSpecial: want <|im_end|> special, <tool_call> and Hello not")
	}
	if got := tok.DecodeSkipSpecial([]int{151644, 9707, 151657, 151645}); got != "Hello<tool_call>" {
		t.Errorf("DecodeSkipSpecial = %q, want %q", got, "Hello<tool_call>")
	}
}

// TestMergeQueueMatchesScan checks the two merge loops against each other on words of every
// length around the switch-over, built from corpus text and random bytes.
func TestMergeQueueMatchesScan(t *testing.T) {
	tok := loadQwen3(t)
	e := newEncoder(tok)
	rng := rand.New(rand.NewSource(7))
	text := strings.Join(corpusPassages(t, 50), "")
	for trial := 0; trial < 400; trial++ {
		n := 2 + rng.Intn(2*longWord)
		var word string
		if trial%4 == 3 {
			b := make([]byte, n)
			rng.Read(b)
			word = string(b)
		} else {
			start := rng.Intn(len(text) - n)
			word = text[start : start+n]
		}
		load := func() {
			e.syms = e.syms[:0]
			for i := 0; i < len(word); i++ {
				e.syms = append(e.syms, tok.byteID[word[i]])
			}
		}
		load()
		scan := append([]int32(nil), e.mergeScan()...)
		load()
		queue := append([]int32(nil), e.mergeQueue()...)
		if !reflect.DeepEqual(scan, queue) {
			t.Fatalf("trial %d, word %q: mergeScan %v, mergeQueue %v", trial, word, scan, queue)
		}
	}
}

// TestAddedTokensLongestMatch uses a tokenizer whose added tokens overlap.
func TestAddedTokensLongestMatch(t *testing.T) {
	tok, err := Train([]string{"ab ab abc"}, 300, []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<a>", "<a>b", "a>"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int {
		v, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	cases := []struct {
		name, in string
		want     []int // added-token ids only; -1 stands for any run of BPE ids
	}{
		{"longest wins", "<a>b", []int{id("<a>b")}},
		{"shorter when longer fails", "<a>c", []int{id("<a>"), -1}},
		{"leftmost wins over longer later", "xa><a>b", []int{-1, id("a>"), id("<a>b")}},
		{"chat markers", "<|im_start|>x<|im_end|>", []int{id("<|im_start|>"), -1, id("<|im_end|>")}},
	}
	for _, tc := range cases {
		var got []int
		for _, v := range tok.Encode(tc.in) {
			if v < tok.BPESize() {
				if len(got) == 0 || got[len(got)-1] != -1 {
					got = append(got, -1)
				}
				continue
			}
			got = append(got, v)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Encode(%q) added-token layout %v, want %v", tc.name, tc.in, got, tc.want)
		}
		if d := tok.Decode(tok.Encode(tc.in)); d != tc.in {
			t.Errorf("%s: Decode(Encode(%q)) = %q", tc.name, tc.in, d)
		}
	}
}

func TestLossyUTF8(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"valid", "héllo 🙂", "héllo 🙂"},
		{"truncated 3-byte sequence is one U+FFFD", "\xe2\x82A", "\uFFFDA"},
		{"two stray bytes", "\xff\xfe", "\uFFFD\uFFFD"},
		{"truncated 4-byte sequence", "\xf0\x9f\x99", "\uFFFD"},
		{"surrogate is three", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"overlong is two", "\xc0\xaf", "\uFFFD\uFFFD"},
		{"lead byte before ASCII", "\xf1x", "\uFFFDx"},
	}
	for _, tc := range cases {
		if got := string(appendLossyUTF8(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("%s: lossy(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
	// Decoding half an emoji's bytes gives U+FFFD, as Hugging Face's decode does.
	tok := loadQwen3(t)
	b := []byte("🙂")
	ids := []int{int(tok.byteID[b[0]]), int(tok.byteID[b[1]])}
	if got := tok.Decode(ids); got != "\uFFFD" {
		t.Errorf("Decode(first two bytes of 🙂) = %q, want U+FFFD", got)
	}
	if got := string(tok.DecodeBytes(ids)); got != "\xf0\x9f" {
		t.Errorf("DecodeBytes = %q, want the raw bytes", got)
	}
}

// TestCorpusChecksum pins the ids of the first 2000 corpus passages (1,096,599 bytes, 263,153
// tokens) to those @lenml/tokenizers 3.7.2 (the transformers.js port that computed the golden
// cases) gives with the Qwen3 tokenizer: SHA-256 of the passages' ids, comma-separated, one
// passage a line.
func TestCorpusChecksum(t *testing.T) {
	const want = "ecef2fbea0b757c306c6b0992f92315cd23546f1b9e988ef36b096842d957e1c"
	tok := loadQwen3(t)
	h := sha256.New()
	total := 0
	for i, ids := range tok.EncodeBatch(corpusPassages(t, 2000)) {
		if i > 0 {
			h.Write([]byte("\n"))
		}
		for k, id := range ids {
			if k > 0 {
				h.Write([]byte(","))
			}
			fmt.Fprint(h, id)
		}
		total += len(ids)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want || total != 263153 {
		t.Errorf("ids of the first 2000 passages: %d tokens, SHA-256 %s; want 263153 tokens, %s", total, got, want)
	}
}

// TestRoundTripCorpus: decoding the ids of a passage gives back its NFC form.
func TestRoundTripCorpus(t *testing.T) {
	tok := loadQwen3(t)
	for i, p := range corpusPassages(t, 300) {
		if got := tok.Decode(tok.Encode(p)); got != norm.NFC.String(p) {
			t.Errorf("passage %d: round trip differs:\n got %q\nwant %q", i, got, p)
		}
	}
}

func TestEncodeBatch(t *testing.T) {
	tok := loadQwen3(t)
	texts := corpusPassages(t, 200)
	texts = append(texts, "", "<|im_end|>", "x")
	got := tok.EncodeBatch(texts)
	if len(got) != len(texts) {
		t.Fatalf("EncodeBatch returned %d results for %d texts", len(got), len(texts))
	}
	for i, s := range texts {
		if want := tok.Encode(s); !reflect.DeepEqual(got[i], want) && !(len(want) == 0 && len(got[i]) == 0) {
			t.Errorf("text %d: EncodeBatch %v, Encode %v", i, got[i], want)
		}
	}
}

func TestSaveLoadQwen3(t *testing.T) {
	tok := loadQwen3(t)
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if back.VocabSize() != tok.VocabSize() || back.EOS() != tok.EOS() || back.Pad() != tok.Pad() {
		t.Errorf("reloaded: VocabSize %d EOS %d Pad %d, want %d %d %d", back.VocabSize(), back.EOS(), back.Pad(), tok.VocabSize(), tok.EOS(), tok.Pad())
	}
	if !reflect.DeepEqual(back.mergeList, tok.mergeList) || !reflect.DeepEqual(back.tokens, tok.tokens) {
		t.Errorf("reloaded tokenizer has different merges or tokens")
	}
	for i, p := range append(corpusPassages(t, 50), "<|im_start|>user\nhi<|im_end|>") {
		if a, b := tok.Encode(p), back.Encode(p); !reflect.DeepEqual(a, b) {
			t.Errorf("text %d: reloaded tokenizer gives %v, want %v", i, b, a)
		}
	}
}

// TestLoadErrors: a broken tokenizer.json is rejected with the file and the field named.
func TestLoadErrors(t *testing.T) {
	good := `{"added_tokens": [{"id": 3, "content": "<|im_end|>", "special": true}],
		"normalizer": {"type": "NFC"},
		"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": ` + jsonString(Qwen2Pattern) + `}, "behavior": "Isolated", "invert": false}, ` + byteLevelJSON + `]},
		"decoder": ` + byteLevelJSON + `,
		"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}`
	cases := []struct {
		name, old, new, want string
	}{
		{"not json", good, "{", "unexpected end of JSON"},
		{"model type", `"type": "BPE"`, `"type": "WordPiece"`, "model.type"},
		{"merge token missing", `[["a", "b"]]`, `[["a", "c"]]`, `model.merges[0]: token "c"`},
		{"merged token missing", `"ab": 2`, `"ba": 2`, `model.merges[0]: merged token "ab"`},
		{"merge shape", `[["a", "b"]]`, `[["a"]]`, "model.merges[0]: want 2 tokens"},
		{"legacy merge string", `[["a", "b"]]`, `["a b c"]`, "model.merges[0]"},
		{"duplicate id", `"ab": 2`, `"ab": 1`, "model.vocab: id 1"},
		{"huge id", `"ab": 2`, `"ab": 2000000000`, "largest id"},
		{"normalizer", `{"type": "NFC"}`, `{"type": "NFKC"}`, "normalizer.type"},
		{"pattern", `"behavior": "Isolated"`, `"behavior": "Removed"`, "pretokenizers[0]"},
		{"decoder", `"decoder": {"type": "ByteLevel"`, `"decoder": {"type": "Fuse"`, "decoder.type"},
		{"added token id", `"id": 3`, `"id": -3`, "added_tokens[0]: negative id"},
		{"vocab type", `"a": 0`, `"a": "zero"`, "model.vocab"},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		if !strings.Contains(good, tc.old) {
			t.Fatalf("%s: test text %q not in the template", tc.name, tc.old)
		}
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
		if err := os.WriteFile(path, []byte(strings.Replace(good, tc.old, tc.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: Load succeeded, want an error mentioning %q", tc.name, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file and %q", tc.name, err, tc.want)
		}
	}
	// The template itself loads, and encodes with its one merge.
	path := filepath.Join(dir, "good.json")
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatalf("good template: %v", err)
	}
	if got := tok.Encode("ab<|im_end|>"); !reflect.DeepEqual(got, []int{2, 3}) {
		t.Errorf("good template: Encode = %v, want [2 3]", got)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: error %v does not name it", err)
	}
}
