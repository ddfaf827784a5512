package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// rawSafetensors assembles a safetensors file from a header and a data section.
func rawSafetensors(t *testing.T, header map[string]any, data []byte) []byte {
	t.Helper()
	hj, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	out = append(out, hj...)
	return append(out, data...)
}

func f32bytes(xs ...float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		m := newTestModel(t, cfg, 41)
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := m.Save(dir); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		n := binary.LittleEndian.Uint64(raw)
		if n%8 != 0 {
			t.Errorf("tied=%v: header length %d is not a multiple of 8", tied, n)
		}
		var header map[string]json.RawMessage
		if err := json.Unmarshal(raw[8:8+n], &header); err != nil {
			t.Fatal(err)
		}
		if string(header["__metadata__"]) != `{"format":"pt"}` {
			t.Errorf("tied=%v: __metadata__ = %s", tied, header["__metadata__"])
		}
		if _, has := header["lm_head.weight"]; has == tied {
			t.Errorf("tied=%v: lm_head.weight present = %v", tied, has)
		}
		l, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		sameWeights(t, fmt.Sprintf("tied=%v", tied), l, m)
	}
}

// TestSafetensorsDtypes checks BF16, F16 (normal, subnormal, inf) and F64 loading.
func TestSafetensorsDtypes(t *testing.T) {
	var data []byte
	for _, v := range []float32{1.5, -2.25, 3.0e-3} { // BF16: the upper 16 bits
		data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(v)>>16))
	}
	for _, h := range []uint16{0x3c00, 0xc000, 0x0001, 0x7c00, 0x3555} { // 1, -2, 2^-24, +inf, 0.33325
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	data = binary.LittleEndian.AppendUint64(data, math.Float64bits(0.1))
	header := map[string]any{
		"b": map[string]any{"dtype": "BF16", "shape": []int{3}, "data_offsets": []int{0, 6}},
		"h": map[string]any{"dtype": "F16", "shape": []int{5}, "data_offsets": []int{6, 16}},
		"d": map[string]any{"dtype": "F64", "shape": []int{1}, "data_offsets": []int{16, 24}},
		"i": map[string]any{"dtype": "I64", "shape": []int{}, "data_offsets": []int{24, 32}},
	}
	data = binary.LittleEndian.AppendUint64(data, 7)
	path := filepath.Join(t.TempDir(), "x.safetensors")
	os.WriteFile(path, rawSafetensors(t, header, data), 0o644)
	st, err := openSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		name  string
		shape []int
		want  []float32
	}{
		{"b", []int{3}, []float32{1.5, -2.25, math.Float32frombits(math.Float32bits(3.0e-3) &^ 0xffff)}},
		{"h", []int{5}, []float32{1, -2, 1.0 / (1 << 24), float32(math.Inf(1)), 0.33325195}},
		{"d", []int{1}, []float32{0.1}},
	} {
		got := make([]float32, len(tc.want))
		if err := st.readFloat32(tc.name, tc.shape, got); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s[%d] = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	if err := st.readFloat32("i", []int{}, make([]float32, 1)); err == nil || !strings.Contains(err.Error(), `"i"`) {
		t.Errorf("I64 as float32: error %v, want one naming the tensor", err)
	}
	if err := st.readFloat32("b", []int{1, 3}, make([]float32, 3)); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("wrong shape: error %v", err)
	}
}

