// Package rl holds the reinforcement-learning algorithms of Agent-R1: masked statistics,
// advantage estimators, KL penalties, policy/value/entropy losses with their gradients, and loss
// aggregation. It reproduces verl (volcengine/verl, commit b178a3cd, trainer/ppo/core_algos.py and
// utils/torch_functional.py), the engine Agent-R1 builds on, case by case: every function of
// testdata/golden/verl/core_algos.json is registered under verl's name by package golden/verl,
// which keeps that glue out of this package. One estimator verl does not ship,
// GRPOProcessAdvantage (DeepSeekMath's process supervision), is checked by hand instead.
//
// # What the trainer runs
//
// Package rl/trainer calls the advantage estimators (GAE, GRPOAdvantage, GRPOPassKAdvantage,
// GRPOProcessAdvantage, OPOAdvantage, GPGAdvantage, ReinforcePlusPlus, ReinforcePPBaselineAdvantage, RLOOAdvantage,
// ReMaxAdvantage), KLPenalty and KLLoss, the policy losses (PPOClipLoss, GSPOLoss, GPGLoss),
// AggLoss, ClippedValueLoss, ApproxKL, ExplainedVariance and the masked statistics. The other
// exported functions run only in the golden cases (package golden/verl) or in tests, and the doc
// comment of each says so: GRPOVectorizedAdvantage and RLOOVectorizedAdvantage, KLInReward,
// GAERecursion, MaskedMeanBackward, and the functions on logits (the model's head computes
// log-probs and entropies itself).
//
// # Data layout
//
// Everything is float64 on per-token arrays of a batch: a Matrix is B responses × L token
// positions, row-major (Data[i*L+t]). Masks are 0/1 Matrices as in verl: the action mask (loss
// mask) is 1 on tokens the agent generated and 0 on prompt, tool-response and padding tokens.
// Logits are (B, L, V). Group estimators take one int group id per response; ids need not be
// contiguous. Losses return the scalar and d(loss)/d(log-prob) (and d/d(value), d/d(logits)):
// that is the seam to the model's backward pass.
//
// # The advantage mask
//
// Agent-R1 computes advantages over agent tokens only: squeeze the masked positions out of a
// row, run the backward recursion, scatter back (SqueezeScatter). For GAE, verl's loop with
// interior zeros computes exactly this (tested bit for bit), and GAE runs that loop,
// GAERawAdvantages; SqueezeScatter with GAERecursion is the paper's form the test holds it to.
// For REINFORCE++ verl's loop differs: it resets the running return at every masked token.
// ReturnMode names both; the default, ReturnsOverAgentTokens, is the paper's and runs through
// SqueezeScatter; ReturnsResetAtMask is verl's and what golden/verl registers.
//
// # verl quirks reproduced
//
// These are copied on purpose so that results match verl to 1e-10; the doc comment of each
// function repeats the ones that concern it.
//
//  1. Masked means add 1e-8 to the denominator always (rows, batch, fully masked rows → 0).
//     Whitening uses the token-level batch mean and the unbiased variance N/(N−1) (no epsilon),
//     plus 1e-8 inside the square root, at every position; with fewer than two valid tokens it
//     fails (verl raises; we return an error).
//  2. GAE skips masked positions: both carries pass through, so spans are bridged with one γ
//     step; masked positions hold the next valid token's raw advantage and get
//     returns = that + their own (possibly garbage) value; advantages are whitened but not
//     re-masked, so padding gets −μ/σ. The losses mask these positions later.
//  3. verl's REINFORCE++ resets the return at every masked token (earlier turns lose the outcome
//     reward); its returns are not masked but its advantages are. ReMax's returns flow across
//     masked spans with masked rewards counted as 0, and its advantages are not re-masked.
//  4. Outcome estimators (GRPO, RLOO, OPO, GPG, REINFORCE++-baseline) read the score as the
//     unmasked sum of the token-level rewards.
//  5. Singleton groups: GRPO and GPG use μ = 0, σ = 1 (GRPO keeps s/(1+ε)); RLOO keeps s, while
//     vectorised RLOO gives 0; OPO and REINFORCE++-baseline keep s. pass@k rejects singletons.
//  6. GRPO's std is unbiased; a tied group gives exactly 0. Vectorised GRPO takes the group
//     statistics in float32 from running sums with a variance floor ε (tied group σ = 1e-3);
//     we round every float32 step as torch does and match it to float64 round-off.
//  7. GPG ignores its alpha argument (α = B / #nonzero scores); our GPGAdvantage has no alpha.
//  8. agg_loss: token-mean has no epsilon; seq-mean-token-mean adds 1e-8 per row; seq-mean modes
//     drop fully masked rows from the denominator; seq-mean-token-sum-norm divides the total by L
//     (or loss_scale_factor) only, ignoring B and dp_size. dp_size, batch_num_tokens,
//     global_batch_size and loss_scale_factor are AggOptions.
//  9. PPO clamps the log-ratio to ±20 before exp and ppo_kl uses the clamped value; clip fractions
//     use strict comparisons; gradients follow torch autograd, including the ½/½ split at ties of
//     max/min (inside the clip band) and zero gradient where a clamp is active.
//  10. k3 (low_var_kl) clamps the log-ratio to ±20 and the value to ±10, with zero gradient
//     where either clamp is active. compute_rewards (KLInReward) and kl_penalty are unmasked.
//  11. GSPO always aggregates with seq-mean-token-mean, clamps the log-ratio at 10, its ratio's
//     gradient is straight-through (per token, with the sequence ratio's value), and its
//     pg_clipfrac_lower is 0; its ppo_kl is unclamped.
//
// # Options that deviate from verl
//
//   - ReinforcePlusPlus defaults to ReturnsOverAgentTokens (the paper's advantage mask): the
//     return flows across tool responses, rewards at masked positions are dropped and returns
//     are 0 there. ReturnsResetAtMask is verl's behaviour.
//   - ParseKLEstimator rejects "full" and the straight-through "+" names, as verl b178a3cd does
//     (it advertises the "+" names but raises); no straight-through KL is offered.
//   - Package rl does not place rewards: its estimators take the (B, L) token-level rewards
//     mdp.Flatten laid out, each process reward on the token closing its tool call and the
//     outcome on the last agent token, a reward whose token was cut moved to the last agent
//     token kept. A row whose reward has no agent token at all stops the step
//     (trainer.FlattenResults), where every estimator would silently score it 0.
//   - MaskedVar/MaskedWhiten and the estimators built on them return errors where verl raises.
package rl
