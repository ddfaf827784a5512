package search

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The service writes its answers with the two functions below instead of encoding/json, so
// that an answer of 8,192 passages allocates nothing per passage: encoding/json would need
// each passage's contents ("\"<title>\"\n<text>") built as a new string, each document boxed,
// and each list's bytes in a new slice, about 13 MB of garbage for the costliest request. They
// write exactly the bytes encoding/json writes (TestAppendJSONMatchesEncodingJSON).

// appendJSONString appends the concatenation of parts as one JSON string, escaped as
// encoding/json escapes a string by default: `"` and `\` with a backslash; \b, \f, \n, \r, \t
// by name; other control characters and the HTML-sensitive <, > and & as \u00XX; each byte
// that is not valid UTF-8 as \ufffd; U+2028 and U+2029 as \u2028 and \u2029. Where two parts
// meet, one side must be an ASCII byte (as the quotes and newline of Contents are), so that no
// character is split between them.
func appendJSONString(dst []byte, parts ...string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, s := range parts {
		start := 0 // s[start:i] is still to be copied as it is
		for i := 0; i < len(s); {
			if b := s[i]; b < utf8.RuneSelf {
				if b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
					i++
					continue
				}
				dst = append(dst, s[start:i]...)
				switch b {
				case '"', '\\':
					dst = append(dst, '\\', b)
				case '\b':
					dst = append(dst, '\\', 'b')
				case '\f':
					dst = append(dst, '\\', 'f')
				case '\n':
					dst = append(dst, '\\', 'n')
				case '\r':
					dst = append(dst, '\\', 'r')
				case '\t':
					dst = append(dst, '\\', 't')
				default:
					dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
				}
				i++
				start = i
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				dst = append(dst, s[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			default:
				i += size
				continue
			}
			i += size
			start = i
		}
		dst = append(dst, s[start:]...)
	}
	return append(dst, '"')
}

// appendJSONFloat appends a finite float64 as encoding/json writes it: like strconv's
// shortest 'f' form, but in 'e' form below 1e-6 and from 1e21 on (as ECMAScript's
// number-to-string does), with an exponent of at least one digit (e-7, not e-07).
func appendJSONFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-09 -> e-9
		dst = dst[:n-1]
	}
	return dst
}

// appendResult appends one passage of an answer as encoding/json writes a Document
// {"id", "contents"} or, with scores, a ScoredDocument {"document": {...}, "score"}.
func appendResult(dst []byte, f Retrieved, scores bool) []byte {
	if scores {
		dst = append(dst, `{"document":`...)
	}
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, f.ID)
	dst = append(dst, `,"contents":`...)
	dst = appendJSONString(dst, `"`, f.Title, "\"\n", f.Text) // Contents(f.Passage)
	dst = append(dst, '}')
	if scores {
		dst = append(dst, `,"score":`...)
		dst = appendJSONFloat(dst, f.Score)
		dst = append(dst, '}')
	}
	return dst
}
