package pipeline

import (
	"strings"

	"agentr1/rl/trainer"
)

// PhaseCopy is the phase of the warm start's copy steps (SFTConfig.CopySteps); its
// demonstration steps are "sft".
const PhaseCopy = "sft-copy"

// SFTMetrics is the one JSON line logged per SFT step.
type SFTMetrics struct {
	Step         int         `json:"step"`         // the step's number, counted from 1 (after it, Step updates)
	Phase        string      `json:"phase"`        // "sft", or PhaseCopy on a copy step
	Loss         trainer.Num `json:"loss"`         // masked next-token loss over agent tokens (the copied tokens on a copy step)
	Entropy      trainer.Num `json:"entropy"`      // mean predictive entropy on agent tokens
	GradNorm     trainer.Num `json:"grad_norm"`    // gradient norm before clipping
	LR           trainer.Num `json:"lr"`           // learning rate this step
	AgentTokens  trainer.Num `json:"agent_tokens"` // mean agent tokens per demonstration
	TokensPerSec trainer.Num `json:"tokens_per_s"` // real tokens (prompt + response) per second
	TimeTotal    trainer.Num `json:"time_total"`   // seconds
	// Diverging says why the loss exploded against its running level
	// (trainer.SFTLossDivergence), or is empty.
	Diverging string `json:"diverging,omitempty"`
}

// EvalMetrics are the figures of an evaluation (greedy rollouts on a split), overall and per
// dataset and question type.
type EvalMetrics struct {
	Name       string                  `json:"name"`             // what was evaluated ("rl", "sft", "naive-rag", ...)
	Step       int                     `json:"step"`             // RL steps done before it (0: the starting policy)
	N          int                     `json:"n"`                // questions
	EM         trainer.Num             `json:"em"`               // exact-match rate of the answers
	F1         trainer.Num             `json:"f1"`               // mean token F1 of the answers
	FormatRate trainer.Num             `json:"format_rate"`      // fraction with a valid format
	Turns      trainer.Num             `json:"turns"`            // mean agent turns per episode
	Searches   trainer.Num             `json:"searches"`         // mean tool calls per episode
	ToolErrors trainer.Num             `json:"tool_error_rate"`  // failed tool calls / tool calls
	Reward     trainer.Num             `json:"reward"`           // mean episode reward (process + outcome)
	Groups     map[string]*EvalMetrics `json:"groups,omitempty"` // by "dataset=..." and "type=..."
	// Tools are the figures of each tool the episodes called, by name: with the groups by
	// question type they give, say, how often the calculator is used on numeric questions and
	// on the others.
	Tools map[string]*ToolMetrics `json:"tools,omitempty"`
	// Answers are where the name answers stand earlier in their episodes (Evaluate, of the
	// whole set and of each group): a policy that reads copies them, one that recites
	// invents them.
	Answers *AnswerSources `json:"answer_sources,omitempty"`
}

// Set is the evaluation set m measured: its name "<phase>/<set>" (EvaluateSets) after the
// last slash, "heldout" of "sft/heldout".
func (m *EvalMetrics) Set() string {
	return m.Name[strings.LastIndex(m.Name, "/")+1:]
}

// ToolMetrics are one tool's evaluation figures.
type ToolMetrics struct {
	UseRate   trainer.Num `json:"use_rate"`   // fraction of episodes that called the tool at least once
	Calls     trainer.Num `json:"calls"`      // calls of the tool per episode
	ErrorRate trainer.Num `json:"error_rate"` // calls with invalid arguments or a failure of the tool / calls
}
