package trainer

import (
	"errors"
	"fmt"

	"agentr1/rl"
)

// RLConfig holds the settings of the RL phase: the algorithm, the rollout and the PPO update.
// Defaults (DefaultRLConfig) are tuned for a ~1M-parameter policy on 2 CPU cores; the paper's
// values (docs/PAPER.md §6) are quoted where ours differ, and docs/RESULTS.md holds the runs
// that chose ours.
type RLConfig struct {
	Algorithm Algorithm // ppo, grpo, drgrpo, reinforce++, reinforce++-baseline, rloo, remax, gspo, opo, gpg, grpo-passk, grpo-process
	// Steps is the number of RL steps (one rollout + update each). The default 240 (about 8
	// minutes of GRPO on 2 cores): after 40 steps the policy searches every hop in the world
	// it trained on, but reads the names of a world it never saw no better than its warm start
	// did; that reading comes later and unevenly, and 240 steps give it to every seed where 120
	// left one behind (docs/RESULTS.md section 1).
	Steps   int
	Prompts int // prompts per step (paper: 128)
	// N is the samples per prompt, the GRPO group (paper: 5). The default 10 prompts x 8
	// samples costs what 16 x 5 would (80 trajectories a step), and a larger group more often
	// holds one of the rare successes that teach the second hop: a group whose samples all
	// fail teaches nothing, and the seeds then vary less.
	N int

	// Rollout.
	MaxTurns      int // agent turns per episode (paper: 5-10)
	MaxTurnTokens int // generated tokens per turn
	// MaxLen is the prompt + response tokens per trajectory. The default 800 holds the scripted
	// agent's longest path (a three-hop question: three searches and an answer, ~700 tokens);
	// a shorter limit cuts those episodes before their answer, and the policy is scored on a
	// format it was never given room to finish.
	MaxLen       int
	MaxObsTokens int // tokens kept of one observation (0: all)
	// Temperature τ of training rollouts (paper and verl: 1.0); the update scores tokens by
	// softmax(logits/τ), as verl does. Evaluation is greedy. The default 0.6 is below the
	// paper's because a ~1M-parameter policy sampled at τ = 1 often breaks the format, so
	// GRPO's groups would differ mostly in format; at 0.6 the samples are about as well formed
	// as greedy decoding and differ in what they found.
	Temperature float64
	TopP        float64 // nucleus filter (0: off)
	TopK        int     // top-k filter (0: off)

	// Old log-probs of the PPO ratio: "recompute" runs the policy over the batch before the
	// update, as verl does; "sampled" takes the log-probs the rollout sampled with, which are
	// the same numbers (token-in, token-out, both at Temperature: logp_diff_max ~1e-6) at a
	// third less cost, and still recomputes every CheckOldEvery steps to log the drift.
	OldLogProbs   OldLogProbSource
	CheckOldEvery int // with "sampled": recompute on steps 1, N+1, 2N+1, ... (0: never)

	// PPO update.
	Epochs      int // passes over the step's batch (paper: 1)
	MiniBatches int // optimiser steps per epoch: the batch is split into this many (paper: 128/64 = 2)
	// MiniBatchOrder is how the rows are cut into mini-batches: by length (the default, little
	// padding) or in row order as verl does (DESIGN.md, the update).
	MiniBatchOrder MiniBatchOrder
	AggMode        rl.AggMode // loss aggregation (token-mean; Dr.GRPO forces seq-mean-token-sum-norm, divided by MaxLen; GSPO's loss is always seq-mean-token-mean)
	ClipLow        float64    // PPO ratio clip 1−ClipLow (GSPO: the sequence ratio's)
	ClipHigh       float64    // PPO ratio clip 1+ClipHigh (> ClipLow is clip-higher)
	ClipC          float64    // dual-clip constant (verl: 3)
	EntropyCoef    float64    // entropy bonus coefficient (subtracted from the loss)
	GradClip       float64    // max global gradient norm (verl: 1.0)

	// KL to the frozen reference (the initial policy).
	// KLCoef is β (paper: 0.001; default 0: within a 15-minute run β = 0.001 barely acts, and
	// the reference pass costs a quarter of a step on CPU). 0 disables the reference pass.
	KLCoef      float64
	KLPlacement KLPlacement    // reward (the reward estimator in the token reward), loss (the estimator as a loss term), auto (per algorithm), none
	KLEstimator rl.KLEstimator // for the loss: k1, abs, k2/mse, k3/low_var_kl (paper: k3; verl actor.kl_loss_type)
	// KLRewardEstimator is the estimator subtracted from the token reward when the KL is in the
	// reward: k1 (verl's default algorithm.kl_penalty "kl"), abs, k2/mse or k3/low_var_kl. It is
	// a setting apart from KLEstimator because verl keeps the two apart with different defaults.
	KLRewardEstimator rl.KLEstimator
	// KLCtrl chooses how β moves: fixed keeps KLCoef; adaptive is verl's AdaptiveKLController
	// (Ziegler et al. 2019), which starts at KLCoef and after every step multiplies β by
	// 1 + clip(KL/KLTarget − 1, ±0.2)·rows/KLHorizon (AdaptiveKLUpdate).
	KLCtrl    KLController
	KLTarget  float64 // adaptive: the KL per token the controller steers towards (verl target_kl: 0.1)
	KLHorizon int     // adaptive: rows of rollout over which β may change by a factor e^{±0.2} (verl horizon: 10000)

	// Advantages.
	Gamma        float64 // discount (paper: 1)
	Lambda       float64 // GAE λ (paper: 1)
	NormByStd    bool    // GRPO divides by the group std (Dr.GRPO sets false)
	ResetAtMask  bool    // REINFORCE++ returns reset at tool tokens, as verl (default: bridge them, the paper's mask)
	AdvantageEps float64 // ε of GRPO's std division

	// Optimiser.
	// LR is the actor's peak learning rate (paper: 1e-6 for a 3B model). A ~1M-parameter policy
	// given a few hundred steps needs far larger ones. The default 3e-4 did best of the rates
	// tried: 1e-3 collapses the policy to answering without searching within the run, 5e-4
	// ends lower, and 1e-4 learns less in the same steps.
	LR          float64
	CriticLR    float64 // critic peak learning rate (paper: 1e-5)
	WarmupSteps int     // linear lr warm-up, in optimiser steps
	Decay       LRDecay // lr decay after warm-up: cosine, linear, constant
	MinLRRatio  float64 // final lr as a fraction of the peak
	WeightDecay float64 // AdamW decoupled weight decay
	Beta1       float64 // AdamW β1
	Beta2       float64 // AdamW β2

	// Critic (PPO).
	ValueClip    float64 // clipped value loss range (verl cliprange_value: 0.5)
	CriticWarmup int     // first steps update only the critic (paper: 5)

	// Ablations (docs/PAPER.md §6).
	NoLossMask      bool // train on observation tokens too (loss mask = every response token)
	NoAdvantageMask bool // compute advantages over every response position, as Search-R1

	// Sizing.
	MicroBatch int // rows per forward pass of the old-logp/reference/critic passes (0: one mini-batch)

	// MaxNonFiniteSteps stops the run, with its state saved, after this many steps in a row in
	// which a loss or gradient was not finite (each such optimiser step is skipped); 0 never stops.
	MaxNonFiniteSteps int
}

