package model

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"agentr1/internal/atomicfile"
	"agentr1/internal/floatio"
	"agentr1/tensor"
)

// The safetensors format (https://github.com/huggingface/safetensors, "Format"): an 8-byte
// little-endian unsigned header length N, N bytes of JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (byte offsets into the data section that
// follows the header) plus an optional "__metadata__" map of strings, then the raw
// little-endian tensor data.

// maxHeaderBytes bounds the JSON header, as the reference implementation does (100 MB).
const maxHeaderBytes = 100 << 20

// dtypeSize is the width in bytes of each safetensors dtype.
var dtypeSize = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
	"F8_E4M3": 1, "F8_E5M2": 1,
}

// stTensor is one entry of a safetensors header.
type stTensor struct {
	Dtype       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// stFile is an open safetensors file whose header has been read and checked.
type stFile struct {
	path      string
	f         *os.File
	dataStart int64               // byte offset of the data section: 8 + header length
	tensors   map[string]stTensor // by tensor name
	metadata  map[string]string   // "__metadata__"
	mapped    []byte              // the whole file mapped read-only (mapFile), or nil
}

// openSafetensors opens path and validates its header: every tensor's dtype is known, its
// byte range lies inside the file and matches its shape, and the ranges together cover the
// data section exactly (tilesDataSection).
func openSafetensors(path string) (*stFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := parseSafetensorsHeader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return st, nil
}

func parseSafetensorsHeader(f *os.File, path string) (*stFile, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("%s: truncated safetensors file: %d bytes, need at least 8 for the header length", path, size)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeaderBytes {
		return nil, fmt.Errorf("%s: safetensors header length %d exceeds the %d-byte limit", path, n, maxHeaderBytes)
	}
	if int64(n) > size-8 {
		return nil, fmt.Errorf("%s: safetensors header length %d is longer than the %d bytes after it", path, n, size-8)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fmt.Errorf("%s: reading safetensors header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("%s: safetensors header is not a JSON object: %w", path, err)
	}
	st := &stFile{path: path, f: f, dataStart: 8 + int64(n), tensors: map[string]stTensor{}}
	dataLen := size - st.dataStart
	var spans []stSpan
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &st.metadata); err != nil {
				return nil, fmt.Errorf("%s: __metadata__ is not a map of strings: %w", path, err)
			}
			continue
		}
		var t stTensor
		if err := json.Unmarshal(v, &t); err != nil {
			return nil, fmt.Errorf("%s: tensor %q: bad header entry: %w", path, name, err)
		}
		width, ok := dtypeSize[t.Dtype]
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q: unknown dtype %q", path, name, t.Dtype)
		}
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("%s: tensor %q: negative dimension in shape %v", path, name, t.Shape)
			}
		}
		begin, end := t.DataOffsets[0], t.DataOffsets[1]
		if begin < 0 || end < begin || end > dataLen {
			return nil, fmt.Errorf("%s: tensor %q: data offsets [%d, %d] outside the %d-byte data section", path, name, begin, end, dataLen)
		}
		if size, ok := byteSize(t.Shape, width); !ok || size != end-begin {
			return nil, fmt.Errorf("%s: tensor %q: %s shape %v needs %s bytes, data offsets [%d, %d] hold %d", path, name, t.Dtype, t.Shape, sizeString(size, ok), begin, end, end-begin)
		}
		st.tensors[name] = t
		spans = append(spans, stSpan{name, begin, end})
	}
	if err := tilesDataSection(path, spans, dataLen); err != nil {
		return nil, err
	}
	return st, nil
}

// stSpan is the byte range [begin, end) of tensor name in a safetensors data section.
type stSpan struct {
	name       string
	begin, end int64
}

