package trainer

import (
	"encoding/json"
	"math"
	"strconv"
)

// Num is a float64 that marshals NaN and ±Inf as JSON null (encoding/json rejects them), so a
// metric that is undefined for a step (explained variance of a constant return) never breaks
// the log line.
type Num float64

// MarshalJSON writes n with up to 6 significant digits, or null when it is not finite.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

// UnmarshalJSON reads a number or null (as NaN).
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// StepMetrics is the one JSON line logged per training step. Names follow verl's and CleanRL's
// metric names where they exist.
type StepMetrics struct {
	// Step is the step's number, counted from 1: after step s, s updates have been applied,
	// and an evaluation at step s (EvalMetrics.Step) saw that policy.
	Step      int    `json:"step"`
	Phase     string `json:"phase"`               // "rl" or "critic-warmup"
	Algorithm string `json:"algorithm,omitempty"` // the run's RLConfig.Algorithm

	// Rollout statistics over the step's trajectories.
	RewardMean    Num `json:"reward_mean"`    // mean sequence reward (process + outcome)
	RewardStd     Num `json:"reward_std"`     // its standard deviation
	EM            Num `json:"em"`             // exact-match rate of the answers
	F1            Num `json:"f1"`             // mean token F1 of the answers
	FormatRate    Num `json:"format_rate"`    // fraction with a valid format (r_format = 1)
	ResponseLen   Num `json:"response_len"`   // mean tokens after the prompt
	AgentTokens   Num `json:"agent_tokens"`   // mean tokens the policy generated
	Turns         Num `json:"turns"`          // mean agent turns
	Searches      Num `json:"searches"`       // mean tool calls
	ToolErrors    Num `json:"tool_errors"`    // mean failed tool calls
	TruncatedRate Num `json:"truncated_rate"` // fraction cut by a limit
	LogpDiffMax   Num `json:"logp_diff_max"`  // max |sampled logp − recomputed old logp| over agent tokens
	// ZeroAdvRate is the fraction of trajectories whose advantage is 0 on every agent token
	// (a tied GRPO or RLOO group: all its samples scored alike). They teach nothing, and the
	// update leaves them out of its forward and backward passes.
	ZeroAdvRate Num `json:"zero_adv_rate"`

	// Numeric guard: optimiser steps of this step skipped because a loss or gradient was not
	// finite, and what the first one was ("gradient of model.layers.1.mlp.up_proj.weight").
	SkippedUpdates int    `json:"skipped_updates,omitempty"`
	SkipReason     string `json:"skip_reason,omitempty"` // the first skip's cause; empty when none
	// Diverging says why the update's KL exploded against its running level
	// (Trainer.KLWatch), or is empty.
	Diverging string `json:"diverging,omitempty"`

	// Update statistics, averaged over the mini-batches of the step (agent tokens only).
	// Entropy, approx_kl and ppo_kl are over the trajectories the update trained on, which
	// leaves out those with a zero advantage (ZeroAdvRate) when it can; clipfrac is over all.
	Loss         Num `json:"loss"`                       // total policy objective (pg − entropy bonus + KL loss), or the SFT loss
	PGLoss       Num `json:"pg_loss"`                    // PPO clipped surrogate
	Entropy      Num `json:"entropy"`                    // mean predictive entropy
	ApproxKL     Num `json:"approx_kl"`                  // CleanRL's k3 estimate of KL(old || new)
	PPOKL        Num `json:"ppo_kl"`                     // verl's masked mean of (old − new) log-probs
	ClipFrac     Num `json:"clipfrac"`                   // fraction of tokens where the clip was active
	RefKL        Num `json:"ref_kl"`                     // mean KL penalty to the reference (the chosen estimator)
	KLCoef       Num `json:"kl_coef,omitempty"`          // β of the step's KL term (moved by the adaptive controller); absent when off
	ValueLoss    Num `json:"value_loss,omitempty"`       // clipped value loss (PPO)
	ExplainedVar Num `json:"explained_var,omitempty"`    // 1 − Var(R−V)/Var(R) of the critic (PPO)
	GradNorm     Num `json:"grad_norm"`                  // policy gradient norm before clipping
	CriticGrad   Num `json:"critic_grad_norm,omitempty"` // critic gradient norm before clipping (PPO)
	LR           Num `json:"lr"`                         // policy learning rate this step
	CriticLR     Num `json:"critic_lr,omitempty"`        // critic learning rate this step

	// Throughput and the time split (seconds).
	TokensPerSec Num `json:"tokens_per_s"`   // trajectory tokens (rollout + training) per second of the step
	TimeRollout  Num `json:"time_rollout"`   // generating the trajectories (and ReMax's greedy baselines)
	TimeOld      Num `json:"time_old_logp"`  // recomputing the old log-probs; near 0 when the sampled ones serve
	TimeRef      Num `json:"time_reference"` // the reference pass; near 0 with the KL term off
	TimeCritic   Num `json:"time_critic"`    // the critic's values; near 0 without a critic
	TimeUpdate   Num `json:"time_update"`    // the policy and critic updates
	TimeTotal    Num `json:"time_total"`     // the whole step
}