// DefaultRLConfig returns the defaults for algo.
func DefaultRLConfig(algo Algorithm) RLConfig {
	c := RLConfig{
		Algorithm:      algo,
		Steps:          240,
		Prompts:        10,
		N:              8,
		MaxTurns:       4,
		MaxTurnTokens:  96,
		MaxLen:         800,
		MaxObsTokens:   160,
		Temperature:    0.6,
		OldLogProbs:    OldLogProbsSampled,
		CheckOldEvery:  10,
		Epochs:         1,
		MiniBatches:    2,
		MiniBatchOrder: MiniBatchesByLength,
		AggMode:        rl.TokenMean,
		ClipLow:        0.2,
		ClipHigh:       0.28,
		ClipC:          3,
		EntropyCoef:    0,
		GradClip:       1.0,
		KLCoef:         0,
		KLPlacement:    KLAuto,
		KLEstimator:    rl.KLK3,
		KLCtrl:         KLFixed,
		KLTarget:       0.1,
		KLHorizon:      10000,
		Gamma:          1,
		Lambda:         1,
		NormByStd:      true,
		AdvantageEps:   1e-6,
		LR:             3e-4,
		CriticLR:       1e-3,
		WarmupSteps:    2,
		Decay:          DecayCosine,
		MinLRRatio:     0.1,
		WeightDecay:    0.0,
		Beta1:          0.9,
		Beta2:          0.999,
		ValueClip:      0.5,
		CriticWarmup:   3,

		KLRewardEstimator: rl.KLK1, // verl's algorithm.kl_penalty default, "kl"
		MaxNonFiniteSteps: 3,
	}
	switch algo {
	case DrGRPO:
		c.NormByStd = false
		c.AggMode = rl.SeqMeanTokenSumNorm
	case GSPO:
		// verl's GSPO recipe: the sequence ratio e^{mean log-ratio} moves far less than a
		// token's, so its clip band is three orders of magnitude narrower than PPO's, and the
		// loss is the mean over responses of their token means (GSPOLoss forces it).
		c.ClipLow, c.ClipHigh = 3e-4, 4e-4
		c.AggMode = rl.SeqMeanTokenMean
	case ReinforcePP, ReMax:
		// No groups: as many prompts, one sample each, as the grouped algorithms' rows.
		c.Prompts *= c.N
		c.N = 1
	}
	return c
}

