package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// parseConfig reads the eos and pad tokens and the added_tokens_decoder of a
// tokenizer_config.json into m, and keeps the file for Save.
func parseConfig(raw []byte, m *model) error {
	var cfg struct {
		EOS                json.RawMessage           `json:"eos_token"`
		Pad                json.RawMessage           `json:"pad_token"`
		AddedTokensDecoder map[string]addedTokenJSON `json:"added_tokens_decoder"`
		ChatTemplate       json.RawMessage           `json:"chat_template"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	var err error
	if m.eosToken, err = tokenContent(cfg.EOS); err != nil {
		return fmt.Errorf("eos_token: %w", err)
	}
	if m.padToken, err = tokenContent(cfg.Pad); err != nil {
		return fmt.Errorf("pad_token: %w", err)
	}
	if m.chatTemplate, err = chatTemplate(cfg.ChatTemplate); err != nil {
		return fmt.Errorf("chat_template: %w", err)
	}
	have := map[int]bool{}
	for _, at := range m.added {
		have[at.ID] = true
	}
	keys := make([]string, 0, len(cfg.AddedTokensDecoder))
	for k := range cfg.AddedTokensDecoder {
		keys = append(keys, k)
	}
	sortNumeric(keys)
	for _, k := range keys {
		var id int
		if _, err := fmt.Sscanf(k, "%d", &id); err != nil || fmt.Sprint(id) != k {
			return fmt.Errorf("added_tokens_decoder: key %q is not an id", k)
		}
		if have[id] {
			continue // tokenizer.json's added_tokens is the authority
		}
		at := cfg.AddedTokensDecoder[k]
		m.added = append(m.added, AddedToken{ID: id, Content: at.Content, Special: at.Special,
			LStrip: at.LStrip, RStrip: at.RStrip, SingleWord: at.SingleWord, Normalized: at.Normalized})
		have[id] = true
	}
	m.config = append([]byte(nil), raw...)
	return nil
}

// defaultSpecials sets eos and pad for a tokenizer.json without a config: Qwen's chat
// convention, when those tokens exist ("<|im_end|>", else "<|endoftext|>", ends a sequence;
// "<|endoftext|>" pads).
func defaultSpecials(m *model) {
	has := func(s string) bool {
		for _, at := range m.added {
			if at.Content == s {
				return true
			}
		}
		return false
	}
	switch {
	case has(imEnd):
		m.eosToken = imEnd
	case has(endOfText):
		m.eosToken = endOfText
	}
	if has(endOfText) {
		m.padToken = endOfText
	}
}

// chatTemplate reads a chat_template given as a string, or as Hugging Face's list of named
// templates, of which the one named "default" is the one apply_chat_template uses.
func chatTemplate(raw json.RawMessage) (string, error) {
	if s, ok := stringOrNull(raw); ok {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", fmt.Errorf("want a string or a list of {\"name\", \"template\"}: %w", err)
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
	}
	return "", nil
}

// modelTypeBeside returns the model_type of the config.json in dir, "" when there is none.
// Only a Load of a folder without a chat template asks, to tell a Qwen3 model from a Qwen2.5.
func modelTypeBeside(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	var cfg struct {
		ModelType string `json:"model_type"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return cfg.ModelType, nil
}

// tokenContent reads a special token given as a string, as {"content": ...}, or null.
func tokenContent(raw json.RawMessage) (string, error) {
	if s, ok := stringOrNull(raw); ok {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("want a string or {\"content\": ...}: %w", err)
	}
	return obj.Content, nil
}

// stringOrNull reads a field given as a JSON string, or as null or not at all (""). ok is
// false for any other JSON value, which the caller reads in its other form.
func stringOrNull(raw json.RawMessage) (s string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// sortNumeric sorts decimal strings by value (shorter first, then lexically).
func sortNumeric(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) < len(keys[j])
		}
		return keys[i] < keys[j]
	})
}
