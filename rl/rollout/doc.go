// Package rollout generates multi-turn agent trajectories for many environments at once
// (Agent-R1 section 3.2, "multi-turn rollout"): every row of a batch (prompts x n samples, the
// GRPO group) is prefilled into one KV-cache decoder, all rows still generating advance by one
// token in a single batched call, and a row that closes a tool call (`</tool_call>`) or its turn
// (`<|im_end|>`) hands its turn to its environment. Environment steps of all rows that stopped
// run concurrently; each observation is tokenised and appended to that row's KV cache, so the
// prefix is never recomputed, and generation continues.
//
// Token-in, token-out: the tokens the policy sampled and their sampled log-probabilities go into
// the trajectory untouched; only observation text is tokenised. Turn text is decoded for the
// environment to parse, never re-encoded for training.
//
// Limits: turns per episode, tokens per turn and total length (prompt + response). A row that
// hits the total length or the turn limit in the middle of an exchange is flagged Truncated and
// still receives its outcome reward from the environment.
//
// Determinism: every row samples from its own random stream derived from (seed, row), so the
// same seed and worker count reproduce the same trajectories.
package rollout
