package search

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"

	"agentr1/internal/atomicfile"
)

// The index file holds everything a search needs, so a server can start from it alone:
//
//	magic       8 bytes "AR1BM25\n"
//	version     uint32 (indexFileVersion)
//	k1, b       float64, float64
//	titleWeight uint32
//	flags       uint32: bit 0 stemming, bit 1 possessive stripping
//	stop words  uint32 count, then strings
//	passages    uint32 count N, then id, title, text strings of each
//	terms       uint32 count T, then the strings in increasing order
//	offsets     (T+1) uint32
//	docs        (P) uint32, P = offsets[T]
//	tfs         (P) uint16
//	docLen      (N) uint32
//	checksum    uint32 CRC-32C (Castagnoli) of every byte before it
//
// Integers and floats are little-endian; a string is its uvarint byte length then its bytes.

const (
	indexMagic       = "AR1BM25\n"
	indexFileVersion = 1
	flagStem         = 1 << 0
	flagPossessive   = 1 << 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteFile saves the index to path atomically (package internal/atomicfile).
func (ix *Index) WriteFile(path string) error {
	if err := atomicfile.Write(path, ix.Write); err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	return nil
}

// Write writes the index in the file format above.
func (ix *Index) Write(w io.Writer) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	var scratch []byte
	put := func(b []byte) { bw.Write(b) } // bufio records the first error; Flush returns it
	u32 := func(v uint32) { scratch = binary.LittleEndian.AppendUint32(scratch[:0], v); put(scratch) }
	str := func(s string) {
		scratch = binary.AppendUvarint(scratch[:0], uint64(len(s)))
		put(scratch)
		bw.WriteString(s)
	}

	put([]byte(indexMagic))
	u32(indexFileVersion)
	scratch = binary.LittleEndian.AppendUint64(scratch[:0], math.Float64bits(ix.k1))
	scratch = binary.LittleEndian.AppendUint64(scratch, math.Float64bits(ix.b))
	put(scratch)
	u32(uint32(ix.titleWeight))
	var flags uint32
	if ix.analyzer.Stem {
		flags |= flagStem
	}
	if ix.analyzer.Possessive {
		flags |= flagPossessive
	}
	u32(flags)
	stop := make([]string, 0, len(ix.analyzer.StopWords))
	for w := range ix.analyzer.StopWords {
		stop = append(stop, w)
	}
	slices.Sort(stop)
	u32(uint32(len(stop)))
	for _, w := range stop {
		str(w)
	}
	u32(uint32(len(ix.passages)))
	for _, p := range ix.passages {
		str(p.ID)
		str(p.Title)
		str(p.Text)
	}
	terms := make([]string, len(ix.terms))
	for t, id := range ix.terms {
		terms[id] = t
	}
	u32(uint32(len(terms)))
	for _, t := range terms {
		str(t)
	}
	for _, v := range ix.offsets {
		u32(v)
	}
	for _, v := range ix.docs {
		u32(v)
	}
	for _, v := range ix.tfs {
		scratch = binary.LittleEndian.AppendUint16(scratch[:0], v)
		put(scratch)
	}
	for _, v := range ix.docLen {
		u32(v)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// ReadFile loads an index saved by WriteFile. A file that is truncated, fails its checksum,
// has another version or an inconsistent structure is an error naming the file.
func ReadFile(path string) (*Index, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load index: %w", err)
	}
	ix, err := Decode(buf)
	if err != nil {
		return nil, fmt.Errorf("load index %s: %w", path, err)
	}
	return ix, nil
}

// errCorrupt wraps every structural problem Decode finds.
var errCorrupt = errors.New("corrupt index")

// Decode parses an index from the bytes of an index file.
func Decode(buf []byte) (*Index, error) {
	if len(buf) < len(indexMagic)+8 || string(buf[:len(indexMagic)]) != indexMagic {
		return nil, fmt.Errorf("%w: not an agentr1 BM25 index (bad magic)", errCorrupt)
	}
	if v := binary.LittleEndian.Uint32(buf[len(indexMagic):]); v != indexFileVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads version %d", errCorrupt, v, indexFileVersion)
	}
	body, sum := buf[:len(buf)-4], binary.LittleEndian.Uint32(buf[len(buf)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, file says %08x (truncated or damaged)", errCorrupt, got, sum)
	}
	d := decoder{buf: body, off: len(indexMagic) + 4}
	k1 := math.Float64frombits(d.u64())
	b := math.Float64frombits(d.u64())
	titleWeight := d.u32()
	flags := d.u32()
	an := &Analyzer{Stem: flags&flagStem != 0, Possessive: flags&flagPossessive != 0}
	if n := d.count(1); n > 0 {
		an.StopWords = make(map[string]bool, n)
		for range n {
			an.StopWords[d.str()] = true
		}
	}
	passages := make([]Passage, d.count(3))
	for i := range passages {
		passages[i] = Passage{ID: d.str(), Title: d.str(), Text: d.str()}
	}
	terms := make(map[string]uint32, d.peekCount())
	numTerms := d.count(1)
	prev := ""
	for id := range numTerms {
		t := d.str()
		if id > 0 && t <= prev {
			d.fail("terms not in increasing order at term %d", id)
		}
		terms[t] = uint32(id)
		prev = t
	}
	offsets := d.u32s(numTerms + 1)
	if d.err == nil && (len(offsets) == 0 || offsets[0] != 0) {
		d.fail("postings offsets do not start at 0")
	}
	for t := 0; d.err == nil && t < numTerms; t++ {
		if offsets[t+1] <= offsets[t] {
			d.fail("term %d has no postings", t)
		}
	}
	var numPostings int
	if d.err == nil {
		numPostings = int(offsets[numTerms])
	}
	docs := d.u32s(numPostings)
	tfs := d.u16s(numPostings)
	docLen := d.u32s(len(passages))
	if d.err == nil && d.off != len(d.buf) {
		d.fail("%d unexpected bytes before the checksum", len(d.buf)-d.off)
	}
	for t := 0; d.err == nil && t < numTerms; t++ {
		for i := offsets[t]; i < offsets[t+1]; i++ {
			if int(docs[i]) >= len(passages) || (i > offsets[t] && docs[i] <= docs[i-1]) || tfs[i] == 0 {
				d.fail("bad posting %d of term %d", i-offsets[t], t)
				break
			}
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(passages) == 0 {
		return nil, fmt.Errorf("%w: no passages", errCorrupt)
	}
	ix := &Index{
		passages: passages, analyzer: an, titleWeight: int(titleWeight),
		terms: terms, offsets: offsets, docs: docs, tfs: tfs, docLen: docLen,
	}
	var sum64 float64
	for _, l := range docLen {
		sum64 += float64(l)
	}
	ix.avgLen = max(sum64/float64(len(docLen)), 1)
	if err := ix.SetBM25(k1, b); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return ix, nil
}

// decoder reads the index file's fields, remembering the first error; after an error every
// read returns zero values.
type decoder struct {
	buf []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errCorrupt}, args...)...)
	}
}

