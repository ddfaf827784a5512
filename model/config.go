package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Config holds the fields of a Hugging Face Qwen2 or Qwen3 config.json (transformers'
// Qwen2Config, Qwen3Config) that define the architecture. Keys it does not model are kept in
// Extra and written back by Save; settings agentr1 does not implement (a sliding window, rope
// scaling, an activation other than SiLU, attention dropout, Qwen3's attention biases) are
// rejected rather than silently ignored.
type Config struct {
	// ModelType is model_type: "qwen2" (also meant by "") or "qwen3". The two architectures
	// differ only in their attention: Qwen2 has biases on the q, k and v projections, Qwen3
	// has none and normalises each query and key head vector with an RMSNorm (q_norm, k_norm)
	// before the rotary embedding (see QKNorm).
	ModelType string

	VocabSize             int     // vocab_size: rows of the embedding and of lm_head
	HiddenSize            int     // hidden_size: C, the residual stream width
	IntermediateSize      int     // intermediate_size: width of the SwiGLU MLP
	NumHiddenLayers       int     // num_hidden_layers
	NumAttentionHeads     int     // num_attention_heads: Hq
	NumKeyValueHeads      int     // num_key_value_heads: Hkv (grouped-query attention, Hq % Hkv == 0)
	HeadDim               int     // head_dim; 0 means HiddenSize / NumAttentionHeads, as HF Qwen2 (Qwen3's default is 128)
	RMSNormEps            float64 // rms_norm_eps
	RopeTheta             float64 // rope_theta: base of the rotary frequencies
	TieWordEmbeddings     bool    // tie_word_embeddings: lm_head shares model.embed_tokens.weight
	MaxPositionEmbeddings int     // max_position_embeddings: size of the RoPE table
	InitializerRange      float64 // initializer_range: std of the normal initialisation
	BOSTokenID            *int    // bos_token_id (null in many Qwen configs)
	EOSTokenIDs           []int   // eos_token_id: one id or a list in config.json

	// Extra holds every other key of config.json verbatim (transformers_version, use_cache,
	// max_window_layers, ...), so that Save writes back what LoadConfig read.
	Extra map[string]json.RawMessage
}

// knownKeys are the keys of config.json that Config parses itself (fields above, plus the
// architecture-defining keys whose values Validate checks).
var knownKeys = map[string]bool{
	"vocab_size": true, "hidden_size": true, "intermediate_size": true, "num_hidden_layers": true,
	"num_attention_heads": true, "num_key_value_heads": true, "head_dim": true, "rms_norm_eps": true,
	"rope_theta": true, "tie_word_embeddings": true, "max_position_embeddings": true,
	"initializer_range": true, "bos_token_id": true, "eos_token_id": true,
	"architectures": true, "model_type": true, "hidden_act": true, "use_sliding_window": true,
	"rope_scaling": true, "attention_dropout": true, "torch_dtype": true, "attention_bias": true,
}

// sizeLimits bound every size config.json gives, each far above any released Qwen2, Qwen2.5 or
// Qwen3 checkpoint (Qwen2.5-72B: hidden 8,192, 80 layers, 29,568 intermediate, vocabulary
// 152,064, 131,072 positions), so that a corrupt or hostile file is refused with a message
// before anything is allocated from it: the RoPE table alone is max_position_embeddings x
// head_dim floats.
var sizeLimits = map[string]int{
	"vocab_size": 1 << 21, "hidden_size": 1 << 15, "intermediate_size": 1 << 17,
	"num_hidden_layers": 1 << 10, "num_attention_heads": 1 << 10, "num_key_value_heads": 1 << 10,
	"head_dim": 1 << 10, "max_position_embeddings": 1 << 20,
}

// MaxParams is the most parameters a configuration may describe: 2^36, about 69 billion (275 GB
// as float32), above which no CPU this runs on holds the model.
const MaxParams = 1 << 36

// paramCount is the number of parameters the configuration describes, counted in int64 (every
// size is within sizeLimits first, so no product overflows).
func (c Config) paramCount() int64 {
	C, V, I, H := int64(c.HiddenSize), int64(c.VocabSize), int64(c.IntermediateSize), int64(c.HeadSize())
	Q, K := int64(c.NumAttentionHeads)*H, int64(c.NumKeyValueHeads)*H
	layer := Q*C + 2*K*C + C*Q + 3*I*C + 2*C // attention, MLP and the two norms
	if c.QKVBias() {
		layer += Q + 2*K
	} else {
		layer += 2 * H // q_norm, k_norm
	}
	n := V*C + int64(c.NumHiddenLayers)*layer + C
	if !c.TieWordEmbeddings {
		n += V * C
	}
	return n
}

// ParseConfig decodes the contents of a config.json and validates it.
func ParseConfig(raw []byte) (Config, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c := Config{Extra: map[string]json.RawMessage{}}
	for k, v := range keys {
		if !knownKeys[k] {
			c.Extra[k] = v
		}
	}
	var err error
	if c.ModelType, err = checkUnsupported(keys); err != nil {
		return Config{}, err
	}
	// Defaults are transformers' Qwen2Config (or Qwen3Config) defaults where a key is absent.
	if c.QKNorm() {
		c.HeadDim = 128
	}
	c.RMSNormEps = 1e-6
	c.RopeTheta = 10000
	c.MaxPositionEmbeddings = 32768
	c.InitializerRange = 0.02
	fields := []struct {
		key string
		dst any
	}{
		{"vocab_size", &c.VocabSize}, {"hidden_size", &c.HiddenSize},
		{"intermediate_size", &c.IntermediateSize}, {"num_hidden_layers", &c.NumHiddenLayers},
		{"num_attention_heads", &c.NumAttentionHeads}, {"num_key_value_heads", &c.NumKeyValueHeads},
		{"head_dim", &c.HeadDim}, {"rms_norm_eps", &c.RMSNormEps}, {"rope_theta", &c.RopeTheta},
		{"tie_word_embeddings", &c.TieWordEmbeddings},
		{"max_position_embeddings", &c.MaxPositionEmbeddings},
		{"initializer_range", &c.InitializerRange}, {"bos_token_id", &c.BOSTokenID},
	}
	for _, f := range fields {
		v, ok := keys[f.key]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return Config{}, fmt.Errorf("config: key %q: %w", f.key, err)
		}
	}
	if v, ok := keys["eos_token_id"]; ok && string(v) != "null" {
		var one int
		if err := json.Unmarshal(v, &one); err == nil {
			c.EOSTokenIDs = []int{one}
		} else if err := json.Unmarshal(v, &c.EOSTokenIDs); err != nil {
			return Config{}, fmt.Errorf("config: key \"eos_token_id\": want an integer or a list of integers: %s", v)
		}
	}
	if _, ok := keys["num_key_value_heads"]; !ok {
		c.NumKeyValueHeads = c.NumAttentionHeads // Qwen2Config: defaults to num_attention_heads
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// checkUnsupported rejects settings of config.json that change the architecture in ways this
// package does not implement, and returns its model_type ("" when absent, which means qwen2).
func checkUnsupported(keys map[string]json.RawMessage) (modelType string, err error) {
	str := func(key string) (string, bool, error) {
		v, ok := keys[key]
		if !ok || string(v) == "null" {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", true, fmt.Errorf("config: key %q: want a string: %s", key, v)
		}
		return s, true, nil
	}
	stated, ok, err := str("model_type")
	if err != nil {
		return "", err
	}
	modelType = stated
	if !ok {
		modelType = "qwen2"
	}
	if modelType != "qwen2" && modelType != "qwen3" {
		return "", fmt.Errorf("config: model_type %q is not supported (want \"qwen2\" or \"qwen3\")", modelType)
	}
	if s, ok, err := str("hidden_act"); err != nil {
		return "", err
	} else if ok && s != "silu" {
		return "", fmt.Errorf("config: hidden_act %q is not supported (want \"silu\")", s)
	}
	if v, ok := keys["architectures"]; ok && string(v) != "null" {
		var archs []string
		if err := json.Unmarshal(v, &archs); err != nil {
			return "", fmt.Errorf("config: key \"architectures\": want a list of strings: %s", v)
		}
		prefix := archPrefix(modelType)
		for _, a := range archs {
			if a != prefix+"ForCausalLM" && a != prefix+"ForTokenClassification" {
				return "", fmt.Errorf("config: architecture %q is not supported with model_type %q (want %sForCausalLM)", a, modelType, prefix)
			}
		}
	}
	if v, ok := keys["attention_bias"]; ok && string(v) != "null" {
		var on bool
		if err := json.Unmarshal(v, &on); err != nil {
			return "", fmt.Errorf("config: key \"attention_bias\": want a boolean: %s", v)
		}
		// Qwen2's q, k and v projections always have biases (and its config has no such key);
		// Qwen3's have none unless attention_bias, which also adds one to o_proj.
		if modelType == "qwen3" && on {
			return "", fmt.Errorf("config: attention_bias=true is not supported for qwen3 (Qwen3 checkpoints have no attention biases)")
		}
		if modelType == "qwen2" && !on {
			return "", fmt.Errorf("config: attention_bias=false is not supported for qwen2 (Qwen2's q, k and v projections have biases)")
		}
	}
	if v, ok := keys["use_sliding_window"]; ok && string(v) != "null" {
		var on bool
		if err := json.Unmarshal(v, &on); err != nil {
			return "", fmt.Errorf("config: key \"use_sliding_window\": want a boolean: %s", v)
		}
		if on {
			return "", fmt.Errorf("config: use_sliding_window=true is not supported (this decoder has full causal attention only)")
		}
	}
	if v, ok := keys["rope_scaling"]; ok && string(v) != "null" {
		return "", fmt.Errorf("config: rope_scaling=%s is not supported (only plain RoPE is implemented)", v)
	}
	if v, ok := keys["attention_dropout"]; ok && string(v) != "null" {
		var p float64
		if err := json.Unmarshal(v, &p); err != nil {
			return "", fmt.Errorf("config: key \"attention_dropout\": want a number: %s", v)
		}
		if p != 0 {
			return "", fmt.Errorf("config: attention_dropout=%v is not supported (training here uses no dropout)", p)
		}
	}
	return stated, nil
}

// LoadConfig reads and validates a Hugging Face config.json.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := ParseConfig(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// archPrefix returns the prefix of a model type's architecture names: Qwen2 or Qwen3.
func archPrefix(modelType string) string {
	if modelType == "qwen3" {
		return "Qwen3"
	}
	return "Qwen2"
}

// QKNorm reports whether the attention normalises each query and key head vector with an
// RMSNorm over head_dim before the rotary embedding (Qwen3: q_norm, k_norm); the q, k and v
// projections then have no biases.
func (c Config) QKNorm() bool { return c.ModelType == "qwen3" }

// QKVBias reports whether the q, k and v projections have biases (Qwen2).
func (c Config) QKVBias() bool { return !c.QKNorm() }

// HeadSize returns D, the width of one attention head: HeadDim, or HiddenSize /
// NumAttentionHeads when HeadDim is 0.
func (c Config) HeadSize() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads == 0 {
		return 0
	}
	return c.HiddenSize / c.NumAttentionHeads
}

// Validate reports the first inconsistency in the configuration.
func (c Config) Validate() error {
	if c.ModelType != "" && c.ModelType != "qwen2" && c.ModelType != "qwen3" {
		return fmt.Errorf("config: model_type %q is not supported (want \"qwen2\" or \"qwen3\")", c.ModelType)
	}
	positive := []struct {
		key string
		v   int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize},
		{"intermediate_size", c.IntermediateSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"num_key_value_heads", c.NumKeyValueHeads},
		{"max_position_embeddings", c.MaxPositionEmbeddings},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("config: %s = %d, want > 0", p.key, p.v)
		}
	}
	for _, p := range append(positive, struct {
		key string
		v   int
	}{"head_dim", c.HeadDim}) {
		if limit := sizeLimits[p.key]; p.v > limit {
			return fmt.Errorf("config: %s = %d, over the largest this implementation takes (%d)", p.key, p.v, limit)
		}
	}
	if c.HeadDim < 0 {
		return fmt.Errorf("config: head_dim = %d, want > 0", c.HeadDim)
	}
	if c.HeadDim == 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("config: hidden_size %d is not divisible by num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return fmt.Errorf("config: num_attention_heads %d is not divisible by num_key_value_heads %d", c.NumAttentionHeads, c.NumKeyValueHeads)
	}
	if n := c.paramCount(); n > MaxParams {
		return fmt.Errorf("config: %d parameters (%.1f GB as float32), over the largest this implementation takes (%d)", n, float64(n)*4/1e9, int64(MaxParams))
	}
	if c.HeadSize()%2 != 0 {
		return fmt.Errorf("config: head size %d is odd; rotary embeddings need an even head size", c.HeadSize())
	}
	if !(c.RMSNormEps > 0) {
		return fmt.Errorf("config: rms_norm_eps = %v, want > 0", c.RMSNormEps)
	}
	if !(c.RopeTheta > 0) {
		return fmt.Errorf("config: rope_theta = %v, want > 0", c.RopeTheta)
	}
	if !(c.InitializerRange >= 0) {
		return fmt.Errorf("config: initializer_range = %v, want >= 0", c.InitializerRange)
	}
	for _, id := range c.EOSTokenIDs {
		if id < 0 || id >= c.VocabSize {
			return fmt.Errorf("config: eos_token_id %d outside the vocabulary [0, %d)", id, c.VocabSize)
		}
	}
	if c.BOSTokenID != nil && (*c.BOSTokenID < 0 || *c.BOSTokenID >= c.VocabSize) {
		return fmt.Errorf("config: bos_token_id %d outside the vocabulary [0, %d)", *c.BOSTokenID, c.VocabSize)
	}
	return nil
}

