package search

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecode feeds Decode damaged index files whose checksum has been recomputed, so the
// structural checks (not the checksum) must reject them: Decode must return an error or a
// usable index, never panic. The seeds run with every `go test`; `go test -fuzz FuzzDecode`
// explores further.
func FuzzDecode(f *testing.F) {
	ix, err := Build(smallCorpus(), DefaultOptions())
	if err != nil {
		f.Fatal(err)
	}
	good := indexFile(f, ix)
	f.Add(good, 0, byte(0))
	f.Add(good, len(good)/2, byte(0xff))
	f.Add(good, 20, byte(1))
	f.Add(good[:60], 50, byte(7))
	f.Fuzz(func(t *testing.T, file []byte, at int, x byte) {
		if len(file) < 4 {
			return
		}
		b := bytes.Clone(file)
		if at >= 0 && at < len(b)-4 {
			b[at] ^= x
		}
		got, err := Decode(reseal(b))
		if err != nil {
			return
		}
		for _, q := range []string{"Menotti opera", "rivers", "zzz"} {
			for _, h := range got.Search(q, 3) {
				if h.Doc < 0 || h.Doc >= got.Len() {
					t.Fatalf("hit %d outside %d passages", h.Doc, got.Len())
				}
			}
		}
	})
}

// FuzzAnalyzer checks on arbitrary text that the analyzer never panics and only produces
// non-empty, valid UTF-8 terms without upper-case ASCII or separators.
func FuzzAnalyzer(f *testing.F) {
	for _, s := range []string{"Menotti's opera", "1,000.5 o'brien’s", "ÉCOLE\xff\xfe", "’s'", "'", "a’", "1.", ",1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, term := range NewEnglishAnalyzer().Terms(nil, text) {
			if term == "" || !utf8.ValidString(term) || strings.ContainsAny(term, " \t\n-ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				t.Fatalf("Terms(%q) produced %q", text, term)
			}
		}
	})
}