// take returns the next n bytes, or nil after recording a truncation.
func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.fail("truncated at byte %d (want %d more)", d.off, n)
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads an element count and checks that the rest of the file could hold that many
// elements of at least minBytes each, so a damaged count cannot cause a huge allocation.
func (d *decoder) count(minBytes int) int {
	n := int(d.u32())
	if d.err == nil && n*minBytes > len(d.buf)-d.off {
		d.fail("count %d at byte %d exceeds the file", n, d.off-4)
		return 0
	}
	return n
}

// peekCount returns the next count without consuming it (0 on error), for map sizing.
func (d *decoder) peekCount() int {
	if d.err != nil || len(d.buf)-d.off < 4 {
		return 0
	}
	return min(int(binary.LittleEndian.Uint32(d.buf[d.off:])), len(d.buf)-d.off)
}

func (d *decoder) str() string {
	if d.err != nil {
		return ""
	}
	n, size := binary.Uvarint(d.buf[d.off:])
	if size <= 0 {
		d.fail("bad string length at byte %d", d.off)
		return ""
	}
	d.off += size
	return string(d.take(int(min(n, math.MaxInt32))))
}

func (d *decoder) u32s(n int) []uint32 {
	b := d.take(4 * n)
	if b == nil {
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func (d *decoder) u16s(n int) []uint16 {
	b := d.take(2 * n)
	if b == nil {
		return nil
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}
