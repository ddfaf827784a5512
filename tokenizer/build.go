package tokenizer

import (
	"fmt"
	"sort"
)

// model is what a tokenizer is built from: the BPE vocabulary and merges, the added tokens and
// the options, as read from tokenizer.json (Load) or learned (Train).
type model struct {
	vocab        map[string]int32 // BPE spelling -> id
	merges       [][2]int32       // (M, 2) left and right ids, in rank order
	added        []AddedToken
	ignoreMerges bool
	nfc          bool
	eosToken     string // "" for none
	padToken     string // "" for none
	config       []byte // tokenizer_config.json, nil for none
	chatTemplate string // tokenizer_config.json "chat_template", "" for none
	chat         ChatFormat
}

// mergeError is a problem with merge number Index of model.merges.
type mergeError struct {
	Index int
	Msg   string
}

func (e *mergeError) Error() string { return fmt.Sprintf("model.merges[%d]: %s", e.Index, e.Msg) }

// build checks m and assembles a Tokenizer. Errors name the tokenizer.json field at fault.
func build(m model) (*Tokenizer, error) {
	size := 0
	for tok, id := range m.vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab[%q]: negative id %d", tok, id)
		}
		size = max(size, int(id)+1)
	}
	for i, at := range m.added {
		if at.ID < 0 {
			return nil, fmt.Errorf("added_tokens[%d]: negative id %d", i, at.ID)
		}
		if at.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		size = max(size, at.ID+1)
	}
	// Ids are dense in real vocabularies; a bound keeps a corrupt file from allocating
	// gigabytes.
	if limit := 2*(len(m.vocab)+len(m.added)) + 256; size > limit {
		return nil, fmt.Errorf("model.vocab/added_tokens: largest id %d is far beyond the %d tokens", size-1, len(m.vocab)+len(m.added))
	}
	t := &Tokenizer{
		tokens:       make([]string, size),
		decoded:      make([][]byte, size),
		vocab:        m.vocab,
		merges:       newMergeTable(len(m.merges)),
		mergeList:    m.merges,
		ignoreMerges: m.ignoreMerges,
		nfc:          m.nfc,
		eos:          -1,
		pad:          -1,
		config:       m.config,
		chat:         m.chat,
	}
	for tok, id := range m.vocab {
		if prev := t.tokens[id]; prev != "" {
			a, b := prev, tok
			if b < a {
				a, b = b, a
			}
			return nil, fmt.Errorf("model.vocab: id %d is given to both %q and %q", id, a, b)
		}
		t.tokens[id] = tok
		t.decoded[id] = decodedBytes(tok)
	}
	for b := range 256 {
		t.byteID[b] = -1
		if id, ok := m.vocab[byteLevelString([]byte{byte(b)})]; ok {
			t.byteID[b] = id
		}
	}
	if m.ignoreMerges {
		t.rawVocab = make(map[string]int32, len(m.vocab))
		for tok, id := range m.vocab {
			if raw, ok := byteLevelBytes(tok); ok {
				t.rawVocab[string(raw)] = id
			}
		}
	}
	for rank, pair := range m.merges {
		for _, id := range pair {
			if id < 0 || int(id) >= size || t.tokens[id] == "" {
				return nil, &mergeError{rank, fmt.Sprintf("id %d is not in model.vocab", id)}
			}
		}
		joined := t.tokens[pair[0]] + t.tokens[pair[1]]
		merged, ok := m.vocab[joined]
		if !ok {
			return nil, &mergeError{rank, fmt.Sprintf("merged token %q is not in model.vocab", joined)}
		}
		// A pair listed twice keeps its last rank, as Hugging Face's merge map does.
		t.merges.put(mergeKey(pair[0], pair[1]), mergeValue(uint32(rank), merged))
	}
	added := append([]AddedToken(nil), m.added...)
	sort.SliceStable(added, func(i, j int) bool { return added[i].ID < added[j].ID })
	for _, at := range added {
		t.tokens[at.ID] = at.Content
		t.decoded[at.ID] = decodedBytes(at.Content)
	}
	t.added = added
	t.matcher = newAddedMatcher(added)
	if m.eosToken != "" {
		id, ok := t.TokenID(m.eosToken)
		if !ok {
			return nil, fmt.Errorf("eos_token %q is not a token", m.eosToken)
		}
		t.eos = id
	}
	if m.padToken != "" {
		id, ok := t.TokenID(m.padToken)
		if !ok {
			return nil, fmt.Errorf("pad_token %q is not a token", m.padToken)
		}
		t.pad = id
	}
	return t, nil
}
