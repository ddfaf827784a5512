package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fuzzSTFile builds a safetensors file: the 8-byte header length (claimed, when non-negative,
// instead of the real one), the header JSON, then the data.
func fuzzSTFile(header map[string]any, data []byte, claimed int64) []byte {
	hj, err := json.Marshal(header)
	if err != nil {
		panic(err) // the tests build the headers: a programmer error
	}
	n := uint64(len(hj))
	if claimed >= 0 {
		n = uint64(claimed)
	}
	out := binary.LittleEndian.AppendUint64(nil, n)
	return append(append(out, hj...), data...)
}

// fuzzSTSeeds are files that probe each check of the header: a valid file (with an empty
// tensor), then a huge header length, a header longer than the file, negative and inverted
// offsets, overlapping tensors, an unknown dtype, a negative dimension, sizes that disagree
// with the shape, shapes whose byte size overflows int64 (and wraps to 0), an empty tensor
// with huge dimensions, truncation, a non-object header, a gap between tensors and trailing
// bytes after the last.
func fuzzSTSeeds() [][]byte {
	data := make([]byte, 64)
	for i := range data {
		data[i] = byte(i * 37)
	}
	ok := map[string]any{"__metadata__": map[string]string{"format": "pt"},
		"a": map[string]any{"dtype": "F32", "shape": []int{2, 3}, "data_offsets": []int64{0, 24}},
		"b": map[string]any{"dtype": "BF16", "shape": []int{4}, "data_offsets": []int64{24, 32}},
		"d": map[string]any{"dtype": "F64", "shape": []int{1, 1}, "data_offsets": []int64{32, 40}},
		"e": map[string]any{"dtype": "F32", "shape": []int{0, 5}, "data_offsets": []int64{40, 40}},
		"c": map[string]any{"dtype": "F16", "shape": []int{}, "data_offsets": []int64{40, 42}}}
	entry := func(name, dtype string, shape []int64, begin, end int64) map[string]any {
		return map[string]any{name: map[string]any{"dtype": dtype, "shape": shape, "data_offsets": []int64{begin, end}}}
	}
	full := fuzzSTFile(ok, data[:42], -1)
	return [][]byte{
		full,
		fuzzSTFile(ok, data, -1),
		fuzzSTFile(map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int64{0, 8}},
			"y": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int64{12, 20}}}, data[:20], -1),
		fuzzSTFile(entry("late", "U8", []int64{4}, 4, 8), data[:8], -1),
		fuzzSTFile(ok, data, math.MaxInt64),
		fuzzSTFile(ok, data, 99<<20),
		fuzzSTFile(ok, data[:8], 400),
		fuzzSTFile(entry("neg", "F32", []int64{1}, -4, 0), data, -1),
		fuzzSTFile(entry("inv", "U8", []int64{0}, 9, 8), data, -1),
		fuzzSTFile(map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{4}, "data_offsets": []int64{0, 16}},
			"y": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int64{8, 16}}}, data, -1),
		fuzzSTFile(entry("q", "Q4_K", []int64{2}, 0, 2), data, -1),
		fuzzSTFile(entry("negdim", "I8", []int64{-2, -3}, 0, 6), data, -1),
		fuzzSTFile(entry("short", "I64", []int64{3}, 0, 16), data, -1),
		fuzzSTFile(entry("wrap", "F32", []int64{1 << 32, 1 << 32}, 0, 0), data, -1),
		fuzzSTFile(entry("wrap4", "F32", []int64{1 << 62}, 0, 0), data, -1),
		fuzzSTFile(entry("empty", "F32", []int64{1 << 40, 0, 1 << 40}, 8, 8), data, -1),
		fuzzSTFile(entry("big", "U8", []int64{1 << 40}, 0, 1<<40), data, -1),
		full[:len(full)-20],
		full[:5],
		append(binary.LittleEndian.AppendUint64(nil, 6), `[1, 2]`...),
		append(binary.LittleEndian.AppendUint64(nil, 4), `{"":`...),
	}
}

