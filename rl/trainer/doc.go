// Package trainer is the RL step of Agent-R1 (arXiv 2511.14460, on verl): PPO, GRPO,
// Dr.GRPO, GRPO pass@k, REINFORCE++, REINFORCE++-baseline, RLOO, ReMax, OPO, GPG or GSPO steps
// of one policy (Algorithm), all on the same masks. It knows nothing of worlds, tokenizers or evaluation: it takes a policy, token
// ids and Problems whose episodes score themselves (package pipeline builds those around it).
//
// Read step.go first (Trainer.Step, the order below), then update.go (the mini-batch loss and
// its gradient), batchview.go (which model columns hold which response token) and config.go
// (every setting, with the reason for its default).
//
// One RL step (Trainer.Step), in order; the numbers are the stops of docs/TOUR.md and the
// numbered comments in Step:
//
//  1. rollout: Prompts x N multi-turn trajectories (package rl/rollout), each an
//     mdp.Trajectory; ReMax adds one greedy rollout per prompt as its baseline;
//  2. rewards: the environment pays each tool call's process reward as the rollout runs the
//     call, and the outcome reward when the episode ends; the trajectory records both;
//  3. trajectories and masks (FlattenResults, masks): each trajectory flattened into a row
//     (package mdp) and the rows collated, prompts left-padded, responses right-padded; the
//     action mask (loss mask) on agent tokens, the advantage mask, token-level rewards;
//  4. old log-probs (oldLogProbs): by default the ones the rollout sampled with (the tempered
//     policy's own); recomputed by a forward pass of the policy every CheckOldEvery steps,
//     and at every step when a top-k/top-p filter or NoLossMask makes the sampled ones
//     differ, and then compared with the sampled ones (the logp_diff_max metric catches token
//     drift between rollout and training);
//  5. reference, critic and token rewards (refLogProbs, criticValues, tokenRewards): the
//     reference log-probs from a frozen copy of the initial policy when the KL term is on;
//     PPO's critic values, read at the state before each response token as verl does; the
//     token rewards, minus β·kl on agent tokens when the KL is in the reward (kl by
//     KLRewardEstimator, k1 = old − ref by default);
//  6. advantages by the chosen estimator (advantages; package rl);
//  7. over the advantage mask: an estimator's backward recursion (GAE, REINFORCE++) runs over
//     the agent tokens only, the tool responses skipped;
//  8. the update (update.go): Epochs passes of MiniBatches mini-batches of similar lengths
//     (the rows sorted by prompt + response length and cut into MiniBatches pieces; only ties
//     and the pieces' order are shuffled, a deviation from verl that DESIGN.md explains;
//     MiniBatchOrder "rows" cuts them in row order, as verl),
//     each taking one optimiser step; PPO's critic takes the clipped value loss on the same
//     mini-batch. During the critic warm-up only the critic learns;
//  9. each mini-batch's loss (policyMiniBatch, miniBatchLoss): PPO's clipped loss (or
//     GSPO's, or GPG's) with the chosen aggregation, minus the entropy bonus, plus β·KL loss
//     when the KL is a loss term, and its gradients dL/dlogp (and dL/dH with an entropy bonus);
//  10. the model's backward pass takes dL/dlogp and dL/dH to every weight's gradient
//     (stepPolicy);
//  11. the gradient norm is clipped and AdamW steps, with linear warm-up and cosine (or
//     linear) decay.
//
// TraceStep (trace.go) runs the same step and returns what it computed for every response
// token, from the masks to the dL/dlogp handed to the backward pass; `agentr1 explain`
// prints it.
//
// Ablations (docs/PAPER.md §6): NoLossMask trains on observation tokens too; NoAdvantageMask
// computes advantages over every response position, as Search-R1 does.
//
// The trainer's state (policy, reference, critic, both optimisers, the step) is saved as a
// single checkpoint file written atomically with a SHA-256 checksum; every random choice
// derives from (seed, step), so the same seed gives the same run, resumed or not, on any number
// of workers (the kernel set and the model's shard count, model.SetShards, decide the bits).
package trainer
