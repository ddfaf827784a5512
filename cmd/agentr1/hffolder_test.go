package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"agentr1/model"
)

// This file checks the model folders that training writes (final/, sft-base/) the way Hugging
// Face's from_pretrained, and so verl's actor, would read them, with a reader of its own that
// shares no code with package model: config.json's architecture and dtype, the safetensors
// header's tensor names, shapes and dtypes against what transformers' Qwen2ForCausalLM and
// Qwen3ForCausalLM define for that config, data offsets that tile the data section exactly,
// and the tokenizer files beside.

// hfTensor is one entry of a safetensors header, as the format defines it.
type hfTensor struct {
	Dtype       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// hfExpectedTensors lists the state dict transformers' Qwen2ForCausalLM (modeling_qwen2.py)
// or Qwen3ForCausalLM (modeling_qwen3.py) holds for config.json's fields, by name and shape; a
// tied lm_head is not in the file.
func hfExpectedTensors(cfg map[string]any) (map[string][]int, error) {
	num := func(k string) int { f, _ := cfg[k].(float64); return int(f) }
	V, C, I, L := num("vocab_size"), num("hidden_size"), num("intermediate_size"), num("num_hidden_layers")
	Hq, Hkv := num("num_attention_heads"), num("num_key_value_heads")
	D := num("head_dim")
	qwen3 := cfg["model_type"] == "qwen3"
	if D == 0 {
		if qwen3 {
			return nil, fmt.Errorf("config.json: a qwen3 config needs head_dim (Qwen3Config's default is 128)")
		}
		D = C / Hq
	}
	if V*C*I*L*Hq*Hkv == 0 {
		return nil, fmt.Errorf("config.json: a size is missing or zero: %v", cfg)
	}
	want := map[string][]int{"model.embed_tokens.weight": {V, C}, "model.norm.weight": {C}}
	if tied, _ := cfg["tie_word_embeddings"].(bool); !tied {
		want["lm_head.weight"] = []int{V, C}
	}
	for l := range L {
		p := fmt.Sprintf("model.layers.%d.", l)
		want[p+"input_layernorm.weight"] = []int{C}
		want[p+"post_attention_layernorm.weight"] = []int{C}
		want[p+"self_attn.q_proj.weight"] = []int{Hq * D, C}
		want[p+"self_attn.k_proj.weight"] = []int{Hkv * D, C}
		want[p+"self_attn.v_proj.weight"] = []int{Hkv * D, C}
		want[p+"self_attn.o_proj.weight"] = []int{C, Hq * D}
		want[p+"mlp.gate_proj.weight"] = []int{I, C}
		want[p+"mlp.up_proj.weight"] = []int{I, C}
		want[p+"mlp.down_proj.weight"] = []int{C, I}
		if qwen3 {
			want[p+"self_attn.q_norm.weight"] = []int{D}
			want[p+"self_attn.k_norm.weight"] = []int{D}
		} else {
			want[p+"self_attn.q_proj.bias"] = []int{Hq * D}
			want[p+"self_attn.k_proj.bias"] = []int{Hkv * D}
			want[p+"self_attn.v_proj.bias"] = []int{Hkv * D}
		}
	}
	return want, nil
}

// checkHFFolder returns every way dir falls short of a Hugging Face Qwen2/Qwen3 causal-LM
// folder whose weights are stored as wantDtype ("F32" or "BF16").
func checkHFFolder(dir, wantDtype string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	var cfg map[string]any
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err == nil {
		err = json.Unmarshal(raw, &cfg)
	}
	if err != nil {
		return []string{"config.json: " + err.Error()}
	}
	arch := map[any]string{"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[cfg["model_type"]]
	if arch == "" || fmt.Sprint(cfg["architectures"]) != "["+arch+"]" {
		bad("config.json: model_type %v, architectures %v; want qwen2 or qwen3 and its ForCausalLM", cfg["model_type"], cfg["architectures"])
	}
	torchDtype := map[string]string{"F32": "float32", "BF16": "bfloat16"}[wantDtype]
	if cfg["torch_dtype"] != torchDtype {
		bad("config.json: torch_dtype %v, want %s", cfg["torch_dtype"], torchDtype)
	}
	want, err := hfExpectedTensors(cfg)
	if err != nil {
		return append(errs, err.Error())
	}

	file, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil || len(file) < 8 {
		return append(errs, fmt.Sprintf("model.safetensors: %v (%d bytes)", err, len(file)))
	}
	n := binary.LittleEndian.Uint64(file[:8])
	if n%8 != 0 || n > uint64(len(file)-8) {
		return append(errs, fmt.Sprintf("model.safetensors: header length %d: want a multiple of 8 within the %d-byte file", n, len(file)))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(file[8:8+n], &header); err != nil {
		return append(errs, "model.safetensors header: "+err.Error())
	}
	if meta := string(header["__metadata__"]); !strings.Contains(meta, `"format":"pt"`) {
		bad(`model.safetensors: __metadata__ %s, want {"format":"pt"} (from_pretrained refuses others)`, meta)
	}
	delete(header, "__metadata__")
	type span struct {
		name       string
		begin, end int64
	}
	var spans []span
	width := map[string]int64{"F32": 4, "BF16": 2}[wantDtype]
	for name, v := range header {
		var t hfTensor
		if err := json.Unmarshal(v, &t); err != nil {
			bad("tensor %s: %v", name, err)
			continue
		}
		shape, ok := want[name]
		switch {
		case !ok:
			bad("tensor %s: not a parameter of %s for this config", name, arch)
		case !slices.Equal(t.Shape, shape):
			bad("tensor %s: shape %v, want %v", name, t.Shape, shape)
		}
		delete(want, name)
		if t.Dtype != wantDtype {
			bad("tensor %s: dtype %s, want %s", name, t.Dtype, wantDtype)
		}
		elems := int64(1)
		for _, d := range t.Shape {
			elems *= int64(d)
		}
		if len(t.DataOffsets) != 2 || t.DataOffsets[1]-t.DataOffsets[0] != elems*width {
			bad("tensor %s: data offsets %v, want %d bytes", name, t.DataOffsets, elems*width)
			continue
		}
		spans = append(spans, span{name, t.DataOffsets[0], t.DataOffsets[1]})
	}
	for name := range want {
		bad("tensor %s: missing", name)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	var at int64 // the tensors tile the data section: no gap, no overlap, nothing after
	for _, s := range spans {
		if s.begin != at {
			bad("tensor %s: data begins at %d, want %d", s.name, s.begin, at)
		}
		at = s.end
	}
	if data := int64(len(file)) - 8 - int64(n); at != data {
		bad("model.safetensors: tensors end at byte %d of a %d-byte data section", at, data)
	}

	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			bad("%s: %v", name, err)
		}
	}
	var tokCfg map[string]any
	raw, err = os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err == nil && json.Unmarshal(raw, &tokCfg) == nil {
		if tpl, _ := tokCfg["chat_template"].(string); !strings.Contains(tpl, "<|im_start|>") {
			bad("tokenizer_config.json: no ChatML chat_template (verl renders prompts with it)")
		}
	}
	return errs
}

// TestCheckpointFoldersAreHuggingFaceFolders runs a tiny training on the generated world and
// checks its sft-base/ and final/ (float32 by default, bfloat16 when asked), saves a Qwen3
// policy both ways and checks it, and checks that each folder loads back in agentr1.
func TestCheckpointFoldersAreHuggingFaceFolders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short trainings")
	}
	dir := t.TempDir()
	type folder struct{ path, dtype string }
	var folders []folder
	for _, dtype := range []string{"", "bf16"} {
		out := filepath.Join(dir, "run-"+dtype)
		args := append(tinyRunArgs(out), "--rl.steps", "1")
		want := "F32"
		if dtype != "" {
			args, want = append(args, "--save-dtype", dtype), "BF16"
		}
		var stdout bytes.Buffer
		if code := run(args, &stdout, &stdout); code != 0 {
			t.Fatalf("train %v: exit %d\n%s", args, code, stdout.String())
		}
		folders = append(folders, folder{filepath.Join(out, "sft-base"), want}, folder{filepath.Join(out, "final"), want})
	}
	qwen3 := model.Config{
		ModelType: "qwen3", VocabSize: 64, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 32, InitializerRange: 0.02, EOSTokenIDs: []int{1},
	}
	m, err := model.New(qwen3, 1)
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(folders[0].path) // any tokenizer files will do beside a bare policy
	for _, dt := range []model.DType{model.F32, model.BF16} {
		path := filepath.Join(dir, "qwen3-"+dt.String())
		if err := m.SaveAs(path, dt); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
			raw, _ := os.ReadFile(filepath.Join(tok, name))
			os.WriteFile(filepath.Join(path, name), raw, 0o644)
		}
		folders = append(folders, folder{path, string(dt)})
	}
	for _, f := range folders {
		for _, e := range checkHFFolder(f.path, f.dtype) {
			t.Errorf("%s: %s", f.path, e)
		}
		if _, err := model.Load(f.path); err != nil {
			t.Errorf("%s does not load back: %v", f.path, err)
		}
	}
}

