package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileName is the name of the tokenizer file in a Hugging Face model folder, which Save writes
// and Load reads when given the folder.
const FileName = "tokenizer.json"

// Load reads a Hugging Face tokenizer.json (gzip-compressed when the name ends in ".gz"; when
// path does not exist but path+".gz" does, that is read; a directory means its tokenizer.json)
// and, when present beside it, tokenizer_config.json for the eos and pad tokens and further
// added tokens. Only what this package implements is accepted: a BPE model over the byte-level
// alphabet, an NFC or absent normalizer, the Qwen2 Split pre-tokenizer followed by ByteLevel,
// and the ByteLevel decoder; anything else is an error naming the file and the field.
// The post_processor is not applied: Encode adds no BOS/EOS, like add_special_tokens=False.
// The chat format (ChatFormat) is Qwen3's when tokenizer_config.json's chat_template writes
// <think> blocks, or, without a chat_template, when a config.json beside says model_type
// "qwen3"; Qwen2.5's otherwise.
func Load(path string) (*Tokenizer, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, FileName)
	}
	raw, name, err := readFileOrGzip(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	m, err := parseTokenizerJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	cfgRaw, cfgName, err := readFileOrGzip(cfgPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		defaultSpecials(&m)
	case err != nil:
		return nil, fmt.Errorf("tokenizer: %w", err)
	default:
		if err := parseConfig(cfgRaw, &m); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", cfgName, err)
		}
	}
	modelType := ""
	if m.chatTemplate == "" {
		if modelType, err = modelTypeBeside(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	m.chat = chatFormatOf(m.chatTemplate, modelType)
	t, err := build(m)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	return t, nil
}

// Parse builds a tokenizer from the bytes of a tokenizer.json and, when config is not nil, of a
// tokenizer_config.json, whose chat_template alone decides the ChatFormat.
func Parse(tokenizerJSON, config []byte) (*Tokenizer, error) {
	m, err := parseTokenizerJSON(tokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if config == nil {
		defaultSpecials(&m)
	} else if err := parseConfig(config, &m); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	m.chat = chatFormatOf(m.chatTemplate, "")
	t, err := build(m)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	return t, nil
}

// readFileOrGzip reads path, or path+".gz" when path is missing, gunzipping a ".gz" name.
// It returns the name actually read.
func readFileOrGzip(path string) ([]byte, string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(path, ".gz") {
		if g, gerr := os.Open(path + ".gz"); gerr == nil {
			f, err, path = g, nil, path+".gz"
		}
	}
	if err != nil {
		return nil, path, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, path, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, path, fmt.Errorf("%s: %w", path, err)
	}
	return raw, path, nil
}

// tokenizerFile is the part of tokenizer.json this package reads.
type tokenizerFile struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         *bpeModelJSON    `json:"model"`
}

type addedTokenJSON struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type bpeModelJSON struct {
	Type                    string           `json:"type"`
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
}

// typed is any tokenizer.json component: {"type": ..., ...}.
type typed struct {
	Type string `json:"type"`
}

func parseTokenizerJSON(raw []byte) (model, error) {
	var f tokenizerFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return model{}, err
	}
	m := model{}
	if f.Model == nil {
		return m, fmt.Errorf(`no "model"`)
	}
	mj := f.Model
	switch {
	case mj.Type != "BPE":
		return m, fmt.Errorf("model.type %q, want \"BPE\"", mj.Type)
	case mj.Dropout != nil && *mj.Dropout != 0:
		return m, fmt.Errorf("model.dropout %v: BPE dropout is not supported", *mj.Dropout)
	case mj.ContinuingSubwordPrefix != nil && *mj.ContinuingSubwordPrefix != "":
		return m, fmt.Errorf("model.continuing_subword_prefix %q is not supported", *mj.ContinuingSubwordPrefix)
	case mj.EndOfWordSuffix != nil && *mj.EndOfWordSuffix != "":
		return m, fmt.Errorf("model.end_of_word_suffix %q is not supported", *mj.EndOfWordSuffix)
	case mj.ByteFallback:
		return m, fmt.Errorf("model.byte_fallback true is not supported (byte-level BPE needs none)")
	case len(mj.Vocab) == 0:
		return m, fmt.Errorf("model.vocab is missing or empty")
	}
	m.vocab = mj.Vocab
	m.ignoreMerges = mj.IgnoreMerges
	pairs, err := parseMerges(mj.Merges)
	if err != nil {
		return m, err
	}
	m.merges = make([][2]int32, len(pairs))
	for i, pair := range pairs {
		for k, part := range pair {
			id, ok := mj.Vocab[part]
			if !ok {
				return m, &mergeError{i, fmt.Sprintf("token %q is not in model.vocab", part)}
			}
			m.merges[i][k] = id
		}
	}
	for i, at := range f.AddedTokens {
		if at.ID == nil {
			return m, fmt.Errorf("added_tokens[%d]: no id", i)
		}
		m.added = append(m.added, AddedToken{ID: *at.ID, Content: at.Content, Special: at.Special,
			LStrip: at.LStrip, RStrip: at.RStrip, SingleWord: at.SingleWord, Normalized: at.Normalized})
	}
	if m.nfc, err = parseNormalizer(f.Normalizer); err != nil {
		return m, err
	}
	if err := checkPreTokenizer(f.PreTokenizer); err != nil {
		return m, err
	}
	var dec typed
	if err := json.Unmarshal(orNull(f.Decoder), &dec); err != nil {
		return m, fmt.Errorf("decoder: %w", err)
	}
	if dec.Type != "ByteLevel" {
		return m, fmt.Errorf("decoder.type %q, want \"ByteLevel\"", dec.Type)
	}
	return m, nil
}