// MarshalJSON writes the configuration as a Hugging Face config.json for Qwen2ForCausalLM (or
// Qwen3ForCausalLM) of float32 weights, including the keys held in Extra.
func (c Config) MarshalJSON() ([]byte, error) { return c.marshal("ForCausalLM", F32, nil) }

// marshal writes config.json for the architecture of the model type with the given suffix
// (ForCausalLM, ForTokenClassification) and weights stored as dtype, with extra keys added.
func (c Config) marshal(archSuffix string, dtype DType, extra map[string]any) ([]byte, error) {
	out := map[string]any{}
	for k, v := range c.Extra {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	modelType := "qwen2"
	if c.QKNorm() {
		modelType = "qwen3"
		out["attention_bias"] = false
	}
	out["architectures"] = []string{archPrefix(modelType) + archSuffix}
	out["model_type"] = modelType
	out["hidden_act"] = "silu"
	// torch_dtype names the weights' storage type; transformers 4.56 and later write it as
	// "dtype", which Extra then holds and which must say the same.
	out["torch_dtype"] = dtype.torchName()
	if _, ok := out["dtype"]; ok {
		out["dtype"] = dtype.torchName()
	}
	out["use_sliding_window"] = false
	out["rope_scaling"] = nil
	out["attention_dropout"] = 0.0
	out["vocab_size"] = c.VocabSize
	out["hidden_size"] = c.HiddenSize
	out["intermediate_size"] = c.IntermediateSize
	out["num_hidden_layers"] = c.NumHiddenLayers
	out["num_attention_heads"] = c.NumAttentionHeads
	out["num_key_value_heads"] = c.NumKeyValueHeads
	if c.HeadDim > 0 || c.QKNorm() {
		out["head_dim"] = c.HeadSize() // always for Qwen3, whose absent head_dim means 128
	}
	out["rms_norm_eps"] = c.RMSNormEps
	out["rope_theta"] = c.RopeTheta
	out["tie_word_embeddings"] = c.TieWordEmbeddings
	out["max_position_embeddings"] = c.MaxPositionEmbeddings
	out["initializer_range"] = c.InitializerRange
	out["bos_token_id"] = c.BOSTokenID
	switch len(c.EOSTokenIDs) {
	case 0:
		out["eos_token_id"] = nil
	case 1:
		out["eos_token_id"] = c.EOSTokenIDs[0]
	default:
		out["eos_token_id"] = c.EOSTokenIDs
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, k := range keys {
		kj, _ := json.Marshal(k)
		vj, err := json.Marshal(out[k])
		if err != nil {
			return nil, fmt.Errorf("config: key %q: %w", k, err)
		}
		fmt.Fprintf(&buf, "  %s: %s", kj, vj)
		if i < len(keys)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// Save writes the configuration as config.json at path, for float32 weights.
func (c Config) Save(path string) error { return c.save(path, F32) }

// save writes the configuration as config.json at path, for weights stored as dtype.
func (c Config) save(path string, dtype DType) error {
	raw, err := c.marshal("ForCausalLM", dtype, nil)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	return nil
}

// UnmarshalJSON decodes a Hugging Face config.json into c, as ParseConfig does.
func (c *Config) UnmarshalJSON(raw []byte) error {
	parsed, err := ParseConfig(raw)
	if err != nil {
		return err
	}
	*c = parsed
	return nil
}
