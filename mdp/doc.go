// Package mdp holds the paper's extended MDP on token ids (Agent-R1 section 2, docs/PAPER.md
// section 1): a Trajectory is the prompt followed by turns, each turn the agent's action
// tokens (exactly as sampled, with their log-probs) and the environment's observation tokens;
// process rewards attach to the token that closes a tool call, the outcome reward to the
// trajectory.
//
// Flatten turns a trajectory into a training Row: the token sequence with its ActionMask (1
// exactly on agent tokens), AdvantageMask and token-level rewards, placed so that no reward
// ever sits on a masked position and none is lost when a trajectory is cut. Collate stacks
// rows into a Batch in verl's layout: prompts left-padded to a common width P, responses (all
// that follows the prompt: actions and observations) right-padded to a common width L, as flat
// (B, P+L) slices for the model and (B, L) slices for the RL algorithms.
//
// A Trajectory is the one record of what the agent did: the rollout (rl/rollout) writes it as
// it generates, the trainer flattens that same value for the loss, and nothing converts it on
// the way. The package knows nothing of text: the rollout tokenises observations, never
// actions (token-in, token-out), and hands the ids here.
package mdp