// TestRealDataFinalKeepsThePretrainedDtype trains a BF16 pretrained folder by RL and checks
// that final/ is a Hugging Face folder stored as BF16, the pretrained folder's own type, with
// its generation_config.json copied, and float32 when --save-dtype f32 asks.
func TestRealDataFinalKeepsThePretrainedDtype(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short trainings")
	}
	dir := t.TempDir()
	questions, corpus, modelDir := realDataFixture(t, dir)
	m, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveAs(modelDir, model.BF16); err != nil {
		t.Fatal(err)
	}
	genCfg := []byte(`{"eos_token_id": [2], "do_sample": true}` + "\n")
	if err := os.WriteFile(filepath.Join(modelDir, "generation_config.json"), genCfg, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, want string }{{"", "BF16"}, {"f32", "F32"}} {
		out := filepath.Join(dir, "run-"+c.want)
		args := []string{"train", "--data", questions, "--model", modelDir, "--corpus", corpus, "--out", out,
			"--held-out", "1", "--search-top-k", "1", "--rl.steps", "1", "--rl.prompts", "2", "--rl.n", "2",
			"--rl.max-turns", "2", "--rl.max-turn-tokens", "8", "--rl.max-len", "600", "--eval-batch", "4"}
		if c.flag != "" {
			args = append(args, "--save-dtype", c.flag)
		}
		var stdout bytes.Buffer
		if code := run(args, &stdout, &stdout); code != 0 {
			t.Fatalf("train %v: exit %d\n%s", args, code, stdout.String())
		}
		final := filepath.Join(out, "final")
		for _, e := range checkHFFolder(final, c.want) {
			t.Errorf("--save-dtype %q: %s", c.flag, e)
		}
		if got, err := os.ReadFile(filepath.Join(final, "generation_config.json")); !bytes.Equal(got, genCfg) {
			t.Errorf("--save-dtype %q: final/generation_config.json %q (%v), want the pretrained folder's copy", c.flag, got, err)
		}
		if _, err := model.Load(final); err != nil {
			t.Errorf("--save-dtype %q: final/ does not load back: %v", c.flag, err)
		}
	}
}
