// Package qa is the multi-hop question-answering environment of the Agent-R1 paper (section
// 4, docs/PAPER.md sections 4 and 6): questions from HotpotQA, 2WikiMultihopQA and MuSiQue (or the
// generated world of env/world), a wiki search tool, and the reward of the paper's Eq. 6 with
// SQuAD-normalised exact match. It also loads the datasets in their usual formats.
package qa

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"unicode"
)

// Question is one multi-hop QA task.
type Question struct {
	ID       string   `json:"id"`              // unique within its dataset
	Question string   `json:"question"`        // the question's text
	Answers  []string `json:"answers"`         // the gold answer and its aliases; EM takes the best
	Type     string   `json:"type"`            // bridge, comparison, compositional, 2hop, ...
	Dataset  string   `json:"dataset"`         // hotpotqa, 2wiki, musique, world, ...
	Split    string   `json:"split,omitempty"` // the dataset split it comes from ("train", "eval", ...)
	Level    string   `json:"level,omitempty"` // HotpotQA difficulty
	// SupportingTitles are the titles of the passages the answer needs, in hop order.
	SupportingTitles []string `json:"supporting_titles,omitempty"`
	// SupportingPIDs are the ids of those passages in the corpus (env.Passage.ID), when known;
	// retrieval recall and the process reward use them.
	SupportingPIDs []string `json:"supporting_pids,omitempty"`
	// Numeric marks a question whose answer is a number: EM compares it as a number
	// (NumericMatch), so "73", "73.0" and "73 years" all match a gold "73".
	Numeric bool `json:"numeric,omitempty"`
	// Operands are the numbers a numeric answer is calculated from, as the passages state
	// them, when known (the generated world's calculation questions); Config.OperandReward
	// pays a calculation that uses them.
	Operands []string `json:"operands,omitempty"`
}

// PassageID is the id the mhqa corpus gives a passage (data/mhqa/README.md): the first 12 hex
// digits of sha1(title + "\n" + text with all whitespace removed). Whitespace is what Python's
// str.isspace calls whitespace (Unicode spaces and the separators U+001C..U+001F).
func PassageID(title, text string) string {
	squeezed := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) {
			return -1
		}
		return r
	}, text)
	sum := sha1.Sum([]byte(title + "\n" + squeezed))
	return hex.EncodeToString(sum[:])[:12]
}
