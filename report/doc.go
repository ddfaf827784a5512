// Package report renders a training run as one self-contained HTML page: the page `agentr1 view
// RUN` writes and the report.html that `agentr1 train` leaves in its run directory.
//
// A run directory holds up to four files, each optional:
//
//	config.json    one JSON object: every setting the run used (shown as a settings table)
//	metrics.jsonl  one JSON object per step with numeric fields (step, reward_mean, em,
//	               approx_kl, entropy, response_length, ...; unknown fields are plotted too,
//	               nulls leave a gap) and an optional string "phase" ("sft", "critic-warmup",
//	               "rl") that gives each phase its own set of charts
//	samples.jsonl  one Sample per line: a trajectory token by token with its masks, advantages
//	               and rewards (written by WriteSamples)
//	eval.json      {"rl_steps": 40, "starting_policy": "SFT base", "kernels": "avx2", "sets": {"heldout":
//	               {"before_rl": {...}, "after_rl": {...}, "baselines": {"naive_rag": {...},
//	               ...}}, "unseen": {...}}, "during_rl": [...]}: the headline table (each set
//	               before and after RL, the gain, the baselines), EM by question type and EM
//	               during RL. The earlier layout ("sets" keyed "<phase>/<set>") is read too;
//	               any other object is shown as comparison tables.
//
// Steps count from 1 in every file: step s is the s-th update (its samples were drawn by the
// policy after s−1 updates), and an evaluation at step s saw the policy after s updates (0: the
// starting policy).
//
// The page needs no network: its CSS, its charts (inline SVG) and its few lines of JavaScript
// (the display toggles) are inside it. Everything the agent or the environment wrote is text
// from outside and is escaped by html/template.
//
// What the page is for: seeing the paper's two masks (Agent-R1 section 2, docs/PAPER.md section 2)
// on real trajectories. Each token carries its role (prompt, agent, observation); a solid
// underline marks ActionMask = 1 (the policy loss, entropy and KL see the token); the
// background is a diverging heat map of the advantage wherever AdvantageMask = 1; a badge
// marks every token that carries a reward.
package report
