// Package trainer is the RL step of Agent-R1 (arXiv 2511.14460, on verl): PPO, GRPO,
// Dr.GRPO, GRPO pass@k, REINFORCE++, REINFORCE++-baseline, RLOO, ReMax, OPO, GPG or GSPO steps
// of one policy (Algorithm), all on the same masks. It knows nothing of worlds, tokenizers or evaluation: it takes a policy, token
// ids and Problems whose episodes score themselves (package pipeline builds those around it).
//
// Read step.go first (Trainer.Step, the order below), then update.go (the mini-batch loss and
// its gradient), batchview.go (which model columns hold which response token) and config.go
// (every setting, with the reason for its default).
//
// One RL step (Trainer.Step), in order:
//
//  1. rollout: Prompts x N multi-turn trajectories (package rl/rollout), each an
//     mdp.Trajectory; ReMax adds one greedy rollout per prompt as its baseline;
//  2. flatten and collate the trajectories (package mdp, trajectory.go): prompts left-padded,
//     responses right-padded, the action mask (loss mask) on agent tokens, the advantage
//     mask, token-level rewards;
//  3. old log-probs: by default the ones the rollout sampled with (the tempered policy's own);
//     recomputed by a forward pass of the policy every CheckOldEvery steps, and at every step
//     when a top-k/top-p filter or NoLossMask makes the sampled ones differ, and then
//     compared with the sampled ones (the logp_diff_max metric catches token drift between
//     rollout and training);
//  4. reference log-probs from a frozen copy of the initial policy, when the KL term is on;
//  5. critic values (PPO), read at the state before each response token as verl does;
//  6. token rewards, minus β·(old − ref) on agent tokens when the KL is in the reward;
//  7. advantages by the chosen estimator over the advantage mask (package rl);
//  8. Epochs passes of MiniBatches mini-batches of similar lengths (the rows sorted by prompt +
//     response length and cut into MiniBatches pieces; only ties and the pieces' order are
//     shuffled, a deviation from verl that DESIGN.md explains): PPO clipped loss with the chosen
//     aggregation, minus the entropy bonus, plus β·KL loss when the KL is a loss term;
//     dL/dlogp and dL/dH go through the model's backward pass, the gradient norm is clipped and
//     AdamW steps with linear warm-up and cosine (or linear) decay; PPO's critic takes the
//     clipped value loss on the same mini-batch. During the critic warm-up only the critic
//     learns.
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
// derives from (seed, step), so the same seed and worker count give the same run, resumed or
// not.
package trainer
