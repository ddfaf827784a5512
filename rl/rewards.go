package rl

import "fmt"

// ProcessReward is an intermediate reward of a multi-turn trajectory: Value placed at token
// position Pos of the response, the closing token of the tool call it rewards (docs/PAPER.md §1).
type ProcessReward struct {
	Pos   int
	Value float64
}

// TokenLevelRewards builds one response's token-level reward row (length L = len(actionMask)):
// each process reward is added at its position and the outcome reward at the last agent token
// (the last position where actionMask != 0). Process rewards may share a position (they add up)
// and may sit at the last agent token too.
//
// It returns an error when a process reward lies outside [0, L) or on a masked (non-agent)
// position: GAE, the advantage mask and verl's REINFORCE++ would silently drop it there. It also
// returns an error when the row has no agent token but a reward to place.
func TokenLevelRewards(actionMask []float64, process []ProcessReward, outcome float64) ([]float64, error) {
	row := make([]float64, len(actionMask)) // (L)
	last := -1
	for t, m := range actionMask {
		if m != 0 {
			last = t
		}
	}
	for k, pr := range process {
		if pr.Pos < 0 || pr.Pos >= len(row) {
			return nil, fmt.Errorf("rl.TokenLevelRewards: process reward %d at position %d outside the response [0, %d)", k, pr.Pos, len(row))
		}
		if actionMask[pr.Pos] == 0 {
			return nil, fmt.Errorf("rl.TokenLevelRewards: process reward %d at position %d is on a masked token; place it on the tool call's closing token", k, pr.Pos)
		}
		row[pr.Pos] += pr.Value
	}
	if last < 0 {
		if outcome != 0 {
			return nil, fmt.Errorf("rl.TokenLevelRewards: outcome reward %v but the response has no agent token", outcome)
		}
		return row, nil
	}
	row[last] += outcome
	return row, nil
}

// TokenLevelRewardBatch builds the (B, L) token-level rewards of a batch with TokenLevelRewards,
// row by row: process[i] (may be nil) and outcomes[i] belong to response i. Errors name the row.
// It panics if len(process) or len(outcomes) differs from B.
func TokenLevelRewardBatch(actionMask Matrix, process [][]ProcessReward, outcomes []float64) (Matrix, error) {
	if len(process) != actionMask.B || len(outcomes) != actionMask.B {
		panic(fmt.Sprintf("rl.TokenLevelRewardBatch: %d process lists and %d outcomes for %d responses", len(process), len(outcomes), actionMask.B))
	}
	out := NewMatrix(actionMask.B, actionMask.L)
	for i := 0; i < actionMask.B; i++ {
		row, err := TokenLevelRewards(actionMask.Row(i), process[i], outcomes[i])
		if err != nil {
			return Matrix{}, fmt.Errorf("response %d: %w", i, err)
		}
		copy(out.Row(i), row)
	}
	return out, nil
}