// parseMerges reads model.merges: a list of ["left", "right"] pairs (tokenizers >= 0.20) or of
// "left right" strings. The whole list is decoded in one call when it is well-formed (fast: the
// Qwen3 file has 151387 merges); otherwise merge by merge, to name the one at fault.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		out := make([][2]string, len(pairs))
		for i, p := range pairs {
			if len(p) != 2 {
				return nil, &mergeError{i, fmt.Sprintf("want 2 tokens, got %d", len(p))}
			}
			out[i] = [2]string{p[0], p[1]}
		}
		return out, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("model.merges: %w", err)
	}
	out := make([][2]string, len(list))
	for i, rm := range list {
		left, right, err := parseMerge(rm)
		if err != nil {
			return nil, &mergeError{i, err.Error()}
		}
		out[i] = [2]string{left, right}
	}
	return out, nil
}

// parseMerge reads one merge: ["left", "right"] (tokenizers >= 0.20) or "left right".
func parseMerge(rm json.RawMessage) (string, string, error) {
	var pair []string
	if err := json.Unmarshal(rm, &pair); err == nil {
		if len(pair) != 2 {
			return "", "", fmt.Errorf("want 2 tokens, got %d", len(pair))
		}
		return pair[0], pair[1], nil
	}
	var s string
	if err := json.Unmarshal(rm, &s); err != nil {
		return "", "", fmt.Errorf(`want ["left", "right"] or "left right": %s`, truncate(string(rm), 40))
	}
	left, right, ok := strings.Cut(s, " ")
	if !ok || strings.Contains(right, " ") {
		return "", "", fmt.Errorf("%q is not two tokens separated by one space", s)
	}
	return left, right, nil
}

// parseNormalizer accepts null, NFC, or a Sequence of exactly one NFC.
func parseNormalizer(raw json.RawMessage) (nfc bool, err error) {
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(orNull(raw), &n); err != nil {
		return false, fmt.Errorf("normalizer: %w", err)
	}
	switch {
	case n.Type == "":
		return false, nil
	case n.Type == "NFC":
		return true, nil
	case n.Type == "Sequence" && len(n.Normalizers) == 1:
		nfc, err := parseNormalizer(n.Normalizers[0])
		if err != nil || !nfc {
			return false, fmt.Errorf("normalizer.normalizers[0]: want NFC")
		}
		return true, nil
	}
	return false, fmt.Errorf("normalizer.type %q is not supported (want NFC or none)", n.Type)
}

// checkPreTokenizer accepts the Qwen2 layout: a Sequence of Split(Qwen2Pattern, Isolated) and
// ByteLevel without its own regex and without a prefix space.
func checkPreTokenizer(raw json.RawMessage) error {
	var seq struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(orNull(raw), &seq); err != nil {
		return fmt.Errorf("pre_tokenizer: %w", err)
	}
	if seq.Type != "Sequence" || len(seq.PreTokenizers) != 2 {
		return fmt.Errorf("pre_tokenizer: type %q with %d parts, want a Sequence of Split and ByteLevel (the Qwen2 pre-tokenizer)", seq.Type, len(seq.PreTokenizers))
	}
	var split struct {
		Type    string `json:"type"`
		Pattern struct {
			Regex *string `json:"Regex"`
		} `json:"pattern"`
		Behavior string `json:"behavior"`
		Invert   bool   `json:"invert"`
	}
	if err := json.Unmarshal(seq.PreTokenizers[0], &split); err != nil {
		return fmt.Errorf("pre_tokenizer.pretokenizers[0]: %w", err)
	}
	switch {
	case split.Type != "Split":
		return fmt.Errorf("pre_tokenizer.pretokenizers[0].type %q, want \"Split\"", split.Type)
	case split.Pattern.Regex == nil || *split.Pattern.Regex != Qwen2Pattern:
		return fmt.Errorf("pre_tokenizer.pretokenizers[0].pattern.Regex is not the Qwen2 pattern %q", Qwen2Pattern)
	case split.Behavior != "Isolated" || split.Invert:
		return fmt.Errorf("pre_tokenizer.pretokenizers[0]: behavior %q invert %v, want \"Isolated\" false", split.Behavior, split.Invert)
	}
	var bl struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"`
	}
	if err := json.Unmarshal(seq.PreTokenizers[1], &bl); err != nil {
		return fmt.Errorf("pre_tokenizer.pretokenizers[1]: %w", err)
	}
	switch {
	case bl.Type != "ByteLevel":
		return fmt.Errorf("pre_tokenizer.pretokenizers[1].type %q, want \"ByteLevel\"", bl.Type)
	case bl.AddPrefixSpace:
		return fmt.Errorf("pre_tokenizer.pretokenizers[1].add_prefix_space true is not supported")
	case bl.UseRegex == nil || *bl.UseRegex:
		return fmt.Errorf("pre_tokenizer.pretokenizers[1].use_regex must be false (the Split does the splitting)")
	}
	return nil
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