// TestSafetensorsCorrupt checks that every kind of damaged file is an error naming the file
// and, where one is at fault, the tensor.
func TestSafetensorsCorrupt(t *testing.T) {
	ok := map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{0, 8}}
	data := f32bytes(1, 2, 3, 4)
	good := rawSafetensors(t, map[string]any{"a": ok}, data[:8])
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"short length", []byte{1, 2, 3}, "truncated"},
		{"header longer than file", binary.LittleEndian.AppendUint64(nil, 1000), "longer than"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<40), "exceeds"},
		{"not json", append(binary.LittleEndian.AppendUint64(nil, 3), "abc"...), "JSON"},
		{"truncated data", good[:len(good)-2], `"a"`},
		{"out of range", rawSafetensors(t, map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{8, 16}}}, data[:8]), `"a"`},
		{"negative offset", rawSafetensors(t, map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{-4, 4}}}, data[:8]), `"a"`},
		{"size mismatch", rawSafetensors(t, map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{3}, "data_offsets": []int{0, 8}}}, data[:8]), `"a"`},
		{"overlap", rawSafetensors(t, map[string]any{"a": ok, "b": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{4, 12}}}, data[:12]), "overlap"},
		{"unknown dtype", rawSafetensors(t, map[string]any{"a": map[string]any{"dtype": "Q4", "shape": []int{2}, "data_offsets": []int{0, 8}}}, data[:8]), `"a"`},
		{"bad entry", rawSafetensors(t, map[string]any{"a": "x"}, data[:8]), `"a"`},
		{"bad metadata", rawSafetensors(t, map[string]any{"a": ok, "__metadata__": 3}, data[:8]), "__metadata__"},
	} {
		path := filepath.Join(t.TempDir(), "bad.safetensors")
		os.WriteFile(path, tc.raw, 0o644)
		st, err := openSafetensors(path)
		if err == nil {
			st.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s and mentioning %s", tc.name, err, path, tc.want)
		}
	}
}

// TestSafetensorsTiling checks that the tensors' byte ranges must cover the data section
// exactly, as the safetensors format requires: a gap before a tensor, an overlap or bytes
// after the last tensor is an error naming the file and the tensor or the bytes at fault,
// while contiguous ranges, empty tensors among them, open. Our own writer's files, in both
// dtypes and with a scalar and an empty tensor, must open too.
func TestSafetensorsTiling(t *testing.T) {
	data := make([]byte, 24)
	f32 := func(n, begin int) map[string]any {
		return map[string]any{"dtype": "F32", "shape": []int{n}, "data_offsets": []int{begin, begin + 4*n}}
	}
	meta := map[string]string{"format": "pt"}
	for _, tc := range []struct {
		name   string
		header map[string]any
		data   []byte
		want   []string // parts of the error; none: the file opens
	}{
		{"contiguous", map[string]any{"a": f32(2, 0), "e": f32(0, 8), "b": f32(1, 8), "z": f32(0, 12)}, data[:12], nil},
		{"no tensors", map[string]any{"__metadata__": meta}, nil, nil},
		{"gap between", map[string]any{"a": f32(2, 0), "b": f32(2, 12)}, data[:20], []string{`tensor "b"`, "[8, 12)", "unused"}},
		{"gap at the start", map[string]any{"b": f32(1, 4)}, data[:8], []string{`tensor "b"`, "[0, 4)", "unused"}},
		{"trailing bytes", map[string]any{"a": f32(2, 0)}, data[:12], []string{"4 trailing bytes [8, 12)", `"a"`}},
		{"bytes and no tensors", map[string]any{"__metadata__": meta}, data[:4], []string{"4 trailing bytes [0, 4)", "names no tensor"}},
		{"empty tensor inside another", map[string]any{"a": f32(2, 0), "e": f32(0, 4)}, data[:8], []string{`"a" [0, 8]`, `"e" [4, 4]`, "overlap"}},
	} {
		path := filepath.Join(t.TempDir(), "x.safetensors")
		if err := os.WriteFile(path, rawSafetensors(t, tc.header, tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := openSafetensors(path)
		if err == nil {
			st.Close()
		}
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want the file to open", tc.name, err)
			}
			continue
		}
		for _, want := range append([]string{path + ": "}, tc.want...) {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, want)
			}
		}
	}

	entries := []stEntry{
		{name: "w", shape: []int{2, 3}, data: []float32{1, 2, 3, 4, 5, 6}},
		{name: "scalar", data: []float32{7}},
		{name: "empty", shape: []int{0, 4}, data: []float32{}},
		{name: "v", shape: []int{3}, data: []float32{8, 9, 10}},
	}
	for _, dtype := range []DType{F32, BF16} {
		path := filepath.Join(t.TempDir(), "w.safetensors")
		if err := writeSafetensors(path, entries, dtype); err != nil {
			t.Fatal(err)
		}
		st, err := openSafetensors(path)
		if err != nil {
			t.Errorf("%s: our own file does not open: %v", dtype, err)
			continue
		}
		st.Close()
	}

	// The fuzz test's first seed is its one valid file, the one that reaches the checks of
	// an accepted header.
	path := filepath.Join(t.TempDir(), "seed.safetensors")
	if err := os.WriteFile(path, fuzzSTSeeds()[0], 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := openSafetensors(path)
	if err != nil {
		t.Fatalf("the fuzz test's valid seed: %v", err)
	}
	st.Close()
}