// KLMode resolves KLPlacement: KLAuto to the algorithm's default, and KLOff when KLCoef is 0.
// It returns KLInReward, KLAsLoss or KLOff.
func (c *RLConfig) KLMode() KLPlacement {
	if c.KLCoef == 0 {
		return KLOff
	}
	if c.KLPlacement == KLAuto || c.KLPlacement == "" {
		return c.Algorithm.DefaultKLPlacement()
	}
	return c.KLPlacement
}

// Validate reports the first invalid setting, naming its field.
func (c *RLConfig) Validate() error {
	if _, err := ParseAlgorithm(string(c.Algorithm)); err != nil {
		return fmt.Errorf("rl config: Algorithm: %w", err)
	}
	if _, err := rl.ParseAggMode(string(c.AggMode)); err != nil {
		return fmt.Errorf("rl config: AggMode: %w", err)
	}
	if _, err := rl.ParseKLEstimator(c.KLEstimator.String()); err != nil {
		return fmt.Errorf("rl config: KLEstimator: %w", err)
	}
	if _, err := ParseOldLogProbSource(string(c.OldLogProbs)); err != nil {
		return fmt.Errorf("rl config: OldLogProbs: %w", err)
	}
	if _, err := ParseKLPlacement(string(c.KLPlacement)); err != nil {
		return fmt.Errorf("rl config: KLPlacement: %w", err)
	}
	if _, err := rl.ParseKLEstimator(c.KLRewardEstimator.String()); err != nil {
		return fmt.Errorf("rl config: KLRewardEstimator: %w", err)
	}
	if _, err := ParseKLController(string(c.KLCtrl)); err != nil {
		return fmt.Errorf("rl config: KLCtrl: %w", err)
	}
	if _, err := ParseLRDecay(string(c.Decay)); err != nil {
		return fmt.Errorf("rl config: Decay: %w", err)
	}
	if _, err := ParseMiniBatchOrder(string(c.MiniBatchOrder)); err != nil {
		return fmt.Errorf("rl config: MiniBatchOrder: %w", err)
	}
	switch {
	case c.Steps < 0:
		return fmt.Errorf("rl config: Steps = %d < 0", c.Steps)
	case c.Prompts < 1 || c.N < 1:
		return fmt.Errorf("rl config: Prompts = %d, N = %d, want >= 1", c.Prompts, c.N)
	case c.Algorithm.GroupBased() && c.N < 2:
		return fmt.Errorf("rl config: %s needs a group: N = %d, want >= 2", c.Algorithm, c.N)
	case c.MaxTurns < 1 || c.MaxTurnTokens < 1 || c.MaxLen < 2:
		return fmt.Errorf("rl config: MaxTurns %d, MaxTurnTokens %d, MaxLen %d too small", c.MaxTurns, c.MaxTurnTokens, c.MaxLen)
	case c.Epochs < 1 || c.MiniBatches < 1:
		return fmt.Errorf("rl config: Epochs = %d, MiniBatches = %d, want >= 1", c.Epochs, c.MiniBatches)
	case c.MiniBatches > c.Prompts*c.N:
		return fmt.Errorf("rl config: MiniBatches = %d > rows %d", c.MiniBatches, c.Prompts*c.N)
	case c.ClipLow <= 0 || c.ClipLow >= 1 || c.ClipHigh <= 0:
		return fmt.Errorf("rl config: ClipLow %g, ClipHigh %g out of range", c.ClipLow, c.ClipHigh)
	case c.ClipC <= 1:
		return fmt.Errorf("rl config: ClipC = %g, want > 1", c.ClipC)
	case c.LR < 0 || c.CriticLR < 0 || c.KLCoef < 0:
		return errors.New("rl config: negative learning rate or KL coefficient")
	case c.KLCtrl == KLAdaptive && !(c.KLTarget > 0) && c.KLMode() != KLOff:
		return fmt.Errorf("rl config: KLTarget = %g, the adaptive KL controller needs a target > 0", c.KLTarget)
	case c.KLCtrl == KLAdaptive && c.KLHorizon < 1 && c.KLMode() != KLOff:
		return fmt.Errorf("rl config: KLHorizon = %d, the adaptive KL controller needs a horizon >= 1", c.KLHorizon)
	case c.Temperature <= 0:
		return fmt.Errorf("rl config: Temperature = %g, want > 0 (evaluation is greedy)", c.Temperature)
	}
	return Schedule{Peak: c.LR, Warmup: c.WarmupSteps, Total: c.Steps, Decay: c.Decay, MinRatio: c.MinLRRatio}.Validate()
}