// FuzzSafetensors opens arbitrary bytes as a safetensors file. Opening must never panic, must
// allocate no more than a small multiple of the file's size whatever the header claims, must
// name the file in every error, and the name of the tensor at fault in every error about one
// entry. A header it accepts must be sound: known dtypes, no negative dimension, each byte
// range inside the data section and exactly the size of its shape (counted without overflow),
// and the ranges, in order, covering the data section without gap, overlap or trailing
// bytes. Every accepted float tensor small enough to read must read back
// as exactly the bytes of its range (bit for bit for F32 and BF16). Run longer with
// `go test -run '^$' -fuzz '^FuzzSafetensors$' ./model/`.
func FuzzSafetensors(f *testing.F) {
	for _, seed := range fuzzSTSeeds() {
		f.Add(seed)
	}
	path := filepath.Join(f.TempDir(), "model.safetensors") // rewritten by each input; a fuzz worker runs one at a time
	f.Fuzz(func(t *testing.T, file []byte) {
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st, err := openSafetensors(path)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20+64*uint64(len(file)) {
			t.Fatalf("opening a %d-byte file allocated %d bytes", len(file), grew)
		}
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, path+": ") {
				t.Fatalf("error %q does not start with the path", msg)
			}
			if name, ok := entryAtFault(file, msg); ok && !strings.Contains(msg, fmt.Sprintf("%q", name)) {
				t.Fatalf("error %q does not name tensor %q", msg, name)
			}
			return
		}
		defer st.Close()
		dataLen := int64(len(file)) - st.dataStart
		type span struct {
			name       string
			begin, end int64
		}
		var spans []span
		for name, ti := range st.tensors {
			width, known := dtypeSize[ti.Dtype]
			if !known {
				t.Fatalf("tensor %q: accepted dtype %q", name, ti.Dtype)
			}
			begin, end := ti.DataOffsets[0], ti.DataOffsets[1]
			if begin < 0 || end < begin || end > dataLen {
				t.Fatalf("tensor %q: accepted offsets [%d, %d] in a %d-byte data section", name, begin, end, dataLen)
			}
			size, ok := shapeBytes(ti.Shape, width)
			if !ok || size != uint64(end-begin) {
				t.Fatalf("tensor %q: accepted %s shape %v (%d bytes, exact %v) for %d bytes", name, ti.Dtype, ti.Shape, size, ok, end-begin)
			}
			spans = append(spans, span{name, begin, end})
			if n := (end - begin) / width; n <= 1<<16 && (ti.Dtype == "F32" || ti.Dtype == "BF16" || ti.Dtype == "F16" || ti.Dtype == "F64") {
				dst := make([]float32, n) // (numel,)
				if err := st.readFloat32(name, ti.Shape, dst); err != nil {
					t.Fatalf("tensor %q: accepted but unreadable: %v", name, err)
				}
				raw := file[st.dataStart+begin : st.dataStart+end]
				for i, x := range dst {
					var want uint32
					switch ti.Dtype {
					case "F32":
						want = binary.LittleEndian.Uint32(raw[4*i:])
					case "BF16":
						want = uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16
					default:
						continue
					}
					if math.Float32bits(x) != want {
						t.Fatalf("tensor %q element %d: bits %#x, want %#x", name, i, math.Float32bits(x), want)
					}
				}
			}
		}
		// Independently of the reader's order: the bytes the ranges cover add up to the data
		// section, and no two non-empty ranges share a byte, so together they tile it.
		var covered int64
		for i, a := range spans {
			covered += a.end - a.begin
			for _, b := range spans[:i] {
				if a.begin < b.end && b.begin < a.end {
					t.Fatalf("tensors %q [%d, %d] and %q [%d, %d] overlap", a.name, a.begin, a.end, b.name, b.begin, b.end)
				}
			}
		}
		if covered != dataLen {
			t.Fatalf("accepted tensors covering %d bytes of a %d-byte data section", covered, dataLen)
		}
	})
}

// shapeBytes is the byte size of a tensor of the given shape and element width, and whether
// it fits in int64 (false for a negative dimension).
func shapeBytes(shape []int, width int64) (uint64, bool) {
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
	}
	for _, d := range shape {
		if d == 0 { // an empty tensor is 0 bytes whatever its other dimensions
			return 0, true
		}
	}
	n := uint64(width)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 {
			return lo, false
		}
		n = lo
	}
	return n, n <= math.MaxInt64
}

// entryAtFault returns the tensor whose header entry an error is about, when the header is a
// JSON object, the message is one of the per-entry errors (dtype, dimension, offsets, size,
// bad entry) and exactly one entry could be meant: the only tensor in the header.
func entryAtFault(file []byte, msg string) (string, bool) {
	perEntry := false
	for _, s := range []string{"unknown dtype", "negative dimension", "data offsets", "needs", "bad header entry"} {
		perEntry = perEntry || strings.Contains(msg, s)
	}
	if !perEntry || len(file) < 8 {
		return "", false
	}
	n := binary.LittleEndian.Uint64(file)
	if n > uint64(len(file)-8) {
		return "", false
	}
	var header map[string]json.RawMessage
	if json.Unmarshal(file[8:8+n], &header) != nil {
		return "", false
	}
	delete(header, "__metadata__")
	if len(header) != 1 {
		return "", false
	}
	for name := range header {
		return name, true
	}
	return "", false
}
