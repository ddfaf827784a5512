package model

import (
	"strings"
	"testing"
)

// FuzzParseConfig feeds ParseConfig any bytes as a config.json (seeded with Qwen2, Qwen2.5 and
// Qwen3 configs and their edge values). It must not panic; an error must start "config: ";
// and a configuration it accepts must be one the model can be built from without a huge
// allocation: every size within sizeLimits, the parameter count within MaxParams, a head size
// that is even and, for a small one, New must succeed.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"vocab_size": 50, "hidden_size": 16, "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}`,
		`{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": true, "eos_token_id": 151645, "bos_token_id": 151643}`,
		`{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "attention_bias": false}`,
		`{"vocab_size": 50, "hidden_size": 16, "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1e9}`,
		`{"vocab_size": -1, "hidden_size": 9223372036854775807, "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}`,
		`{"vocab_size": 50, "hidden_size": 16, "num_attention_heads": 0, "num_key_value_heads": 0, "head_dim": 0}`,
		`[]`, `null`, `{"rope_theta": "NaN"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseConfig(raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error %q does not start with \"config: \"", err)
			}
			return
		}
		sizes := map[string]int{
			"vocab_size": c.VocabSize, "hidden_size": c.HiddenSize, "intermediate_size": c.IntermediateSize,
			"num_hidden_layers": c.NumHiddenLayers, "num_attention_heads": c.NumAttentionHeads,
			"num_key_value_heads": c.NumKeyValueHeads, "head_dim": c.HeadSize(),
			"max_position_embeddings": c.MaxPositionEmbeddings,
		}
		for key, v := range sizes {
			if v <= 0 || v > sizeLimits[key] {
				t.Fatalf("accepted %s = %d, outside (0, %d]", key, v, sizeLimits[key])
			}
		}
		n := c.paramCount()
		if n <= 0 || n > MaxParams || c.HeadSize()%2 != 0 {
			t.Fatalf("accepted %d parameters with head size %d", n, c.HeadSize())
		}
		if n <= 1<<16 && c.MaxPositionEmbeddings*c.HeadSize() <= 1<<20 {
			m, err := New(c, 1)
			if err != nil {
				t.Fatalf("New on an accepted config: %v", err)
			}
			if got := int64(m.NumParams()); got != n {
				t.Fatalf("the model has %d parameters, the config counted %d", got, n)
			}
		}
	})
}
