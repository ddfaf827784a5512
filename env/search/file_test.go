package search

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestIndexFileRoundTrip(t *testing.T) {
	passages := append(smallCorpus(), randomCorpus(rand.New(rand.NewPCG(5, 6)), 200)...)
	analyzers := []struct {
		name string
		an   *Analyzer
	}{
		{"english", NewEnglishAnalyzer()},
		{"plain", &Analyzer{}},
		{"stem only", &Analyzer{Stem: true}},
	}
	for _, a := range analyzers {
		ix, err := Build(passages, Options{K1: 1.1, B: 0.6, TitleWeight: 2, Analyzer: a.an})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "ix.bm25")
		if err := ix.WriteFile(path); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		back, err := ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if !reflect.DeepEqual(back.Stats(), ix.Stats()) {
			t.Errorf("%s: stats %+v, want %+v", a.name, back.Stats(), ix.Stats())
		}
		if err := SameCorpus(back, passages); err != nil {
			t.Errorf("%s: %v", a.name, err)
		}
		if back.analyzer.Stem != a.an.Stem || back.analyzer.Possessive != a.an.Possessive ||
			len(back.analyzer.StopWords) != len(a.an.StopWords) {
			t.Errorf("%s: analyzer settings not restored: %+v", a.name, back.analyzer)
		}
		for _, q := range []string{"Menotti's operas", "river lake", "American architect", "the"} {
			if got, want := back.Search(q, 10), ix.Search(q, 10); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: query %q: loaded index gives %v, want %v", a.name, q, got, want)
			}
		}
		if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
			t.Errorf("%s: temporary file left behind", a.name)
		}
	}
}

// reseal recomputes the checksum of a modified index file, so that Decode's structural checks,
// not the checksum, must catch the damage.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
}

func TestIndexFileCorrupt(t *testing.T) {
	ix, err := Build(smallCorpus(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ix.Write(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	headerEnd := len(indexMagic) + 4 + 8 + 8 + 4 + 4 // magic, version, k1, b, title weight, flags
	// Offsets of the structures near the end of the file: docLen (7 uint32) before the checksum.
	docLenAt := len(good) - 4 - 4*7
	cases := []struct {
		name string
		file func() []byte
		want string // in the error message
	}{
		{"empty", func() []byte { return nil }, "bad magic"},
		{"bad magic", func() []byte { b := bytes.Clone(good); b[0] = 'X'; return b }, "bad magic"},
		{"other version", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[len(indexMagic):], 99)
			return reseal(b)
		}, "format version 99"},
		{"flipped byte", func() []byte { b := bytes.Clone(good); b[len(b)/2] ^= 0x40; return b }, "checksum"},
		{"truncated", func() []byte { return good[:len(good)-10] }, "checksum"},
		{"truncated and resealed", func() []byte { return reseal(good[:len(good)-9]) }, "truncated"},
		{"trailing bytes", func() []byte {
			b := append(bytes.Clone(good[:len(good)-4]), 0, 0, 0, 0, 0, 0, 0, 0)
			return reseal(b)
		}, "unexpected bytes"},
		{"huge stop word count", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[headerEnd:], 1<<30)
			return reseal(b)
		}, "exceeds the file"},
		{"bad k1", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint64(b[len(indexMagic)+4:], 0xfff8000000000000) // NaN
			return reseal(b)
		}, "k1"},
		{"posting out of range", func() []byte {
			// The last posting's passage number sits just before the tfs and docLen.
			b := bytes.Clone(good)
			p := ix.Stats().Postings
			at := docLenAt - 2*p - 4
			binary.LittleEndian.PutUint32(b[at:], 1000)
			return reseal(b)
		}, "bad posting"},
		{"zero term frequency", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint16(b[docLenAt-2:], 0)
			return reseal(b)
		}, "bad posting"},
	}
	for _, c := range cases {
		_, err := Decode(c.file())
		if err == nil {
			t.Errorf("%s: Decode succeeded", c.name)
			continue
		}
		if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want a corrupt-index error mentioning %q", c.name, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.bm25")
	if err := os.WriteFile(path, good[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile of a damaged file: error %v does not name the file", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("ReadFile of a missing file succeeded")
	}
}
