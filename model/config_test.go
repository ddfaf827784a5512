package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfigGolden(t *testing.T) {
	c, err := LoadConfig("../testdata/golden/qwen2_tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 10000,
		TieWordEmbeddings: true, MaxPositionEmbeddings: 128, InitializerRange: 0.02}
	if c.VocabSize != want.VocabSize || c.HiddenSize != want.HiddenSize || c.IntermediateSize != want.IntermediateSize ||
		c.NumHiddenLayers != want.NumHiddenLayers || c.NumAttentionHeads != want.NumAttentionHeads ||
		c.NumKeyValueHeads != want.NumKeyValueHeads || c.RMSNormEps != want.RMSNormEps || c.RopeTheta != want.RopeTheta ||
		c.TieWordEmbeddings != want.TieWordEmbeddings || c.MaxPositionEmbeddings != want.MaxPositionEmbeddings ||
		c.InitializerRange != want.InitializerRange || c.HeadSize() != 8 {
		t.Errorf("got %+v", c)
	}
	if c.BOSTokenID != nil || len(c.EOSTokenIDs) != 1 || c.EOSTokenIDs[0] != 1 {
		t.Errorf("bos %v eos %v, want nil and [1]", c.BOSTokenID, c.EOSTokenIDs)
	}
}

// TestLoadConfigQwen3 reads the qwen3_tiny checkpoint's config.json: model_type qwen3 with
// head_dim 16 beside hidden_size 32 and 4 heads.
func TestLoadConfigQwen3(t *testing.T) {
	c, err := LoadConfig("../testdata/golden/qwen3_tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType != "qwen3" || !c.QKNorm() || c.QKVBias() || c.HeadSize() != 16 || c.HiddenSize != 32 ||
		c.NumAttentionHeads != 4 || c.NumKeyValueHeads != 2 || c.RopeTheta != 1e6 {
		t.Errorf("got %+v", c)
	}
	if _, ok := c.Extra["attention_bias"]; ok {
		t.Error("attention_bias kept in Extra: Save writes it from the model type")
	}
	// Without head_dim, Qwen3Config's default of 128 applies, not hidden_size / heads.
	d, err := ParseConfig([]byte(`{"model_type": "qwen3", "vocab_size": 10, "hidden_size": 16,
	 "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}`))
	if err != nil || d.HeadSize() != 128 {
		t.Errorf("qwen3 without head_dim: head size %d, err %v; want 128", d.HeadSize(), err)
	}
}

func TestConfigRoundTrip(t *testing.T) {
	src := `{"vocab_size": 50, "hidden_size": 16, "intermediate_size": 40, "num_hidden_layers": 3,
	 "num_attention_heads": 4, "num_key_value_heads": 1, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0,
	 "tie_word_embeddings": false, "max_position_embeddings": 256, "eos_token_id": [3, 7],
	 "bos_token_id": 2, "transformers_version": "4.43.1", "use_cache": true, "sliding_window": 4096,
	 "use_sliding_window": false, "rope_scaling": null, "max_window_layers": 21}`
	c, err := ParseConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Extra["transformers_version"]) != `"4.43.1"` || string(c.Extra["max_window_layers"]) != "21" {
		t.Errorf("unknown keys not kept: %v", c.Extra)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	d, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(d)
	if string(a) != string(b) {
		t.Errorf("round trip changed the config:\n%s\n%s", a, b)
	}
	if len(d.EOSTokenIDs) != 2 || *d.BOSTokenID != 2 || d.RopeTheta != 1e6 || d.TieWordEmbeddings {
		t.Errorf("round trip: %+v", d)
	}
	var e Config
	if err := json.Unmarshal(a, &e); err != nil || e.NumKeyValueHeads != 1 {
		t.Errorf("json.Unmarshal: %v %+v", err, e)
	}
}

func TestConfigErrors(t *testing.T) {
	base := map[string]any{"vocab_size": 50, "hidden_size": 16, "intermediate_size": 40,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
	for _, tc := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"sliding window", map[string]any{"use_sliding_window": true}, "use_sliding_window"},
		{"rope scaling", map[string]any{"rope_scaling": map[string]any{"type": "yarn", "factor": 4}}, "rope_scaling"},
		{"activation", map[string]any{"hidden_act": "gelu"}, "hidden_act"},
		{"model type", map[string]any{"model_type": "llama"}, "model_type"},
		{"architecture", map[string]any{"architectures": []string{"LlamaForCausalLM"}}, "LlamaForCausalLM"},
		{"qwen3 architecture, qwen2 type", map[string]any{"architectures": []string{"Qwen3ForCausalLM"}}, "Qwen3ForCausalLM"},
		{"qwen2 architecture, qwen3 type", map[string]any{"model_type": "qwen3", "architectures": []string{"Qwen2ForCausalLM"}}, "Qwen2ForCausalLM"},
		{"qwen3 attention bias", map[string]any{"model_type": "qwen3", "attention_bias": true}, "attention_bias"},
		{"qwen2 without bias", map[string]any{"attention_bias": false}, "attention_bias"},
		{"dropout", map[string]any{"attention_dropout": 0.1}, "attention_dropout"},
		{"missing vocab", map[string]any{"vocab_size": nil}, "vocab_size"},
		{"heads", map[string]any{"num_key_value_heads": 3}, "num_key_value_heads"},
		{"hidden", map[string]any{"hidden_size": 18}, "hidden_size"},
		{"odd head", map[string]any{"hidden_size": 12}, "odd"},
		{"type", map[string]any{"hidden_size": "16"}, "hidden_size"},
		{"eos", map[string]any{"eos_token_id": "x"}, "eos_token_id"},
		{"eos range", map[string]any{"eos_token_id": 50}, "eos_token_id"},
		{"eps", map[string]any{"rms_norm_eps": 0}, "rms_norm_eps"},
		{"positions 1e9", map[string]any{"max_position_embeddings": 1e9}, "max_position_embeddings = 1000000000, over the largest this implementation takes (1048576)"},
		{"huge vocabulary", map[string]any{"vocab_size": 1 << 40}, "vocab_size = 1099511627776, over"},
		{"huge head_dim", map[string]any{"head_dim": 1 << 20}, "head_dim = 1048576, over"},
		{"too many parameters", map[string]any{"hidden_size": 1 << 15, "intermediate_size": 1 << 17, "num_hidden_layers": 1 << 10, "num_attention_heads": 256, "num_key_value_heads": 256}, "parameters"},
	} {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range tc.set {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		raw, _ := json.Marshal(m)
		_, err := ParseConfig(raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := ParseConfig([]byte("{")); err == nil {
		t.Error("truncated JSON: no error")
	}
	path := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(path, []byte(`{"vocab_size": 0}`), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadConfig error %v does not name the file", err)
	}
}
