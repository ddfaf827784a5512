package search

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"unsafe"

	"agentr1/internal/atomicfile"
)

// The index file holds everything a search needs, so a server starts from it alone, laid out
// to be searched in place: ReadFile maps the file into memory and the index's passages,
// terms, postings and impacts are the mapped bytes themselves, so replicas of a server on one
// host share one copy of the index (the kernel's page cache) instead of one each.
//
//	magic        8 bytes "AR1BM25\n"
//	version      uint32 (indexFileVersion)
//	k1, b        float64, float64
//	titleWeight  uint32
//	flags        uint32: bit 0 stemming, bit 1 possessive stripping
//	stop words   uint32 count, then strings (each its uvarint byte length, then its bytes)
//	counts       uint32 N passages, uint32 T terms, uint64 P postings
//	passage ends (3N) uint64: end of each passage's id, title and text in the passage text
//	passage text bytes: the ids, titles and texts end to end
//	term ends    (T) uint64: end of each term in the term text
//	term text    bytes: the terms end to end, in increasing order
//	offsets      (T+1) uint32: term t's postings are docs[offsets[t]:offsets[t+1]]
//	docs         (P) uint32 passage numbers
//	tfs          (P) uint16 weighted term frequencies
//	docLen       (N) uint32 weighted passage lengths
//	impact       (P) float32: each posting's BM25 term-frequency part at k1 and b (SetBM25)
//	checksum     uint32 CRC-32C (Castagnoli) of every byte before it
//
// Integers and floats are little-endian. Zero bytes pad the file before each array from the
// passage ends on, and before the checksum, to a multiple of 8 bytes from its start, so that
// every array is aligned to its element size where the file is mapped (at a page boundary).

const (
	indexMagic       = "AR1BM25\n"
	indexFileVersion = 2
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
	fw := &fileWriter{bw: bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)}
	fw.put([]byte(indexMagic))
	fw.u32(indexFileVersion)
	fw.u64(math.Float64bits(ix.k1))
	fw.u64(math.Float64bits(ix.b))
	fw.u32(uint32(ix.titleWeight))
	var flags uint32
	if ix.analyzer.Stem {
		flags |= flagStem
	}
	if ix.analyzer.Possessive {
		flags |= flagPossessive
	}
	fw.u32(flags)
	stop := make([]string, 0, len(ix.analyzer.StopWords))
	for w := range ix.analyzer.StopWords {
		stop = append(stop, w)
	}
	slices.Sort(stop)
	fw.u32(uint32(len(stop)))
	for _, w := range stop {
		fw.str(w)
	}
	fw.u32(uint32(ix.Len()))
	fw.u32(uint32(ix.terms.len()))
	fw.u64(uint64(len(ix.docs)))
	writeTable(fw, ix.passages)
	writeTable(fw, ix.terms)
	writeArray(fw, ix.offsets)
	writeArray(fw, ix.docs)
	writeArray(fw, ix.tfs)
	writeArray(fw, ix.docLen)
	writeArray(fw, ix.impact)
	fw.pad()
	if err := fw.bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// fileWriter writes the fields of an index file, counting the bytes for the padding; bufio
// records the first error, which Flush returns.
type fileWriter struct {
	bw      *bufio.Writer
	written int
	scratch []byte
}

func (fw *fileWriter) put(b []byte) {
	fw.bw.Write(b)
	fw.written += len(b)
}

func (fw *fileWriter) u32(v uint32) { fw.put(binary.LittleEndian.AppendUint32(fw.scratch[:0], v)) }
func (fw *fileWriter) u64(v uint64) { fw.put(binary.LittleEndian.AppendUint64(fw.scratch[:0], v)) }

// str writes a string as its uvarint byte length and its bytes.
func (fw *fileWriter) str(s string) {
	fw.put(binary.AppendUvarint(fw.scratch[:0], uint64(len(s))))
	fw.bw.WriteString(s)
	fw.written += len(s)
}

// pad writes zero bytes up to the next multiple of 8 bytes from the start of the file.
func (fw *fileWriter) pad() {
	fw.put(make([]byte, (8-fw.written%8)%8))
}

// writeArray writes data little-endian after the padding, a chunk at a time.
func writeArray[T uint16 | uint32 | uint64 | float32](fw *fileWriter, data []T) {
	fw.pad()
	for len(data) > 0 {
		chunk := data[:min(len(data), 4096)]
		fw.scratch, _ = binary.Append(fw.scratch[:0], binary.LittleEndian, chunk) // fixed-size numbers: cannot fail
		fw.put(fw.scratch)
		data = data[len(chunk):]
	}
}

// writeTable writes a string table: its ends, then its text, each after the padding.
func writeTable(fw *fileWriter, t stringTable) {
	writeArray(fw, t.ends)
	fw.pad()
	fw.bw.WriteString(t.text)
	fw.written += len(t.text)
}

// ReadFile loads an index saved by WriteFile, mapping the file into memory read-only where the
// system can (Unix) and reading it whole elsewhere. The mapping is kept for the life of the
// process: the index's passages are the mapped bytes, and they are handed out as strings. A
// file that is truncated, fails its checksum, has another version or an inconsistent
// structure is an error naming the file.
//
// Rewriting the file (WriteFile replaces it with a new one) does not affect an index already
// read from it; shortening the mapped file in place would (the process would fault).
func ReadFile(path string) (*Index, error) {
	buf, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("load index: %w", err)
	}
	ix, err := Decode(buf)
	if err != nil {
		unmapFile(buf) // nothing refers to it yet
		return nil, fmt.Errorf("load index %s: %w", path, err)
	}
	return ix, nil
}

