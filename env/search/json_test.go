package search

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// jsonStringCases are strings that exercise every escape of encoding/json.
var jsonStringCases = []string{
	"", "plain text", `"quoted" \ back\slash`, "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f",
	"<b>&amp;</b>", "é ü 中文 😀", "line\u2028sep\u2029para", "bad \xff\xfe utf8 \xe2\x82", "\xc3",
	"\xe2\x80\xa8", "ends in a partial rune \xe2\x80",
}

// TestAppendJSONMatchesEncodingJSON: the service's answer encoders write exactly what
// encoding/json writes, for strings with every kind of escape, alone and in parts joined by
// ASCII as the contents are ("\"", title, "\"\n", text), floats across the 'f' and 'e'
// cut-offs, and whole documents with and without scores.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStringCases {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("string %q: %s, want %s", s, got, want)
		}
		for _, other := range jsonStringCases {
			want, _ := json.Marshal(`"` + s + "\"\n" + other)
			if got := appendJSONString(nil, `"`, s, "\"\n", other); !bytes.Equal(got, want) {
				t.Errorf("parts %q and %q: %s, want %s", s, other, got, want)
			}
		}
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 7.123456789, 1e-6, 9.99e-7, 1e-7, 1.5e-9, 1e20,
		1e21, 1.2345e22, -3.5e-12, math.MaxFloat64, math.SmallestNonzeroFloat64, 123456789.125}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		floats = append(floats, math.Float64frombits(rng.Uint64()&^(0x7ff<<52)|uint64(rng.IntN(2046)+1)<<52))
	}
	for _, f := range floats {
		want, _ := json.Marshal(f)
		if got := appendJSONFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("float %v: %s, want %s", f, got, want)
		}
	}
	for _, s := range jsonStringCases {
		f := Retrieved{Passage: Passage{ID: "id" + s, Title: s, Text: "text " + s}, Score: 7.25}
		doc := Document{ID: f.ID, Contents: Contents(f.Passage)}
		want, _ := json.Marshal(doc)
		if got := appendResult(nil, f, false); !bytes.Equal(got, want) {
			t.Errorf("document of %q: %s, want %s", s, got, want)
		}
		want, _ = json.Marshal(ScoredDocument{Document: doc, Score: f.Score})
		if got := appendResult(nil, f, true); !bytes.Equal(got, want) {
			t.Errorf("scored document of %q: %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendJSONString checks appendJSONString against encoding/json on any title and text,
// written as a passage's contents are.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringCases {
		f.Add(s, "text "+s)
	}
	f.Fuzz(func(t *testing.T, title, text string) {
		want, _ := json.Marshal(`"` + title + "\"\n" + text)
		if got := appendJSONString(nil, `"`, title, "\"\n", text); !bytes.Equal(got, want) {
			t.Fatalf("title %q, text %q: %s, want %s", title, text, got, want)
		}
		if strings.Contains(string(want), "\n") {
			t.Fatal("encoding/json wrote a raw newline")
		}
	})
}
