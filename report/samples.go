package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"agentr1/internal/jsonl"
)

// Token roles, the values of Token.Role.
const (
	RolePrompt      = "prompt"      // system and user turn: conditioning, never trained on
	RoleAgent       = "agent"       // sampled by the policy: the actions
	RoleObservation = "observation" // appended by the environment (tool responses)
)

// Sample is one trajectory as the report shows it: the question, what the agent did token by
// token, and how the run scored it. The trainer appends samples to RUN/samples.jsonl with
// WriteSamples, one JSON object per line.
type Sample struct {
	Step     int      `json:"step"`     // RL step the trajectory was sampled for, from 1 (by the policy after Step−1 updates)
	Split    string   `json:"split"`    // "train" or "eval"
	Question string   `json:"question"` // the task as the user asked it
	Gold     []string `json:"gold"`     // accepted answers (aliases)
	Answer   string   `json:"answer"`   // the model's extracted answer ("" when none)
	Reward   float64  `json:"reward"`   // total reward of the trajectory: OutcomeReward + ProcessReward
	// OutcomeReward is the reward of the final answer (Agent-R1 Eq. 6 for QA), on the last
	// agent token; ProcessReward the sum of the process rewards (one per tool call that found
	// a new supporting passage), each on the token closing its call.
	OutcomeReward float64 `json:"outcome_reward"`
	ProcessReward float64 `json:"process_reward"` // see OutcomeReward
	// Group is the group the trajectory was sampled in (GRPO, RLOO: the samples of the same
	// question, whose rewards set each other's advantages); nil for a group of one.
	Group     *Group     `json:"group,omitempty"`
	EM        float64    `json:"em"`         // exact match of Answer against Gold, 0 or 1
	F1        float64    `json:"f1"`         // token F1 of Answer against Gold
	Tokens    []Token    `json:"tokens"`     // the whole sequence: prompt, then actions and observations
	ToolCalls []ToolCall `json:"tool_calls"` // every tool call the agent made, in order
	Outcome   string     `json:"outcome"`    // how the episode ended, e.g. "answered", "cut: max turns"
}

// Group is the group of samples a trajectory's advantage was computed in.
type Group struct {
	ID      int       `json:"id"`      // the group's id in its step
	Rewards []float64 `json:"rewards"` // every member's total reward (the sum of its token rewards, as the estimator reads it), in batch order
	Member  int       `json:"member"`  // this trajectory's index in Rewards
	Mean    float64   `json:"mean"`    // mean of Rewards
	Std     float64   `json:"std"`     // their unbiased (N−1) standard deviation, as GRPO divides by
	// Tied: every member has the same reward, so every advantage of the group is 0 and the
	// update leaves its trajectories out (they would teach nothing).
	Tied bool `json:"tied"`
}

// Token is one position of a trajectory with everything the RL step attached to it.
type Token struct {
	Text          string  `json:"text"`                     // the token's decoded text (may be part of a UTF-8 character)
	Role          string  `json:"role"`                     // RolePrompt, RoleAgent or RoleObservation
	ActionMask    int     `json:"action_mask,omitempty"`    // 1: the loss (policy, entropy, KL) includes this position
	AdvantageMask int     `json:"advantage_mask,omitempty"` // 1: the advantage estimator ran over this position
	Advantage     float64 `json:"advantage,omitempty"`      // advantage A_t (0 where AdvantageMask is 0)
	Reward        float64 `json:"reward,omitempty"`         // token-level reward r_t placed here (0 for none)
	LogProb       float32 `json:"logprob,omitempty"`        // log-prob the token was sampled with (agent tokens)
}

// ToolCall is one tool call the agent made and what the environment answered.
type ToolCall struct {
	Turn      int    `json:"turn"`            // the agent turn that made the call, from 1
	Name      string `json:"name"`            // tool name as the agent wrote it
	Arguments string `json:"arguments"`       // the arguments as JSON text
	Result    string `json:"result"`          // the tool's output, without the chat template around it (ToolOutput)
	Error     string `json:"error,omitempty"` // why the call failed (bad JSON, unknown tool, ...); "" on success
}

// ToolOutput is the tool's output inside an observation as the chat template renders it
// ("<|im_end|>\n<|im_start|>user\n<tool_response>\n...\n</tool_response><|im_end|>\n<|im_start|>
// assistant\n"): the text between the tool-response tags, trimmed. An observation without
// them is returned trimmed.
func ToolOutput(observation string) string {
	const open, close = "<tool_response>", "</tool_response>"
	i := strings.Index(observation, open)
	if i < 0 {
		return strings.TrimSpace(observation)
	}
	rest := observation[i+len(open):]
	if j := strings.LastIndex(rest, close); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimSpace(rest)
}

// WriteSamples appends samples to the JSONL file at path, one object per line, creating the
// file if needed.
func WriteSamples(path string, samples []Sample) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range samples {
		if err := enc.Encode(&samples[i]); err != nil {
			return fmt.Errorf("report: encode sample %d for %s: %w", i, path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}

// ReadSamples reads every sample of the JSONL file at path. Blank lines are skipped; a line
// that is not a Sample is an error naming the file and the line.
func ReadSamples(path string) ([]Sample, error) {
	var out []Sample
	err := scanJSONL(path, nil, func(line int, raw []byte) error {
		var s Sample
		if err := decodeStrict(raw, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// scanJSONL is jsonl.Scan with the package's prefix on its errors: every non-blank line of the
// file at path goes to fn, and a torn last line is skipped with a word to warn when it is set.
func scanJSONL(path string, warn func(string), fn func(line int, raw []byte) error) error {
	if err := jsonl.Scan(path, warn, fn); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// decodeStrict decodes exactly one JSON value from raw into v, rejecting trailing data.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}