// tilesDataSection checks that the tensors' byte ranges cover a data section of dataLen bytes
// exactly, as the safetensors format requires: taken in order of their offsets, each begins
// where the one before it ends, the first at 0, and the last ends where the file does. A gap,
// an overlap or trailing bytes is an error naming path and the tensor or the bytes at fault.
// The order is by (begin, end), as the reference implementation sorts, so an empty tensor
// comes before a tensor beginning at its offset. spans is sorted in place.
func tilesDataSection(path string, spans []stSpan, dataLen int64) error {
	slices.SortFunc(spans, func(a, b stSpan) int {
		if c := cmp.Compare(a.begin, b.begin); c != 0 {
			return c
		}
		if c := cmp.Compare(a.end, b.end); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var at int64 // where the next tensor must begin: the end of the one before it
	for i, s := range spans {
		switch {
		case s.begin > at:
			return fmt.Errorf("%s: tensor %q: data offsets [%d, %d] leave the bytes [%d, %d) of the data section unused; safetensors tensors cover it without gaps", path, s.name, s.begin, s.end, at, s.begin)
		case s.begin < at:
			prev := spans[i-1]
			return fmt.Errorf("%s: tensors %q [%d, %d] and %q [%d, %d] overlap", path, prev.name, prev.begin, prev.end, s.name, s.begin, s.end)
		}
		at = s.end
	}
	if at != dataLen {
		after := "the header, which names no tensor"
		if len(spans) > 0 {
			after = fmt.Sprintf("the last tensor, %q", spans[len(spans)-1].name)
		}
		return fmt.Errorf("%s: %d trailing bytes [%d, %d) of the data section after %s; a safetensors file ends where its last tensor does", path, dataLen-at, at, dataLen, after)
	}
	return nil
}

// byteSize returns the bytes a tensor of the given shape (no negative dimension) and element
// width occupies, and false when that overflows int64. An empty tensor is 0 bytes whatever
// its other dimensions.
func byteSize(shape []int, width int64) (int64, bool) {
	if slices.Contains(shape, 0) {
		return 0, true
	}
	n := uint64(width)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		n = lo
	}
	return int64(n), true
}

func sizeString(size int64, ok bool) string {
	if !ok {
		return "more than 2^63"
	}
	return fmt.Sprint(size)
}

// Close unmaps and closes the underlying file.
func (st *stFile) Close() error { return errors.Join(st.unmap(), st.f.Close()) }

// readFloat32 reads tensor name into dst, converting F32, F64, BF16 or F16 to float32.
// The tensor must have exactly the given shape.
func (st *stFile) readFloat32(name string, shape []int, dst []float32) error {
	t, ok := st.tensors[name]
	if !ok {
		return fmt.Errorf("%s: missing tensor %q", st.path, name)
	}
	if !sameShape(t.Shape, shape) {
		return fmt.Errorf("%s: tensor %q has shape %v, want %v", st.path, name, t.Shape, shape)
	}
	width := dtypeSize[t.Dtype]
	var convert func(dst []float32, src []byte)
	switch t.Dtype {
	case "F32":
		convert = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		}
	case "F64":
		convert = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
			}
		}
	case "BF16":
		convert = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = tensor.BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
			}
		}
	case "F16":
		convert = func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = float16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
			}
		}
	default:
		return fmt.Errorf("%s: tensor %q: dtype %s cannot be loaded as float32 (want F32, F64, BF16 or F16)", st.path, name, t.Dtype)
	}
	const chunk = 1 << 16 // elements converted per read
	buf := make([]byte, min(len(dst), chunk)*int(width))
	off := st.dataStart + t.DataOffsets[0]
	for lo := 0; lo < len(dst); lo += chunk {
		hi := min(lo+chunk, len(dst))
		b := buf[:(hi-lo)*int(width)]
		if _, err := st.f.ReadAt(b, off); err != nil {
			return fmt.Errorf("%s: tensor %q: %w", st.path, name, err)
		}
		convert(dst[lo:hi], b)
		off += int64(len(b))
	}
	return nil
}

// checkFinite returns an error naming the first weight of tensor name (read from path) that is
// NaN or infinite. A model's weights must be finite: a checkpoint saved by a run that diverged
// would otherwise load and answer nothing, its evaluation all zeros, with no sign of why.
func checkFinite(path, name string, values []float32) error {
	for i, x := range values {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nonFinite(path, name, i, x)
		}
	}
	return nil
}

