package mdp

import "fmt"

// ToolCall marks one tool call inside a turn's action: the action token that closes it and
// hands control to the environment (the last token of "</tool_call>"), and the process reward
// the environment paid for it.
type ToolCall struct {
	End    int     // index into Turn.Action of the closing token
	Reward float64 // process reward r_t placed on that token (0 for none)
}

// Turn is one round of the interaction: the agent's action tokens, then the environment's
// observation tokens (the tool responses wrapped in ChatML, masked out of the loss).
type Turn struct {
	Action         []int      // (n,) agent tokens, exactly as sampled; may be empty
	ActionLogProbs []float32  // (n,) log-prob each action token was sampled with
	Observation    []int      // (m,) environment tokens; empty for the last turn
	ToolCalls      []ToolCall // calls the action closed, in order
}

// Trajectory is one episode: the prompt (system, user and the opening of the assistant's
// turn) followed by the turns, with the outcome reward of the whole episode.
type Trajectory struct {
	Prompt        []int   // (p,) prompt tokens
	Turns         []Turn  // the agent's turns, in order, each with the observation after it
	OutcomeReward float64 // the task's reward (paper Eq. 6 for multi-hop QA)
	// CutMaxTurns: the episode stopped at the turn limit while the agent still called tools.
	CutMaxTurns bool
	// CutMaxLength: the episode stopped because the token budget ran out (set by the rollout,
	// or by Flatten when it cuts the response to its budget).
	CutMaxLength bool
}

// Validate checks the trajectory's internal consistency: one log-prob per action token and
// tool-call ends inside their action.
func (t *Trajectory) Validate() error {
	for i, turn := range t.Turns {
		if len(turn.Action) != len(turn.ActionLogProbs) {
			return fmt.Errorf("mdp: turn %d: %d action tokens but %d log-probs",
				i, len(turn.Action), len(turn.ActionLogProbs))
		}
		for j, c := range turn.ToolCalls {
			if c.End < 0 || c.End >= len(turn.Action) {
				return fmt.Errorf("mdp: turn %d: tool call %d ends at action token %d, action has %d tokens",
					i, j, c.End, len(turn.Action))
			}
		}
	}
	return nil
}

// Before returns the episode's tokens before turn k (0 <= k <= len(Turns)): the prompt, then
// each earlier turn's action and observation, in a new slice. It is the state the agent writes
// turn k from.
func (t *Trajectory) Before(k int) []int {
	out := append([]int(nil), t.Prompt...)
	for _, turn := range t.Turns[:k] {
		out = append(out, turn.Action...)
		out = append(out, turn.Observation...)
	}
	return out
}

// ResponseLen is the number of tokens after the prompt: every action and observation token.
func (t *Trajectory) ResponseLen() int {
	n := 0
	for _, turn := range t.Turns {
		n += len(turn.Action) + len(turn.Observation)
	}
	return n
}

// AgentTokens is the number of action tokens, the positions the policy is trained on.
func (t *Trajectory) AgentTokens() int {
	n := 0
	for _, turn := range t.Turns {
		n += len(turn.Action)
	}
	return n
}

// TotalReward is the sum of the outcome reward and every process reward.
func (t *Trajectory) TotalReward() float64 {
	r := t.OutcomeReward
	for _, turn := range t.Turns {
		for _, c := range turn.ToolCalls {
			r += c.Reward
		}
	}
	return r
}