// TestLoadCheckpointErrors damages a saved checkpoint: missing, misshapen or unexpected
// tensors are errors naming the tensor; a sharded checkpoint loads like the single file.
func TestLoadCheckpointErrors(t *testing.T) {
	cfg := tinyConfig(false)
	m := newTestModel(t, cfg, 42)
	entries := func(skip string, reshape string, extra bool) []stEntry {
		var es []stEntry
		for _, p := range m.Params {
			if p.Name == skip {
				continue
			}
			shape := p.Shape
			if p.Name == reshape {
				shape = []int{len(p.Data)}
			}
			es = append(es, stEntry{p.Name, shape, p.Data})
		}
		if extra {
			es = append(es, stEntry{"model.layers.9.mlp.up_proj.weight", []int{1}, []float32{1}})
		}
		return es
	}
	for _, tc := range []struct {
		name    string
		entries []stEntry
		want    string
	}{
		{"missing", entries("model.layers.1.self_attn.k_proj.bias", "", false), "model.layers.1.self_attn.k_proj.bias"},
		{"missing lm_head", entries("lm_head.weight", "", false), "lm_head.weight"},
		{"shape", entries("", "model.layers.0.mlp.down_proj.weight", false), "model.layers.0.mlp.down_proj.weight"},
		{"unexpected", entries("", "", true), "model.layers.9.mlp.up_proj.weight"},
	} {
		path := filepath.Join(t.TempDir(), "model.safetensors")
		if err := writeSafetensors(path, tc.entries, F32); err != nil {
			t.Fatal(err)
		}
		_, err := LoadWeights(cfg, path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v does not name the file %s", tc.name, err, path)
		}
	}

	// Sharded: two files and an index.
	dir := t.TempDir()
	if err := cfg.Save(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	all := entries("", "", false)
	half := len(all) / 2
	weightMap := map[string]string{}
	for i, part := range [][]stEntry{all[:half], all[half:]} {
		name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[i]
		if err := writeSafetensors(filepath.Join(dir, name), part, F32); err != nil {
			t.Fatal(err)
		}
		for _, e := range part {
			weightMap[e.name] = name
		}
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 4 * m.NumParams()}, "weight_map": weightMap})
	os.WriteFile(filepath.Join(dir, IndexFile), index, 0o644)
	l, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameWeights(t, "sharded", l, m)
	// An index naming the wrong shard for a tensor.
	weightMap[all[0].name] = "model-00002-of-00002.safetensors"
	index, _ = json.Marshal(map[string]any{"weight_map": weightMap})
	os.WriteFile(filepath.Join(dir, IndexFile), index, 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), all[0].name) {
		t.Errorf("wrong shard: error %v, want one naming %s", err, all[0].name)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("empty folder: no error")
	}
}

// TestLoadRefusesNonFiniteWeights saves a checkpoint one of whose weights is infinite, in F32
// and in BF16, and checks that loading it for training and for inference is an error naming
// the file and the tensor, not a model whose every answer is empty.
func TestLoadRefusesNonFiniteWeights(t *testing.T) {
	cfg := tinyConfig(true)
	m := newTestModel(t, cfg, 5)
	const bad = "model.layers.1.mlp.up_proj.weight"
	var entries []stEntry
	for _, p := range m.Params {
		data := p.Data
		if p.Name == bad {
			data = slices.Clone(p.Data)
			data[7] = float32(math.Inf(1))
		}
		entries = append(entries, stEntry{p.Name, p.Shape, data})
	}
	for _, dtype := range []DType{F32, BF16} {
		dir := t.TempDir()
		if err := cfg.Save(filepath.Join(dir, "config.json")); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, WeightsFile)
		if err := writeSafetensors(path, entries, dtype); err != nil {
			t.Fatal(err)
		}
		for name, load := range map[string]func(string) (*Model, error){"Load": Load, "LoadForInference": LoadForInference} {
			_, err := load(dir)
			if want := path + `: tensor "` + bad + `": value 7 is +Inf`; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s %s: error %v, want one containing %s", dtype, name, err, want)
			}
		}
	}
}

