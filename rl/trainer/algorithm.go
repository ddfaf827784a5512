package trainer

import (
	"fmt"
	"strings"
)

// Algorithm names an RL algorithm: an advantage estimator, a policy loss (PolicyLoss) and
// whether it needs a critic or a greedy baseline rollout. All train on the same masks.
type Algorithm string

// The algorithms of Agent-R1's Table 1, plus the other advantage estimators and policy losses
// verl ships: Dr.GRPO, ReMax, GSPO, OPO, GPG and GRPO with pass@k advantages; and GRPO with
// DeepSeekMath's process supervision, which verl does not ship.
const (
	PPO             Algorithm = "ppo"                  // GAE with a learned critic (Schulman et al. 2017)
	GRPO            Algorithm = "grpo"                 // group-normalised outcome (Shao et al. 2024)
	DrGRPO          Algorithm = "drgrpo"               // GRPO without the std division, seq-mean-token-sum-norm loss (Liu et al. 2025)
	ReinforcePP     Algorithm = "reinforce++"          // discounted return, batch-whitened (Hu 2025)
	ReinforcePPBase Algorithm = "reinforce++-baseline" // group-mean baseline, then batch whitening (Hu 2025)
	RLOO            Algorithm = "rloo"                 // leave-one-out baseline (Ahmadian et al. 2024)
	ReMax           Algorithm = "remax"                // greedy-rollout baseline (Li et al. 2023)
	GSPO            Algorithm = "gspo"                 // GRPO advantages, sequence-level ratio and clip (Zheng et al. 2025)
	OPO             Algorithm = "opo"                  // length-weighted group-mean baseline (Hao et al. 2025)
	GPG             Algorithm = "gpg"                  // rescaled group baseline, plain policy gradient without ratio (Chu et al. 2025)
	GRPOPassK       Algorithm = "grpo-passk"           // pass@k: only a group's best response learns (Chen et al. 2025)
	GRPOProcess     Algorithm = "grpo-process"         // each turn credited with the group-normalised rewards from it on (Shao et al. 2024, §4.1.3)
)

// Algorithms lists every algorithm: the paper's table first, then verl's other objectives.
var Algorithms = []Algorithm{PPO, GRPO, DrGRPO, ReinforcePP, ReinforcePPBase, RLOO, ReMax, GSPO, OPO, GPG, GRPOPassK, GRPOProcess}

// AlgorithmNames returns the names of Algorithms, in their order, separated by commas: the
// choices an error or a flag's help lists.
func AlgorithmNames() string {
	names := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

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
	case "grpo-pass-k", "grpopassk", "passk": // verl's adv_estimator is "grpo_passk"
		n = "grpo-passk"
	}
	for _, a := range Algorithms {
		if string(a) == n {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown algorithm %q (want one of %s)", s, AlgorithmNames())
}

// String returns the algorithm's name.
func (a Algorithm) String() string { return string(a) }

// MarshalText writes the algorithm's name.
func (a Algorithm) MarshalText() ([]byte, error) { return []byte(a), nil }

// UnmarshalText parses an algorithm's name, any spelling ParseAlgorithm accepts, to its
// canonical one.
func (a *Algorithm) UnmarshalText(b []byte) error { return setFromText(a, b, ParseAlgorithm) }

// NeedsCritic reports whether the algorithm trains a value model.
func (a Algorithm) NeedsCritic() bool { return a == PPO }

// GroupBased reports whether the algorithm compares the n samples of a prompt (and so needs a
// group size above 1 to learn anything).
func (a Algorithm) GroupBased() bool {
	switch a {
	case GRPO, DrGRPO, ReinforcePPBase, RLOO, GSPO, OPO, GPG, GRPOPassK, GRPOProcess:
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

// PolicyLoss names the policy loss an algorithm trains with (verl's policy_loss.loss_mode).
type PolicyLoss string

const (
	// LossPPOClip is PPO's clipped surrogate with dual clip, per token (rl.PPOClipLoss; verl
	// "vanilla").
	LossPPOClip PolicyLoss = "ppo-clip"
	// LossGSPO clips the response's geometric-mean ratio instead of each token's (rl.GSPOLoss;
	// verl "gspo").
	LossGSPO PolicyLoss = "gspo"
	// LossGPG is the plain policy gradient −A·logp, with no ratio and no clip (rl.GPGLoss; verl
	// "gpg").
	LossGPG PolicyLoss = "gpg"
)

// PolicyLoss returns the loss a trains with: GSPO's and GPG's own, PPO's clipped surrogate for
// every other algorithm, as verl pairs them in its GSPO and GPG recipes.
func (a Algorithm) PolicyLoss() PolicyLoss {
	switch a {
	case GSPO:
		return LossGSPO
	case GPG:
		return LossGPG
	}
	return LossPPOClip
}