func nonFinite(path, name string, i int, x float32) error {
	return fmt.Errorf("%s: tensor %q: value %d is %v; a checkpoint's weights must be finite", path, name, i, x)
}

// float16ToFloat32 converts an IEEE 754 half-precision value, including subnormals,
// infinities and NaN.
func float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
	case mant == 0: // signed zero
		return math.Float32frombits(sign)
	default: // subnormal: mant * 2^-24
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// stEntry is one tensor to write.
type stEntry struct {
	name  string
	shape []int
	data  []float32
}

// writeSafetensors writes the tensors, in order, to path in dtype (F32, or BF16 rounded to
// nearest even) with the metadata {"format": "pt"} that transformers' save_pretrained writes
// and from_pretrained expects. The data sections are contiguous and the header is padded with
// spaces to a multiple of 8 bytes, as the reference writer does. The file is written beside
// path and renamed into place.
func writeSafetensors(path string, entries []stEntry, dtype DType) error {
	if err := dtype.check(); err != nil {
		return err
	}
	width := int64(dtype.width())
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, e := range entries {
		if _, dup := header[e.name]; dup {
			return fmt.Errorf("write %s: tensor %q twice", path, e.name)
		}
		n := int64(len(e.data)) * width
		shape := e.shape
		if shape == nil {
			shape = []int{} // a scalar: "shape": [] (null is rejected by readers)
		}
		header[e.name] = stTensor{Dtype: string(dtype), Shape: shape, DataOffsets: [2]int64{off, off + n}}
		off += n
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		var lenBuf [8]byte
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hj)))
		if _, err := w.Write(lenBuf[:]); err != nil {
			return err
		}
		if _, err := w.Write(hj); err != nil {
			return err
		}
		write := floatio.WriteF32
		if dtype == BF16 {
			write = floatio.WriteBF16
		}
		for _, e := range entries {
			if err := write(w, e.data); err != nil {
				return err
			}
		}
		return nil
	})
}

// IndexFile is the name of the index of a sharded checkpoint.
const IndexFile = "model.safetensors.index.json"

// WeightsFile is the name of an unsharded checkpoint's weights.
const WeightsFile = "model.safetensors"

// checkpoint is a set of open safetensors files and which of them holds each tensor.
type checkpoint struct {
	path  string // the .safetensors file or the index, for errors
	files []*stFile
	where map[string]*stFile // tensor name -> file holding it
}

// openCheckpoint opens a .safetensors file, or every shard named by a
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}).
func openCheckpoint(path string) (*checkpoint, error) {
	ck := &checkpoint{path: path, where: map[string]*stFile{}}
	if filepath.Ext(path) != ".json" {
		st, err := openSafetensors(path)
		if err != nil {
			return nil, err
		}
		ck.files = append(ck.files, st)
		for name := range st.tensors {
			ck.where[name] = st
		}
		return ck, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: empty or missing \"weight_map\"", path)
	}
	shards := map[string]*stFile{}
	names := make([]string, 0, len(index.WeightMap))
	for name := range index.WeightMap {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		shard := index.WeightMap[name]
		st, ok := shards[shard]
		if !ok {
			if filepath.Base(shard) != shard {
				ck.Close()
				return nil, fmt.Errorf("%s: tensor %q: shard %q is not a file name in the checkpoint folder", path, name, shard)
			}
			st, err = openSafetensors(filepath.Join(filepath.Dir(path), shard))
			if err != nil {
				ck.Close()
				return nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
			}
			shards[shard] = st
			ck.files = append(ck.files, st)
		}
		if _, ok := st.tensors[name]; !ok {
			ck.Close()
			return nil, fmt.Errorf("%s: tensor %q: index names shard %s, which does not hold it", path, name, shard)
		}
		ck.where[name] = st
	}
	return ck, nil
}