// TestLoadChecksShapesBeforeAllocating gives a tiny model's weights a config.json of a model
// of about 100 M parameters, as when a folder's config.json is another model's, and checks
// that Load names the first tensor of the wrong shape without allocating the model the
// config describes (400 MB here, gigabytes or an out-of-memory crash at real sizes).
func TestLoadChecksShapesBeforeAllocating(t *testing.T) {
	dir := t.TempDir()
	if err := newTestModel(t, tinyConfig(true), 3).Save(dir); err != nil {
		t.Fatal(err)
	}
	big := tinyConfig(true)
	big.VocabSize, big.HiddenSize, big.IntermediateSize = 32000, 1024, 4096
	big.NumAttentionHeads, big.NumKeyValueHeads, big.NumHiddenLayers = 8, 8, 4
	if err := big.Save(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	for _, load := range []struct {
		name string
		fn   func(string) (*Model, error)
	}{{"Load", Load}, {"LoadForInference", LoadForInference}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := load.fn(dir)
		runtime.ReadMemStats(&after)
		want := `"model.embed_tokens.weight" has shape [23 16], want [32000 1024]`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %s", load.name, err, want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Errorf("%s: allocated %d bytes before refusing the weights, want under 16 MiB", load.name, n)
		}
	}
}

// TestSafetensorsSizeOverflow checks that a shape whose byte size overflows is rejected
// rather than wrapping around to the size of its (empty) byte range.
func TestSafetensorsSizeOverflow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.safetensors")
	header := map[string]any{"w": map[string]any{"dtype": "U8", "shape": []int64{1 << 32, 1 << 32}, "data_offsets": []int{0, 0}}}
	os.WriteFile(path, rawSafetensors(t, header, nil), 0o644)
	if st, err := openSafetensors(path); err == nil || !strings.Contains(err.Error(), `"w"`) {
		if st != nil {
			st.Close()
		}
		t.Errorf("overflowing shape: error %v, want one naming the tensor", err)
	}
}

// TestSaveLoadQwen3 checks that a Qwen3 model saves as a folder Hugging Face reads as Qwen3
// (config.json with architectures [Qwen3ForCausalLM], model_type qwen3, its head_dim and no
// attention bias; q_norm and k_norm tensors and no q/k/v biases) and loads back bit for bit,
// and that its critic's folder names Qwen3ForTokenClassification.
func TestSaveLoadQwen3(t *testing.T) {
	m := newTestModel(t, tinyQwen3Config(false), 43)
	dir := filepath.Join(t.TempDir(), "qwen3")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"model_type": "qwen3", "head_dim": 6.0, "attention_bias": false} {
		if cfg[key] != want {
			t.Errorf("config.json %s = %v, want %v", key, cfg[key], want)
		}
	}
	if archs, _ := cfg["architectures"].([]any); len(archs) != 1 || archs[0] != "Qwen3ForCausalLM" {
		t.Errorf("config.json architectures = %v, want [Qwen3ForCausalLM]", cfg["architectures"])
	}
	l, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.ModelType != "qwen3" || l.Config.HeadSize() != 6 {
		t.Errorf("loaded config %+v, want qwen3 with head size 6", l.Config)
	}
	names := map[string]bool{}
	for _, p := range l.Params {
		names[p.Name] = true
	}
	for name, want := range map[string]bool{"model.layers.1.self_attn.q_norm.weight": true,
		"model.layers.1.self_attn.k_norm.weight": true, "model.layers.1.self_attn.q_proj.bias": false} {
		if names[name] != want {
			t.Errorf("loaded parameter %s present = %v, want %v", name, names[name], want)
		}
	}
	sameWeights(t, "qwen3", l, m)
	cdir := filepath.Join(t.TempDir(), "critic")
	if err := NewCritic(m, 1).Save(cdir); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join(cdir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"Qwen3ForTokenClassification"`) {
		t.Errorf("critic config.json does not name Qwen3ForTokenClassification:\n%s", raw)
	}
	if _, err := LoadCritic(cdir); err != nil {
		t.Error(err)
	}
}
