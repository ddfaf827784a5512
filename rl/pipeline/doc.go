// Package pipeline is the whole agentr1 run around the RL step of package trainer: it builds
// a generated world (env/world), trains a BPE tokenizer on its text, indexes its passages for
// BM25 search, makes the scripted agent's noisy demonstrations (from Config.Worlds worlds),
// warm-starts the policy on them with SFT, trains it with trainer.Trainer's RL steps, and
// evaluates it greedily beside the paper's baselines (Naive RAG, closed book), logging one
// record per step through a Logger.
//
// Read run.go first (Run, RunFrom and the RL loop), then setup.go (Prepare: the worlds, the
// data splits, the demonstrations), sft.go (the warm start), eval.go (Evaluate) and config.go
// (Config, every setting with the reason for its default).
//
// The warm start trains the agent tokens at weight 1 and, with SFTConfig.ContextWeight, the
// tool responses at that weight: a policy trained from scratch must first model the passages
// it is to read. SFT checkpoints, like the trainer's, are single files written atomically with
// a SHA-256 checksum, and an interrupted warm start resumes bit for bit. PrepareData is
// Prepare for real questions (HotpotQA and others) and a pretrained policy.
package pipeline
