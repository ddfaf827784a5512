package trainer

import (
	"fmt"
	"strings"
)

// Algorithm names an RL algorithm: an advantage estimator and whether it needs a critic or a
// greedy baseline rollout. All share the PPO clipped policy loss on the same masks.
type Algorithm string

// The algorithms of Agent-R1's Table 1 (plus Dr.GRPO and ReMax, which verl ships).
const (
	PPO             Algorithm = "ppo"                  // GAE with a learned critic (Schulman et al. 2017)
	GRPO            Algorithm = "grpo"                 // group-normalised outcome (Shao et al. 2024)
	DrGRPO          Algorithm = "drgrpo"               // GRPO without the std division, seq-mean-token-sum-norm loss (Liu et al. 2025)
	ReinforcePP     Algorithm = "reinforce++"          // discounted return, batch-whitened (Hu 2025)
	ReinforcePPBase Algorithm = "reinforce++-baseline" // group-mean baseline, then batch whitening (Hu 2025)
	RLOO            Algorithm = "rloo"                 // leave-one-out baseline (Ahmadian et al. 2024)
	ReMax           Algorithm = "remax"                // greedy-rollout baseline (Li et al. 2023)
)

const algorithmListNames = "ppo, grpo, drgrpo, reinforce++, reinforce++-baseline, rloo, remax"

// Algorithms lists every algorithm, in the order of the paper's table.
var Algorithms = []Algorithm{PPO, GRPO, DrGRPO, ReinforcePP, ReinforcePPBase, RLOO, ReMax}

// ParseAlgorithm returns the algorithm named s (case-insensitive; "reinforce_plus_plus" and
// verl's other spellings accepted).
func ParseAlgorithm(s string) (Algorithm, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	n = strings.ReplaceAll(n, "_", "-")
	switch n {
	case "reinforce-plus-plus", "reinforcepp":
		n = "reinforce++"
	case "reinforce-plus-plus-baseline", "reinforcepp-baseline":
		n = "reinforce++-baseline"
	case "dr-grpo":
		n = "drgrpo"
	}
	for _, a := range Algorithms {
		if string(a) == n {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown algorithm %q (want one of %s)", s, algorithmListNames)
}

// String returns the algorithm's name.
func (a Algorithm) String() string { return string(a) }

// MarshalText writes the algorithm's name.
func (a Algorithm) MarshalText() ([]byte, error) { return []byte(a), nil }

// UnmarshalText parses an algorithm's name, any spelling ParseAlgorithm accepts, to its
// canonical one.
func (a *Algorithm) UnmarshalText(b []byte) error {
	v, err := ParseAlgorithm(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// NeedsCritic reports whether the algorithm trains a value model.
func (a Algorithm) NeedsCritic() bool { return a == PPO }

// GroupBased reports whether the algorithm compares the n samples of a prompt (and so needs a
// group size above 1 to learn anything).
func (a Algorithm) GroupBased() bool {
	switch a {
	case GRPO, DrGRPO, ReinforcePPBase, RLOO:
		return true
	}
	return false
}

// DefaultKLPlacement is where the paper's scripts put the KL penalty for a: in the reward for
// PPO, REINFORCE++ and ReMax (verl use_kl_in_reward), as a k3 loss term for the group methods
// (verl use_kl_loss).
func (a Algorithm) DefaultKLPlacement() KLPlacement {
	switch a {
	case PPO, ReinforcePP, ReMax:
		return KLInReward
	}
	return KLAsLoss
}
