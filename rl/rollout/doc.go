// Package rollout generates multi-turn agent trajectories for many environments at once
// (Agent-R1 section 3.2, "multi-turn rollout"): every row of a batch (prompts x n samples, the
// GRPO group) is prefilled into one KV-cache decoder, all rows still generating advance by one
// token in a single batched call, and a row that closes a tool call (`</tool_call>`) or its turn
// (`<|im_end|>`) hands its turn to its environment. Environment steps of all rows that stopped
// run concurrently; each observation is tokenised and appended to that row's KV cache, so the
// prefix is never recomputed (the observations of all those rows in one call, which
// model.Decoder spreads over the cores), and generation continues.
//
// Each row's result is the paper's trajectory itself (an mdp.Trajectory: turns of action and
// observation tokens, tool calls with their process rewards, the outcome reward), the one form
// of "what the agent did" from the rollout to the loss; the Result around it adds what only the
// rollout knows (the row's group, the limits that cut it, the environment's statistics).
//
// Token-in, token-out: the tokens the policy sampled and their sampled log-probabilities go into
// the trajectory untouched; only observation text is tokenised. Turn text is decoded for the
// environment to parse, never re-encoded for training.
//
// Limits (Config): turns per episode, tokens per turn, total length (prompt + response) and
// tokens per observation. A row that hits the total length or the turn limit in the middle of
// an exchange is flagged Truncated (CutMaxLength, CutMaxTurns, CutTurnTokens say which) and still
// receives its outcome reward from the environment; its trajectory stays whole (every token
// fed to the decoder is in a turn, agent tokens carry their log-probs). An observation over
// MaxObsTokens is cut in its middle: the agent reads its head, "...[truncated N tokens]" and
// its closing tail, never a silently shortened text. What cannot fit at all is refused before
// generation with an error naming the limit: a prompt of MaxLen tokens or more, MaxLen beyond
// the decoder's capacity (the model's positions), more rows than the decoder holds.
//
// Determinism: every row samples from its own random stream derived from (seed, row), so the
// same seed reproduces the same trajectories on any number of workers (the kernel set and the
// model's shard count, model.SetShards, decide the logits' bits).
package rollout
