package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Save writes tokenizer.json and tokenizer_config.json into dir (created if missing), in the
// layout of Qwen's files, so that Hugging Face's AutoTokenizer / tokenizers.Tokenizer load them
// and encode as this package does. A tokenizer loaded with a tokenizer_config.json writes that
// file back unchanged; a trained one gets a Qwen2Tokenizer config with the eos and pad tokens
// and Qwen2.5's chat template (RenderChat's layout).
func (t *Tokenizer) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tokenizer: save: %w", err)
	}
	var buf bytes.Buffer
	t.writeTokenizerJSON(&buf)
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("tokenizer: save: %w", err)
	}
	cfg := t.config
	if cfg == nil {
		var err error
		if cfg, err = t.defaultConfig(); err != nil {
			return fmt.Errorf("tokenizer: save: tokenizer_config.json: %w", err)
		}
	}
	path = filepath.Join(dir, "tokenizer_config.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return fmt.Errorf("tokenizer: save: %w", err)
	}
	return nil
}

// byteLevelJSON is the ByteLevel component as Qwen's files spell it (pre-tokenizer part,
// post-processor and decoder alike).
const byteLevelJSON = `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`

// writeTokenizerJSON writes tokenizer.json: the vocabulary in id order, merges as pairs
// (tokenizers >= 0.20 format, which Qwen3's file uses).
func (t *Tokenizer) writeTokenizerJSON(b *bytes.Buffer) {
	w := bufio.NewWriter(b)
	defer w.Flush()
	w.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, at := range t.added {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "\n    {\"id\": %d, \"content\": %s, \"single_word\": %t, \"lstrip\": %t, \"rstrip\": %t, \"normalized\": %t, \"special\": %t}",
			at.ID, jsonString(at.Content), at.SingleWord, at.LStrip, at.RStrip, at.Normalized, at.Special)
	}
	w.WriteString("\n  ],\n")
	if t.nfc {
		w.WriteString("  \"normalizer\": {\"type\": \"NFC\"},\n")
	} else {
		w.WriteString("  \"normalizer\": null,\n")
	}
	fmt.Fprintf(w, "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": %s}, \"behavior\": \"Isolated\", \"invert\": false}, %s]},\n",
		jsonString(Qwen2Pattern), byteLevelJSON)
	fmt.Fprintf(w, "  \"post_processor\": %s,\n  \"decoder\": %s,\n", byteLevelJSON, byteLevelJSON)
	fmt.Fprintf(w, "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": \"\", \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": %t,\n", t.ignoreMerges)
	w.WriteString("    \"vocab\": {")
	first := true
	for id, tok := range t.tokens {
		if vid, ok := t.vocab[tok]; !ok || int(vid) != id {
			continue // an unused id or an added token
		}
		if !first {
			w.WriteByte(',')
		}
		first = false
		w.WriteString("\n      ")
		w.WriteString(jsonString(tok))
		w.WriteString(": ")
		w.WriteString(strconv.Itoa(id))
	}
	w.WriteString("\n    },\n    \"merges\": [")
	for i, m := range t.mergeList {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "\n      [%s, %s]", jsonString(t.vocabSpelling(m[0])), jsonString(t.vocabSpelling(m[1])))
	}
	w.WriteString("\n    ]\n  }\n}\n")
}

// vocabSpelling returns the BPE spelling of a vocabulary id (an added token may share the id
// and hide it in t.tokens).
func (t *Tokenizer) vocabSpelling(id int32) string {
	if tok := t.tokens[id]; t.vocab[tok] == id {
		return tok
	}
	for tok, v := range t.vocab {
		if v == id {
			return tok
		}
	}
	return ""
}

// jsonString quotes s as JSON without escaping <, > and & (tokens such as "<|im_end|>" stay
// readable).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // a string always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// defaultConfig returns a Qwen2Tokenizer tokenizer_config.json for a tokenizer that was not
// loaded with one.
func (t *Tokenizer) defaultConfig() ([]byte, error) {
	type addedEntry struct {
		Content    string `json:"content"`
		LStrip     bool   `json:"lstrip"`
		Normalized bool   `json:"normalized"`
		RStrip     bool   `json:"rstrip"`
		SingleWord bool   `json:"single_word"`
		Special    bool   `json:"special"`
	}
	decoder := map[string]addedEntry{}
	var extra []string
	tokenOrNil := func(id int) any {
		if id < 0 {
			return nil
		}
		return t.tokens[id]
	}
	for _, at := range t.added {
		decoder[strconv.Itoa(at.ID)] = addedEntry{at.Content, at.LStrip, at.Normalized, at.RStrip, at.SingleWord, at.Special}
		if at.Special && at.ID != t.eos && at.ID != t.pad {
			extra = append(extra, at.Content)
		}
	}
	cfg := map[string]any{
		"add_bos_token":                false,
		"add_prefix_space":             false,
		"added_tokens_decoder":         decoder,
		"additional_special_tokens":    extra,
		"bos_token":                    nil,
		"chat_template":                Qwen25ChatTemplate,
		"clean_up_tokenization_spaces": false,
		"eos_token":                    tokenOrNil(t.eos),
		"errors":                       "replace",
		"model_max_length":             32768,
		"pad_token":                    tokenOrNil(t.pad),
		"split_special_tokens":         false,
		"tokenizer_class":              "Qwen2Tokenizer",
		"unk_token":                    nil,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
