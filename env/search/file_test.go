package search

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
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

// indexFile returns the bytes of ix's index file, as WriteFile would save them.
func indexFile(tb testing.TB, ix *Index) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := ix.Write(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
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
	good := indexFile(t, ix)
	headerEnd := len(indexMagic) + 4 + 8 + 8 + 4 + 4 // magic, version, k1, b, title weight, flags
	// Where the last posting's passage number, term frequency and impact are: Decode reads the
	// file in place, so its slices point into good.
	inPlace, err := Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	p := ix.Stats().Postings
	at := func(ptr unsafe.Pointer) int { return int(uintptr(ptr) - uintptr(unsafe.Pointer(&good[0]))) }
	lastDocAt, lastTFAt := at(unsafe.Pointer(&inPlace.docs[p-1])), at(unsafe.Pointer(&inPlace.tfs[p-1]))
	lastImpactAt := at(unsafe.Pointer(&inPlace.impact[p-1]))
	countsAt := headerEnd + 4 // N, T and P follow the stop words
	for w := range ix.analyzer.StopWords {
		countsAt += len(binary.AppendUvarint(nil, uint64(len(w)))) + len(w)
	}
	padAt := -1 // a padding byte: after the impacts, the term frequencies or the passage numbers
	for _, end := range []int{lastImpactAt + 4, lastTFAt + 2, lastDocAt + 4} {
		if end%8 != 0 {
			padAt = end
		}
	}
	if padAt < 0 {
		t.Fatal("no padding in the test index; change the corpus")
	}
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
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[lastDocAt:], 1000)
			return reseal(b)
		}, "bad posting"},
		{"zero term frequency", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint16(b[lastTFAt:], 0)
			return reseal(b)
		}, "bad posting"},
		{"NaN impact", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[lastImpactAt:], math.Float32bits(float32(math.NaN())))
			return reseal(b)
		}, "impact NaN"},
		{"huge posting count", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint64(b[countsAt+8:], 1<<62)
			return reseal(b)
		}, "offsets end at posting"},
		{"huge passage count", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[countsAt:], 1<<31)
			return reseal(b)
		}, "truncated"},
		{"non-zero padding", func() []byte {
			b := bytes.Clone(good)
			b[padAt] = 1
			return reseal(b)
		}, "padding"},
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
	empty := filepath.Join(t.TempDir(), "empty.bm25") // nothing to map
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(empty); err == nil || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("ReadFile of an empty file: error %v, want bad magic naming the file", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("ReadFile of a missing file succeeded")
	}
}

// TestDecodeInPlace checks that Decode uses the file's bytes for the passages and postings
// instead of copying them (what lets server replicas share one mapped index), and that a
// buffer that is not aligned, where the numbers must be copied, gives the same index.
func TestDecodeInPlace(t *testing.T) {
	ix, err := Build(append(smallCorpus(), randomCorpus(rand.New(rand.NewPCG(7, 8)), 50)...), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	file := indexFile(t, ix)
	within := func(p unsafe.Pointer) bool {
		return uintptr(p) >= uintptr(unsafe.Pointer(&file[0])) && uintptr(p) < uintptr(unsafe.Pointer(&file[0]))+uintptr(len(file))
	}
	inPlace, err := Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	if !within(unsafe.Pointer(unsafe.StringData(inPlace.Passage(3).Text))) || !within(unsafe.Pointer(&inPlace.docs[0])) ||
		!within(unsafe.Pointer(&inPlace.impact[0])) || !within(unsafe.Pointer(unsafe.StringData(inPlace.terms.at(0)))) {
		t.Error("the decoded index copied the file's passages, terms or postings")
	}
	shifted := make([]byte, len(file)+1)[1:] // misaligned by one byte
	copy(shifted, file)
	copied, err := Decode(shifted)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"Menotti's operas", "river lake", "American architect"} {
		want := ix.Search(q, 10)
		if got := inPlace.Search(q, 10); !reflect.DeepEqual(got, want) {
			t.Errorf("in place: query %q gives %v, want %v", q, got, want)
		}
		if got := copied.Search(q, 10); !reflect.DeepEqual(got, want) {
			t.Errorf("misaligned: query %q gives %v, want %v", q, got, want)
		}
	}
	if !reflect.DeepEqual(copied.Passages(), ix.Passages()) || !reflect.DeepEqual(copied.impact, ix.impact) {
		t.Error("the misaligned copy's passages or impacts differ")
	}
}