// Close closes every file of the checkpoint.
func (ck *checkpoint) Close() error {
	var errs []error
	for _, st := range ck.files {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// checkShapes returns an error naming the first of params that ck does not hold with the
// parameter's shape, reading the headers only.
func (ck *checkpoint) checkShapes(params []*Param) error {
	for _, p := range params {
		st, ok := ck.where[p.Name]
		if !ok {
			return fmt.Errorf("%s: missing tensor %q", ck.path, p.Name)
		}
		if shape := st.tensors[p.Name].Shape; !sameShape(shape, p.Shape) {
			return fmt.Errorf("%s: tensor %q has shape %v, want %v", st.path, p.Name, shape, p.Shape)
		}
	}
	return nil
}

// read loads tensor name with the given shape into dst and checks that its values are finite.
func (ck *checkpoint) read(name string, shape []int, dst []float32) error {
	st, ok := ck.where[name]
	if !ok {
		return fmt.Errorf("%s: missing tensor %q", ck.path, name)
	}
	if err := st.readFloat32(name, shape, dst); err != nil {
		return err
	}
	return checkFinite(st.path, name, dst)
}

// readPacked packs tensor name, a weight matrix W (out, in) of the given shape, into dst as
// op(B) = W^T for tensor.GemmPacked of the model m: a BF16 tensor's values as they are
// (m.packBF16), read through the file's memory map where there is one; any other float dtype
// converted to float32 first (PackCopy), as read does, which m's ComputeBF16 refuses. A value
// that is not finite is an error, as in read.
func (ck *checkpoint) readPacked(name string, shape []int, dst *tensor.PackedB, m *Model) error {
	st, ok := ck.where[name]
	if !ok {
		return fmt.Errorf("%s: missing tensor %q", ck.path, name)
	}
	t := st.tensors[name]
	if !sameShape(t.Shape, shape) || len(shape) != 2 {
		return fmt.Errorf("%s: tensor %q has shape %v, want %v", st.path, name, t.Shape, shape)
	}
	out, in := shape[0], shape[1]
	if t.Dtype != "BF16" && m.compute == ComputeBF16 {
		return fmt.Errorf("%s: tensor %q is %s: bf16 compute multiplies the weights as a BF16 checkpoint stores them; convert the checkpoint to BF16 (or compute in f32)", st.path, name, t.Dtype)
	}
	if t.Dtype != "BF16" {
		w := make([]float32, out*in)
		if err := st.readFloat32(name, shape, w); err != nil {
			return err
		}
		if err := checkFinite(st.path, name, w); err != nil {
			return err
		}
		dst.PackCopy(true, in, out, w, in)
		return nil
	}
	values, release, err := st.bf16Values(name, t)
	if err != nil {
		return err
	}
	defer release()
	for i, v := range values {
		if v&0x7f80 == 0x7f80 { // the exponent all ones: an infinity or a NaN
			return nonFinite(st.path, name, i, tensor.BF16ToFloat32(v))
		}
	}
	m.packBF16(dst, shape, values)
	return nil
}

// bf16Values returns the values of the BF16 tensor t, named name: a view of the file's memory
// map where there is one (and the data is 2-byte aligned on a little-endian machine), else a
// copy read from the file. release ends the use of a view, its pages leaving the process's
// resident memory (the page cache keeps them).
func (st *stFile) bf16Values(name string, t stTensor) (values []uint16, release func(), err error) {
	begin, end := st.dataStart+t.DataOffsets[0], st.dataStart+t.DataOffsets[1]
	n := int((end - begin) / 2)
	if n == 0 {
		return nil, func() {}, nil
	}
	if mapped, err := st.mapFile(); err == nil && mapped != nil {
		if v, ok := uint16View(mapped[begin:end]); ok {
			return v, func() { dropPages(mapped, begin, end) }, nil
		}
	}
	raw := make([]byte, end-begin)
	if _, err := st.f.ReadAt(raw, begin); err != nil {
		return nil, nil, fmt.Errorf("%s: tensor %q: %w", st.path, name, err)
	}
	values = make([]uint16, n)
	for i := range values {
		values[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return values, func() {}, nil
}