// errCorrupt wraps every structural problem Decode finds.
var errCorrupt = errors.New("corrupt index")

// Decode parses an index from the bytes of an index file. The index is read in place: its
// passages, terms, postings and impacts are buf's bytes (on a little-endian machine, which
// nearly all are; a big-endian one copies the numbers), so buf must not change afterwards.
func Decode(buf []byte) (*Index, error) {
	if len(buf) < len(indexMagic)+8 || string(buf[:len(indexMagic)]) != indexMagic {
		return nil, fmt.Errorf("%w: not an agentr1 BM25 index (bad magic)", errCorrupt)
	}
	if v := binary.LittleEndian.Uint32(buf[len(indexMagic):]); v != indexFileVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads version %d (rebuild it with agentr1 index)", errCorrupt, v, indexFileVersion)
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
	numPassages, numTerms := int(d.u32()), int(d.u32())
	numPostings := d.u64()
	ix := &Index{analyzer: an, titleWeight: int(titleWeight)}
	ix.passages = d.table(3 * numPassages)
	ix.terms = d.table(numTerms)
	for t := 1; d.err == nil && t < numTerms; t++ {
		if ix.terms.at(t) <= ix.terms.at(t-1) {
			d.fail("terms not in increasing order at term %d", t)
		}
	}
	ix.offsets = array[uint32](&d, uint64(numTerms)+1)
	if d.err == nil && ix.offsets[0] != 0 {
		d.fail("postings offsets do not start at 0")
	}
	for t := 0; d.err == nil && t < numTerms; t++ {
		if ix.offsets[t+1] <= ix.offsets[t] {
			d.fail("term %d has no postings", t)
		}
	}
	if d.err == nil && uint64(ix.offsets[numTerms]) != numPostings {
		d.fail("the offsets end at posting %d, the file has %d", ix.offsets[numTerms], numPostings)
	}
	ix.docs = array[uint32](&d, numPostings)
	ix.tfs = array[uint16](&d, numPostings)
	ix.docLen = array[uint32](&d, uint64(numPassages))
	ix.impact = array[float32](&d, numPostings)
	d.align()
	if d.err == nil && d.off != len(d.buf) {
		d.fail("%d unexpected bytes before the checksum", len(d.buf)-d.off)
	}
	for t := 0; d.err == nil && t < numTerms; t++ {
		for i := ix.offsets[t]; i < ix.offsets[t+1]; i++ {
			if int(ix.docs[i]) >= numPassages || (i > ix.offsets[t] && ix.docs[i] <= ix.docs[i-1]) || ix.tfs[i] == 0 {
				d.fail("bad posting %d of term %d", i-ix.offsets[t], t)
				break
			}
		}
	}
	for i := 0; d.err == nil && i < len(ix.impact); i++ {
		if v := ix.impact[i]; !(v >= 0 && v <= math.MaxFloat32) { // NaN fails too
			d.fail("posting %d has impact %v", i, v)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if numPassages == 0 {
		return nil, fmt.Errorf("%w: no passages", errCorrupt)
	}
	if err := checkBM25(k1, b); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	ix.k1, ix.b = k1, b // the impacts are the file's, computed at these
	var sum64 float64
	for _, l := range ix.docLen {
		sum64 += float64(l)
	}
	ix.avgLen = max(sum64/float64(len(ix.docLen)), 1)
	ix.setIDF()
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

// take returns the next n elements of size bytes each, or nil after recording a truncation.
func (d *decoder) take(n uint64, size int) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)-d.off)/uint64(size) {
		d.fail("truncated at byte %d (want %d more elements of %d bytes)", d.off, n, size)
		return nil
	}
	b := d.buf[d.off : d.off+int(n)*size]
	d.off += len(b)
	return b
}

func (d *decoder) u32() uint32 {
	if b := d.take(1, 4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(1, 8); b != nil {
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
	return string(d.take(n, 1))
}

// align skips the zero bytes up to the next multiple of 8 bytes.
func (d *decoder) align() {
	pad := d.take(uint64((8-d.off%8)%8), 1)
	if slices.ContainsFunc(pad, func(c byte) bool { return c != 0 }) {
		d.fail("non-zero padding at byte %d", d.off-len(pad))
	}
}

// table reads a string table of n strings (ends, then text) in place.
func (d *decoder) table(n int) stringTable {
	ends := array[uint64](d, uint64(n))
	d.align()
	if d.err != nil {
		return stringTable{}
	}
	var size uint64
	if n > 0 {
		size = ends[n-1]
	}
	for i := 1; i < n; i++ {
		if ends[i] < ends[i-1] {
			d.fail("string %d of a table ends before the one before it", i)
			return stringTable{}
		}
	}
	text := d.take(size, 1)
	if d.err != nil {
		return stringTable{}
	}
	return stringTable{text: unsafe.String(unsafe.SliceData(text), len(text)), ends: ends}
}

// array reads n little-endian numbers after the padding, in place where it can: the bytes are
// aligned (the format pads them, and a mapped file starts at a page) and the machine is
// little-endian; otherwise it copies them.
func array[T uint16 | uint32 | uint64 | float32](d *decoder, n uint64) []T {
	d.align()
	size := int(unsafe.Sizeof(T(0)))
	b := d.take(n, size)
	if b == nil || n == 0 {
		return []T{}
	}
	if littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size) == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	out := make([]T, n)
	binary.Decode(b, binary.LittleEndian, out) // exactly n numbers' bytes: cannot fail
	return out
}

// littleEndian reports whether the machine stores numbers as the index file does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
