package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Byte-level BPE works on bytes, but vocabularies are stored as text. GPT-2's bytes_to_unicode
// (openai/gpt-2 encoder.py, reused by Hugging Face's ByteLevel pre-tokenizer and decoder) gives
// every byte a printable character: the 188 bytes that are already printable and not a space
// ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves, and the other 68 bytes, in increasing
// order, get U+0100, U+0101, ... (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).

// byteToRune maps a byte to the character that stands for it in vocabulary strings.
var byteToRune [256]rune

// runeToByte maps such a character back to its byte; runeIsByte says which runes are in the
// alphabet. Both are indexed by rune and cover U+0000..U+0143, the whole alphabet.
var (
	runeToByte [0x144]byte
	runeIsByte [0x144]bool
)

func init() {
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		byteToRune[b] = r
		runeToByte[r] = byte(b)
		runeIsByte[r] = true
	}
}

// byteLevelString returns the vocabulary spelling of raw bytes: one alphabet character per byte.
func byteLevelString(raw []byte) string {
	var sb strings.Builder
	sb.Grow(2 * len(raw))
	for _, b := range raw {
		sb.WriteRune(byteToRune[b])
	}
	return sb.String()
}

// byteLevelBytes returns the raw bytes a vocabulary spelling stands for, and false when the
// spelling holds a character outside the byte-level alphabet.
func byteLevelBytes(tok string) ([]byte, bool) {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeIsByte) || !runeIsByte[r] {
			return nil, false
		}
		out = append(out, runeToByte[r])
	}
	return out, true
}

// decodedBytes is what Hugging Face's ByteLevel decoder emits for one token: the bytes its
// characters stand for when every character is in the alphabet, and the token's own UTF-8
// bytes otherwise (decoders/byte_level.rs: "unwrap_or_else(|| t.as_bytes().to_vec())"). Added
// tokens such as "<|im_end|>" are plain ASCII printables and so decode to themselves.
func decodedBytes(tok string) []byte {
	if raw, ok := byteLevelBytes(tok); ok {
		return raw
	}
	return []byte(tok)
}

// appendLossyUTF8 appends s to dst with every ill-formed UTF-8 sequence replaced by U+FFFD, one
// replacement per maximal subpart of an ill-formed subsequence (Unicode 15 §3.9, "U+FFFD
// Substitution of Maximal Subparts"). This is what Rust's String::from_utf8_lossy and Python's
// bytes.decode("utf-8", "replace") do, and so what Hugging Face's decode returns; Go's
// strings.ToValidUTF8 differs (one replacement per run of bad bytes).
func appendLossyUTF8(dst []byte, s []byte) []byte {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			dst = append(dst, s[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r != utf8.RuneError || size > 1 {
			dst = append(dst, s[i:i+size]...)
			i += size
			continue
		}
		// s[i] starts an ill-formed sequence; skip the longest prefix that could still begin a
		// well-formed one (the maximal subpart), at least one byte.
		dst = append(dst, "\uFFFD"...)
		i += maximalSubpart(s[i:])
	}
	return dst
}

// maximalSubpart returns the length (>= 1) of the maximal subpart at the start of s, which
// does not begin a well-formed UTF-8 sequence: the lead byte plus the continuation bytes that
// are valid for it (Unicode Table 3-7, Well-Formed UTF-8 Byte Sequences).
func maximalSubpart(s []byte) int {
	b := s[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // allowed range of the first continuation byte
	switch {
	case b >= 0xC2 && b <= 0xDF:
		need = 1
	case b == 0xE0:
		need, lo = 2, 0xA0
	case b >= 0xE1 && b <= 0xEC, b == 0xEE, b == 0xEF:
		need = 2
	case b == 0xED:
		need, hi = 2, 0x9F
	case b == 0xF0:
		need, lo = 3, 0x90
	case b >= 0xF1 && b <= 0xF3:
		need = 3
	case b == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1 // 0x80..0xC1, 0xF5..0xFF never start a sequence
	}
	n := 1
	for k := 0; k < need && n < len(s); k++ {
		c := s[n]
		if k == 0 && (c < lo || c > hi) || k > 0 && (c < 0x80 || c > 0xBF) {
			break
		}
		n++
	}
	return n
}
