// Package experiment runs the paper's main table and ablations in miniature (Agent-R1, arXiv
// 2511.14460, Table 2 and §4.3) on the generated world: for each seed, one SFT warm start
// shared by every method, the baselines evaluated with that SFT base (Base Tool Call: the
// model as is with its search tool; Naive RAG: retrieve once with the question, answer in one
// turn), then one RL run per algorithm and ablation, each starting from the SFT base.
//
// A Plan lists the seeds and methods and holds every setting; Run works through its units
// (one SFT per seed, one evaluation or RL run per method and seed) in a run directory and can
// be interrupted and run again: a finished unit (its result.json written) is not redone, an
// unfinished RL run continues from its latest checkpoint, an unfinished SFT from its SFT
// checkpoint. Since every random choice derives from the seed and the step, a resumed
// experiment gives the same figures as an uninterrupted one. After every unit the tables are
// rewritten: results.json (per method, per seed, the evaluation figures) and results.md (mean
// ± std over seeds in the paper's layout; when the RL runs also evaluate during training,
// Config.EvalEvery, a second table of those evaluations, step by step).
//
// Units can also run one at a time in separate processes, on one host or on several sharing
// the run directory (a network file system): RunUnit runs the unit of one ID ("seed-1/sft",
// "seed-1/grpo"; Plan.Units lists them with the SFT bases first). A process holds a claim on
// the unit it runs (claim.go: created exclusively, kept alive by a heartbeat, taken over when
// stale), a unit waits for the SFT base it starts from or fails naming it, and every process
// merges the tables from all the result.json files after its unit, so none is lost.
//
// Layout of the run directory:
//
//	plan.json                       the plan (request and resolved settings)
//	results.json, results.md        the tables so far
//	claims/seed-N~<method>.claim    the claim of a unit being run (seed-N~sft: its SFT), and who holds it;
//	                                after a take-over, .claim.2, .claim.3 and so on
//	seed-N/sft-base/                the SFT base of seed N (a Hugging Face folder with its tokenizer)
//	seed-N/checkpoints/             its SFT checkpoint while SFT runs
//	seed-N/metrics.jsonl            its SFT step records
//	seed-N/<method>/result.json     a finished unit's figures
//	seed-N/<method>/checkpoints/    an RL run's checkpoints (once finished, only the latest is kept)
//	seed-N/<method>/metrics.jsonl   its RL step records
//	seed-N/<method>/evals.jsonl     its evaluations, during training and at the end
package experiment
