package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// parseConfig reads the eos and pad tokens and the added_tokens_decoder of a
// tokenizer_config.json into m, and keeps the file for Save.
func parseConfig(raw []byte, m *model) error {
	var cfg struct {
		EOS                json.RawMessage           `json:"eos_token"`
		Pad                json.RawMessage           `json:"pad_token"`
		AddedTokensDecoder map[string]addedTokenJSON `json:"added_tokens_decoder"`
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

// tokenContent reads a special token given as a string, as {"content": ...}, or null.
func tokenContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
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

// sortNumeric sorts decimal strings by value (shorter first, then lexically).
func sortNumeric(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) < len(keys[j])
		}
		return keys[i] < keys[j]
	})
}
