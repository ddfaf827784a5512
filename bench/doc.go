// Package bench holds agentr1's end-to-end benchmarks: batched multi-turn rollout throughput
// (BenchmarkRollout, tokens/s), one whole RL step (BenchmarkRLStep: rollout, old and
// reference log-probs, advantages, PPO update) and one step of the SFT warm start
// (BenchmarkSFTStep), on the default ~1M-parameter policy shape.
//
// The environment is synthetic so the benchmarks measure the model and the trainer, not
// retrieval: every turn but the last is answered with a fixed observation, and the policy is
// randomly initialised, so turns run to the per-turn token limit and every iteration does the
// same amount of work. Run with
//
//	go test ./bench -run '^$' -bench . -benchtime 3x
package bench
