package trainer

import (
	"fmt"

	"agentr1/mdp"
	"agentr1/rl/rollout"
)

// ToTrajectory converts a rollout sample into the paper's MDP trajectory: each agent segment
// becomes a turn's action, the observation after it that turn's observation. A turn whose
// last token is toolEnd (`</tool_call>`) records a tool call closing there with the turn's
// process reward; any other process reward is also placed on the turn's last token, so no
// reward is lost. Tokens and log-probs are copied untouched (token-in, token-out).
func ToTrajectory(s *rollout.Sample, toolEnd int) (*mdp.Trajectory, error) {
	t := &mdp.Trajectory{
		Prompt:        s.Prompt,
		OutcomeReward: s.Outcome.Reward,
		CutMaxTurns:   s.CutTurns,
		CutMaxLength:  s.CutLength,
	}
	for k, seg := range s.Segments {
		if !seg.Agent {
			if len(t.Turns) == 0 {
				return nil, fmt.Errorf("trajectory of row %d: observation before any agent turn (segment %d)", s.Index, k)
			}
			last := &t.Turns[len(t.Turns)-1]
			last.Observation = append(last.Observation, seg.Tokens...)
			continue
		}
		turn := mdp.Turn{Action: seg.Tokens, ActionLogProbs: seg.LogProbs}
		if n := len(seg.Tokens); n > 0 && (seg.Tokens[n-1] == toolEnd || seg.Reward != 0) {
			turn.ToolCalls = []mdp.ToolCall{{End: n - 1, Reward: seg.Reward}}
		}
		t.Turns = append(t.Turns, turn)
	}
	return t, t.Validate()
}

// Collated is a step's samples laid out for training.
type Collated struct {
	Samples      []*rollout.Sample
	Trajectories []*mdp.Trajectory
	Batch        *mdp.Batch
	Groups       []int // (B,) group id of each row (GRPO/RLOO index)
}

// Collate flattens and collates samples with padID (verl's layout: prompts left-padded,
// responses right-padded).
func Collate(samples []*rollout.Sample, toolEnd, padID int) (*Collated, error) {
	c := &Collated{Samples: samples, Groups: make([]int, len(samples))}
	rows := make([]mdp.Row, len(samples))
	for i, s := range samples {
		t, err := ToTrajectory(s, toolEnd)
		if err != nil {
			return nil, err
		}
		row, err := mdp.Flatten(t, 0)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		c.Trajectories = append(c.Trajectories, t)
		rows[i] = row
		c.Groups[i] = s.Group
	}
	c.Batch = mdp.Collate(rows, padID)
	return c, nil
}
