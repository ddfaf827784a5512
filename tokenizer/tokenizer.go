package tokenizer

import (
	"sync"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer is a byte-level BPE tokenizer with added tokens. It is safe for concurrent use:
// encoding state (scratch buffers, the word cache) lives in a pool of per-goroutine encoders.
type Tokenizer struct {
	// tokens[id] is the vocabulary spelling of id (byte-level characters for BPE tokens, the
	// literal text for added tokens), "" for an unused id. (VocabSize)
	tokens []string
	// decoded[id] is what Decode emits for id. (VocabSize)
	decoded [][]byte
	// vocab maps BPE spellings to ids (the "model.vocab" of tokenizer.json).
	vocab map[string]int32
	// rawVocab maps the bytes a BPE token stands for to its id; used with ignoreMerges.
	rawVocab map[string]int32
	// byteID[b] is the id of the token for the single byte b, -1 if the vocabulary lacks it.
	byteID [256]int32
	// merges maps mergeKey(left, right) to mergeValue(rank, merged id).
	merges mergeTable
	// mergeList holds the merges in rank order as (left, right) id pairs, for Save. (M, 2)
	mergeList [][2]int32
	// ignoreMerges: a pre-token that is itself a vocabulary token is that token (Llama-3
	// style); false for Qwen.
	ignoreMerges bool
	// nfc: the normalizer is NFC (true for Qwen); otherwise text is not normalised.
	nfc bool

	added   []AddedToken // in id order
	matcher addedMatcher

	eos, pad int        // -1 when unset
	config   []byte     // tokenizer_config.json as loaded, for Save to keep its other fields
	chat     ChatFormat // the chat template the folder declares (ChatFormat)

	pool sync.Pool // *encoder
}

// AddedToken is a token matched in the raw text before normalisation and pre-tokenisation,
// like Hugging Face's AddedToken: chat markers such as "<|im_end|>" and tags such as
// "<tool_call>".
type AddedToken struct {
	ID      int    // its token id
	Content string // the exact text it matches
	Special bool   // skipped by DecodeSkipSpecial; chat markers are special, tool tags are not
	// Matching options after Hugging Face's, all false in Qwen's files: LStrip and RStrip make
	// the token absorb the white space on its left or right; SingleWord only matches it
	// between characters that are not letters, numbers or '_' (an approximation of Hugging
	// Face's word-boundary test, checked by no reference).
	LStrip, RStrip, SingleWord bool
	Normalized                 bool // kept for Save; matching is always on the raw text
}

// VocabSize returns the number of ids: one more than the largest id of a BPE or added token
// (151669 for Qwen3). A model's embedding table needs at least this many rows.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BPESize returns the number of BPE tokens, added tokens excluded (Hugging Face's vocab_size).
func (t *Tokenizer) BPESize() int { return len(t.vocab) }

// EOS returns the id of the end-of-sequence token ("<|im_end|>" for Qwen chat models), or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// Pad returns the id of the padding token ("<|endoftext|>" for Qwen), or -1.
func (t *Tokenizer) Pad() int { return t.pad }

// AddedTokens returns the added tokens in id order.
func (t *Tokenizer) AddedTokens() []AddedToken { return append([]AddedToken(nil), t.added...) }

// TokenID returns the id of a token given by its text: an added token's content
// ("<|im_end|>", "</tool_call>") or a BPE token's vocabulary spelling ("Ġthe").
func (t *Tokenizer) TokenID(tok string) (int, bool) {
	if id, ok := t.matcher.byContent[tok]; ok {
		return id, true
	}
	if id, ok := t.vocab[tok]; ok {
		return int(id), true
	}
	return 0, false
}

// Token returns the spelling of id: the content of an added token or the byte-level spelling
// of a BPE token, and false for an id out of range or unused.
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) || t.tokens[id] == "" {
		return "", false
	}
	return t.tokens[id], true
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int) bool {
	_, special := t.matcher.special[id]
	return special
}

func (t *Tokenizer) getEncoder() *encoder {
	if e, ok := t.pool.Get().(*encoder); ok {
		return e
	}
	return newEncoder(t)
}

// Encode returns the ids of text without any BOS/EOS added, as Hugging Face's
// encode(text, add_special_tokens=False): added tokens are split out first (leftmost,
// longest), the rest is NFC-normalised, pre-tokenised with the Qwen2 pattern and merged by
// byte-level BPE. Invalid UTF-8 is encoded byte for byte (see PreTokenize); it never panics.
func (t *Tokenizer) Encode(text string) []int {
	e := t.getEncoder()
	ids := e.appendEncode(make([]int, 0, len(text)/3+1), text)
	t.pool.Put(e)
	return ids
}

// AppendEncode appends the ids of text to ids and returns the extended slice.
func (t *Tokenizer) AppendEncode(ids []int, text string) []int {
	e := t.getEncoder()
	ids = e.appendEncode(ids, text)
	t.pool.Put(e)
	return ids
}

// appendEncode is Encode into ids.
func (e *encoder) appendEncode(ids []int, text string) []int {
	t := e.t
	for len(text) > 0 {
		start, end, id := t.matcher.find(text)
		plain := text
		if id >= 0 {
			plain = text[:start]
		}
		ids = e.appendPlain(ids, plain)
		if id < 0 {
			break
		}
		ids = append(ids, id)
		text = text[end:]
	}
	return ids
}

// appendPlain encodes text that holds no added token: NFC, pre-tokens, BPE.
func (e *encoder) appendPlain(ids []int, text string) []int {
	if e.t.nfc {
		text = norm.NFC.String(text) // returns text itself, unallocated, when already NFC
	}
	for i := 0; i < len(text); {
		j := nextPreToken(text, i)
		ids = e.appendWord(ids, text[i:j])
		i = j
	}
	return ids
}

// DecodeBytes returns the bytes of the ids' tokens, concatenated. Ids out of range or unused
// contribute nothing (Hugging Face skips ids it has no token for).
func (t *Tokenizer) DecodeBytes(ids []int) []byte {
	var out []byte
	for _, id := range ids {
		if id >= 0 && id < len(t.decoded) {
			out = append(out, t.decoded[id]...)
		}
	}
	return out
}

// Decode returns the text of ids as Hugging Face's decode(ids) does: the tokens' bytes, with
// ill-formed UTF-8 (a multi-byte character cut between ids) replaced by U+FFFD per maximal
// subpart, like String::from_utf8_lossy. Special tokens are kept.
func (t *Tokenizer) Decode(ids []int) string {
	raw := t.DecodeBytes(ids)
	return string(appendLossyUTF8(make([]byte, 0, len(raw)), raw))
}

// DecodeSkipSpecial is Decode with special tokens left out (skip_special_tokens=True).
func (t *Tokenizer) DecodeSkipSpecial(ids []int) string {
	kept := make([]int, 0, len(ids))
	for _, id := range ids {
		if !t.IsSpecial(id) {
			kept = append(kept, id)
		}
	}
	return t.Decode(kept)
}
