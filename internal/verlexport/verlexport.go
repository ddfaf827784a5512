// Package verlexport writes agentr1's multi-hop QA questions as a verl RL dataset: Parquet
// files whose rows verl's RLHFDataset reads, one question a row, in the layout of verl's and
// Search-R1's data_preprocess scripts (verl examples/data_preprocess/preprocess_search_r1_dataset.py,
// Search-R1 scripts/data_process/nq_search.py, Agent-R1 recipe/hotpotqa):
//
//	data_source   string                       the question's dataset ("hotpotqa", "world", ...)
//	prompt        list<{role, content}>        the system message (instructions and the tool
//	                                           schema agentr1 renders) and the user's question
//	ability       string                       "multihop_qa"
//	reward_model  {style: "rule",
//	               ground_truth: {target: list<string>, numeric: bool}}
//	extra_info    {index: int64, question_id: string, split: string}
//
// ground_truth holds the gold answers under "target" as Search-R1's data does, so verl's
// search_r1_like_qa_em.compute_score reads them unchanged; numeric marks a question whose answer
// agentr1 compares as a number (qa.NumericMatch). docs/REWARD.md gives the reward in full.
//
// The Parquet code is github.com/parquet-go/parquet-go; only this package imports it.
package verlexport

import (
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"

	"agentr1/env/qa"
	"agentr1/internal/atomicfile"
)

// Message is one chat message of a prompt, as verl passes it to the tokenizer's chat template.
type Message struct {
	Role    string `parquet:"role"`    // "system" or "user"
	Content string `parquet:"content"` // the message's text
}

// GroundTruth is what the reward function compares the answer with.
type GroundTruth struct {
	Target  []string `parquet:"target,list"` // the gold answer and its aliases (qa.Question.Answers)
	Numeric bool     `parquet:"numeric"`     // compare as numbers (qa.Question.Numeric)
}

// RewardModel is verl's reward_model column: a rule-based reward and its ground truth.
type RewardModel struct {
	Style       string      `parquet:"style"`        // always "rule"
	GroundTruth GroundTruth `parquet:"ground_truth"` // the accepted answers
}

// ExtraInfo is verl's extra_info column, passed to the reward function beside the answer.
type ExtraInfo struct {
	Index      int64  `parquet:"index"`       // the row's position in its file
	QuestionID string `parquet:"question_id"` // qa.Question.ID
	Split      string `parquet:"split"`       // "train" or "validation"
}

// Row is one question of a verl RL dataset.
type Row struct {
	DataSource  string      `parquet:"data_source"`  // the question's dataset ("hotpotqa", "world", ...)
	Prompt      []Message   `parquet:"prompt,list"`  // the system message, then the user's question
	Ability     string      `parquet:"ability"`      // always Ability
	RewardModel RewardModel `parquet:"reward_model"` // the rule and the ground truth of the reward
	ExtraInfo   ExtraInfo   `parquet:"extra_info"`   // the row's index, question id and split
}

// Ability is the ability column of every row, Agent-R1's name for its QA data.
const Ability = "multihop_qa"

// Rows turns questions into the rows of one file: each prompt is the system message system
// followed by the user message agentr1 asks the question with (qa.UserMessage), and each row is
// marked with split. A question without a dataset name takes dataSource.
func Rows(qs []qa.Question, system, split, dataSource string) []Row {
	rows := make([]Row, len(qs))
	for i, q := range qs {
		source := q.Dataset
		if source == "" {
			source = dataSource
		}
		rows[i] = Row{
			DataSource: source,
			Prompt: []Message{
				{Role: "system", Content: system},
				{Role: "user", Content: qa.UserMessage(q)},
			},
			Ability: Ability,
			RewardModel: RewardModel{
				Style:       "rule",
				GroundTruth: GroundTruth{Target: q.Answers, Numeric: q.Numeric},
			},
			ExtraInfo: ExtraInfo{Index: int64(i), QuestionID: q.ID, Split: split},
		}
	}
	return rows
}

// WriteFile writes rows to path as one Parquet file, Snappy-compressed (pandas' default, which
// every Parquet reader decodes), atomically: on an error path is left as it was.
func WriteFile(path string, rows []Row) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[Row](w, parquet.Compression(&parquet.Snappy))
		if _, err := pw.Write(rows); err != nil {
			return err
		}
		return pw.Close()
	})
}

// ReadFile reads the rows of a Parquet file written by WriteFile (or any file with Row's
// columns).
func ReadFile(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rows, err := parquet.Read[Row](f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return rows, nil
}
