package trainer

import (
	"fmt"

	"agentr1/mdp"
	"agentr1/rl/rollout"
)

// Collated is a step's rollout laid out for training: each result's trajectory flattened
// (mdp.Flatten) and the rows collated into one batch.
type Collated struct {
	Results []*rollout.Result // (B) the rollout's rows, each holding its mdp.Trajectory
	Batch   *mdp.Batch        // the rows collated: prompts left-padded, responses right-padded
	Groups  []int             // (B,) group id of each row (GRPO/RLOO index)
}

// FlattenResults lays a step's rollout out for training: it flattens each result's trajectory
// into a row (mdp.Flatten) and stacks the rows into one batch padded with padID (mdp.Collate,
// verl's layout: prompts left-padded, responses right-padded).
//
// It returns an error for a row whose reward has no agent token to sit on
// (mdp.Row.UnplacedReward: a trajectory with no action token), rather than let the reward
// vanish: every estimator would score that row 0. The trainer's rollout never makes such a
// row (it refuses a prompt that leaves no room to generate), so the error means a broken rollout.
func FlattenResults(results []*rollout.Result, padID int) (*Collated, error) {
	c := &Collated{Results: results, Groups: make([]int, len(results))}
	rows := make([]mdp.Row, len(results))
	for i, r := range results {
		row, err := mdp.Flatten(&r.Trajectory, 0)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		if row.UnplacedReward != 0 {
			return nil, fmt.Errorf("row %d: reward %v has no agent token to sit on (the trajectory has no action token)", i, row.UnplacedReward)
		}
		rows[i] = row
		c.Groups[i] = r.Group
	}
	c.Batch = mdp.Collate(rows, padID)
	return c, nil
}
